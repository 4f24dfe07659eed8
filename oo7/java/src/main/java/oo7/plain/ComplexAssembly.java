package oo7.plain;

import java.util.List;
import oo7.Schema;

/** oo7.ComplexAssembly, a plain Java object; {@code subAssemblies} holds ComplexAssembly or BaseAssembly. */
public class ComplexAssembly implements Schema.ComplexAssembly {
  public long id;
  public String type;
  public long buildDate;
  public ComplexAssembly superAssembly;
  public List<Schema.Assembly> subAssemblies;

  @Override public long id() { return id; }
  @Override public String type() { return type; }
  @Override public long buildDate() { return buildDate; }
  @Override public ComplexAssembly superAssembly() { return superAssembly; }
  @Override public List<Schema.Assembly> subAssemblies() { return subAssemblies; }
}
