package org.colors;

/**
 * The colors server is not running, shut down or died (start it, then attach again).
 */
public class ServerGoneException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public ServerGoneException(String message) {
    super(message);
  }
}
