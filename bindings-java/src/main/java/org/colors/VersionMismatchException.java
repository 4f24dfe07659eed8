package org.colors;

/**
 * This binding and the colors server were built from different colors versions (different
 * protocol or heap layout).
 */
public class VersionMismatchException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public VersionMismatchException(String message) {
    super(message);
  }
}
