package org.colors;

/**
 * A missing key or a missing field of a shared object.
 */
public class SharedKeyException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public SharedKeyException(String message) {
    super(message);
  }
}
