package org.colors.rpc;

import org.colors.SharedMemoryException;

/**
 * Thrown when no live process serves the endpoint, or its server died or stopped during the call (colors::UnavailableError). Raised promptly (within one wait slice, about 10 ms, of the server's death), never by hanging.
 */
public class UnavailableException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened
   */
  public UnavailableException(String message) {
    super(message);
  }
}
