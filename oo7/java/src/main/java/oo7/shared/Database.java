package oo7.shared;

import java.util.List;
import oo7.Schema;
import org.colors.Shared;

/** oo7.Database, a shared class (bound by the colors agent: field accesses read and write the shared object): {@code assemblies} holds ComplexAssembly and BaseAssembly in preorder. */
@Shared(name = "oo7.Database")
public class Database implements Schema.Database {
  public Module module;
  public List<CompositePart> composites;
  public List<Schema.Assembly> assemblies;

  @Override public Module module() { return module; }
  @Override public List<CompositePart> composites() { return composites; }
  @Override public List<Schema.Assembly> assemblies() { return assemblies; }
}
