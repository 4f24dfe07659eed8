package org.colors.rpc;

import org.colors.SharedMemoryException;

/**
 * Thrown when a remote call did not complete within its timeout (colors::TimeoutError). The call is abandoned: the server may still run it, its result is dropped.
 */
public class RpcTimeoutException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened
   */
  public RpcTimeoutException(String message) {
    super(message);
  }
}
