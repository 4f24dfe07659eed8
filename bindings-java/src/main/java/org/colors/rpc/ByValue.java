package org.colors.rpc;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a parameter of a served method as passed by value: the argument arrives as a private deep
 * copy of the shared graph the caller sent, made in one native call (the reachable shared objects
 * are flattened natively and the private instances built in Java), instead of as shared proxies.
 *
 * <p>Allowed parameter types:
 * <ul>
 *   <li>{@code T[]}: the shared list's elements as private instances of {@code T} (or, for nested
 *       array types, nested arrays);
 *   <li>{@code List<T>}, {@code Collection<T>} or {@code ArrayList<T>} (the element type from the
 *       method's generic signature; {@code Object} when it has none): a new {@code ArrayList} of the
 *       same private elements;
 *   <li>{@code T}: the shared object as a private instance of {@code T}.
 * </ul>
 * where {@code T} is a user class, mapped {@code @Shared} classes included: the copies are
 * unbound private instances, as {@code new T()} gives under the agent, so the handler works on
 * plain Java objects (no shared-memory access per field) and returns new private objects, which
 * the reply copies into shared memory in one native call too. Conversions follow
 * {@link org.colors.SharedObject#toPrivate(Class)}: the Java class named like each shared object's
 * class if it fits, else the declared type; fields by name with checked narrowing; sharing and
 * cycles inside the argument preserved. An element that cannot be read as {@code T} fails the call
 * with {@link org.colors.TypeMismatchException}. Changes the handler makes to the copies are not
 * seen by the caller.
 *
 * <p>Without the annotation, parameters of these types receive what they did before: arrays of
 * the elements as read (instances bound to the shared objects under the agent), lists as live
 * {@link org.colors.SharedList} proxies, user objects through {@code toPrivate} (or bound
 * instances as they are).
 *
 * <pre>{@code
 * public Node[] trees(@ByValue Node[] xs) {        // xs: private Nodes, copied in one native call
 *   Node[] out = new Node[xs.length];
 *   for (int k = 0; k < xs.length; k++) out[k] = derive(xs[k]);  // plain Java objects
 *   return out;                                     // copied into shared memory in one native call
 * }
 * }</pre>
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.PARAMETER)
public @interface ByValue {}
