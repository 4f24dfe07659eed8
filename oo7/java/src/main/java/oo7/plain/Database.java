package oo7.plain;

import java.util.List;
import oo7.Schema;

/** oo7.Database, a plain Java object: {@code assemblies} holds ComplexAssembly and BaseAssembly in preorder. */
public class Database implements Schema.Database {
  public Module module;
  public List<CompositePart> composites;
  public List<Schema.Assembly> assemblies;

  @Override public Module module() { return module; }
  @Override public List<CompositePart> composites() { return composites; }
  @Override public List<Schema.Assembly> assemblies() { return assemblies; }
}
