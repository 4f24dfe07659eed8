package oo7.shared;

import java.util.List;
import oo7.Schema;
import org.colors.Shared;

/** oo7.ComplexAssembly, a shared class (bound by the colors agent: field accesses read and write the shared object); {@code subAssemblies} holds ComplexAssembly or BaseAssembly. */
@Shared(name = "oo7.ComplexAssembly")
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
