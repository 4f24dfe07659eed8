package org.colors;

/**
 * The colors server refused the connection (credentials or client capacity).
 */
public class RefusedException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public RefusedException(String message) {
    super(message);
  }
}
