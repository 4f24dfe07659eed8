package oo7;

import java.util.List;

/**
 * How {@link Builder} makes one model's objects: the draw order is the builder's, the objects and
 * lists (shared or private) the factory's. Each call that creates an object also appends it where
 * the SPEC says (a part to its composite's {@code parts}, a connection to its source's {@code to}
 * and its target's {@code from_}, an assembly to its super-assembly's {@code subAssemblies}).
 */
public interface Factory {
  Schema.Module module(long id, String type, long buildDate);

  Schema.CompositePart compositePart(long id, String type, long buildDate, String document);

  /** A part appended to {@code partOf.parts}. */
  Schema.AtomicPart atomicPart(long id, String type, long buildDate, long x, long y, Schema.CompositePart partOf);

  void setRootPart(Schema.CompositePart c, Schema.AtomicPart root);

  /** A connection appended to {@code from.to} and {@code to.from_}. */
  Schema.Connection connection(long id, String type, long length, Schema.AtomicPart from, Schema.AtomicPart to);

  /** An assembly appended to {@code superAssembly.subAssemblies} (null: the root). */
  Schema.ComplexAssembly complexAssembly(long id, String type, long buildDate, Schema.ComplexAssembly superAssembly);

  Schema.BaseAssembly baseAssembly(long id, String type, long buildDate, Schema.ComplexAssembly superAssembly);

  /** Appends {@code c} to {@code b.components} and {@code b} to {@code c.usedIn}. */
  void addComponent(Schema.BaseAssembly b, Schema.CompositePart c);

  void setDesignRoot(Schema.Module m, Schema.ComplexAssembly root);

  Schema.Database database(Schema.Module module, List<Schema.CompositePart> composites, List<Schema.Assembly> assemblies);
}
