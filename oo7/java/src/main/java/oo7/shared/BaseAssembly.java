package oo7.shared;

import java.util.List;
import oo7.Schema;
import org.colors.Shared;

/** oo7.BaseAssembly, a shared class (bound by the colors agent: field accesses read and write the shared object). */
@Shared(name = "oo7.BaseAssembly")
public class BaseAssembly implements Schema.BaseAssembly {
  public long id;
  public String type;
  public long buildDate;
  public ComplexAssembly superAssembly;
  public List<CompositePart> components;

  @Override public long id() { return id; }
  @Override public String type() { return type; }
  @Override public long buildDate() { return buildDate; }
  @Override public ComplexAssembly superAssembly() { return superAssembly; }
  @Override public List<CompositePart> components() { return components; }
}
