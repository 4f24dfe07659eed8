package org.colors;

/**
 * A transaction committed (every thread and process sees it) but the server, running with {@code
 * --durability full}, could not put it on disk (a full disk, a failed write): it is not durable
 * yet. The next successful checkpoint or durable commit covers it.
 */
public class DurabilityException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message why the commit is not durable
   */
  public DurabilityException(String message) {
    super(message);
  }
}
