package org.colors;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a class whose instances can live in shared memory transparently, with the colors agent
 * ({@code -javaagent:colors-agent.jar}): the agent rewrites every read and write of the class's
 * instance fields, in any class, into a check plus a shared read/write when the instance is bound
 * to a shared object; {@link SharedMemory#allocate(Class)} returns a bound instance; shared
 * objects of the class's shared class read from containers, repositories and channels appear as
 * instances of it. Subclasses of a marked class are mapped too (each to its own shared class).
 * Without the agent the annotation has no effect beyond naming the shared class.
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.TYPE)
public @interface Shared {
  /**
   * The shared class name; empty (the default) means the fully qualified Java name.
   *
   * @return the shared class name
   */
  String name() default "";
}
