package org.colors;

/**
 * Not attached to a colors server, or a shared object outlived {@link SharedMemory#detach()}
 * (get it again, e.g. from its repository, after attaching).
 */
public class NotAttachedException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public NotAttachedException(String message) {
    super(message);
  }
}
