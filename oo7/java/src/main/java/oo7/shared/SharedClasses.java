package oo7.shared;

/**
 * Initializes the seven shared classes. A class whose {@code @Shared} name differs from its Java
 * name registers its name with the binding when it is initialized; objects read before that (a
 * database another process published) would come back as SharedObject views, not as these classes.
 */
public final class SharedClasses {
  private SharedClasses() {}

  public static void register() {
    Class<?>[] all = {Module.class, ComplexAssembly.class, BaseAssembly.class, CompositePart.class, AtomicPart.class,
        Connection.class, Database.class};
    for (Class<?> c : all) {
      try {
        Class.forName(c.getName(), true, c.getClassLoader());
      } catch (ClassNotFoundException e) {
        throw new IllegalStateException(e);  // cannot happen: the class is loaded
      }
    }
  }
}
