package org.colors;

/**
 * A bad argument: a name too long, a string that is not valid Unicode, a capacity out of
 * range, a negative timeout, {@code null} sent through a channel.
 */
public class InvalidArgumentException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public InvalidArgumentException(String message) {
    super(message);
  }
}
