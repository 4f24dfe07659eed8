package oo7.plain;

import oo7.Schema;

/** oo7.Module, a plain Java object (the private baseline). */
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
