package org.colors;

/**
 * The heap verifier found a broken invariant of the shared heap.
 */
public class CorruptHeapException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public CorruptHeapException(String message) {
    super(message);
  }
}
