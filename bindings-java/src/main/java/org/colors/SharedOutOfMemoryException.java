package org.colors;

/**
 * The shared heap (objects space) or the classes space is exhausted.
 */
public class SharedOutOfMemoryException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public SharedOutOfMemoryException(String message) {
    super(message);
  }
}
