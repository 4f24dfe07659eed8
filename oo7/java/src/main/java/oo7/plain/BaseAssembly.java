package oo7.plain;

import java.util.List;
import oo7.Schema;

/** oo7.BaseAssembly, a plain Java object. */
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
