package org.colors;

/**
 * A value of the wrong type for shared memory or for the target: for example a private
 * {@code ArrayList} stored into a shared container (call {@link SharedMemory#copyToSharedMemory(Object)}
 * first), a value of the wrong shared type for a typed field, or a typed read of a value of another
 * shared type.
 */
public class TypeMismatchException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public TypeMismatchException(String message) {
    super(message);
  }
}
