package org.colors;

/**
 * Implemented by the agent on mapped ({@link Shared}) classes: the binding of an instance to a
 * shared object. Not meant to be implemented or called by hand.
 */
public interface SharedInstance {
  /**
   * The shared object this instance is bound to, or null for a private instance.
   *
   * @return the view of the shared object, or null
   */
  SharedObject $colors$view();

  /**
   * Binds this instance to a shared object (right after the instance is made; again with address
   * -1 at detach, when the fast path must no longer touch the segment).
   *
   * @param view the view of the shared object
   * @param address the object's address for the field fast path, or -1 (JNI path only)
   */
  void $colors$bind(SharedObject view, long address);

  /**
   * The address of the bound shared object for the field fast path: 0 for a private instance, -1
   * when bound without the fast path (e.g. after detach).
   *
   * @return the address, 0 or -1
   */
  long $colors$address();

  /** Drops what the instance's read cache holds (the fields the agent adds per reference field). */
  void $colors$forget();
}
