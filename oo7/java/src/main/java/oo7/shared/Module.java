package oo7.shared;

import oo7.Schema;
import org.colors.Shared;

/** oo7.Module, a shared class (bound by the colors agent: field accesses read and write the shared object). */
@Shared(name = "oo7.Module")
public class Module implements Schema.Module {
  public long id;
  public String type;
  public long buildDate;
  public ComplexAssembly designRoot;

  @Override public long id() { return id; }
  @Override public String type() { return type; }
  @Override public long buildDate() { return buildDate; }
  @Override public ComplexAssembly designRoot() { return designRoot; }
}
