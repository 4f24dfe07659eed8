package org.colors;

/**
 * A monitor operation ({@code await}, {@code signalAll}, unlock) by a thread that does not hold
 * the monitor.
 */
public class NotOwnerException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public NotOwnerException(String message) {
    super(message);
  }
}
