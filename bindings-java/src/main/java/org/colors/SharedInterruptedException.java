package org.colors;

/**
 * A blocking call (channel send or receive, monitor lock or await, collect) was interrupted by
 * {@link Thread#interrupt()}. As with {@link InterruptedException}, the thread's interrupt status is
 * cleared when this is thrown; a monitor await rethrows it with the monitor held again.
 */
public class SharedInterruptedException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public SharedInterruptedException(String message) {
    super(message);
  }
}
