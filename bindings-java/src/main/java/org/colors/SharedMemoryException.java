package org.colors;

/**
 * Base class of every error of the colors shared-memory heap (unchecked).
 *
 * <p>Every failure of the native library ({@code colors::Error} in C++) is thrown as this class or
 * one of its subclasses, one per {@code colors::ErrorCode}, carrying libshared's message, which
 * says what happened and what to do about it. Catch a subclass to handle one kind of failure, for
 * example {@link OwnerDiedException} around {@link SharedMemory#lock(Object)}.
 */
public class SharedMemoryException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates an exception with a message.
   *
   * @param message what happened and what to do about it
   */
  public SharedMemoryException(String message) {
    super(message);
  }

  /**
   * Creates an exception with a message and a cause.
   *
   * @param message what happened and what to do about it
   * @param cause the underlying exception
   */
  public SharedMemoryException(String message, Throwable cause) {
    super(message, cause);
  }
}
