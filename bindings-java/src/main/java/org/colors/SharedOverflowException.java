package org.colors;

/**
 * A number does not fit its target: a shared integer (64-bit) read as a narrower Java type
 * ({@code int}, {@code short}, {@code byte}, {@code char}), a shared float read as a {@code float}
 * out of its range, or an integer that a {@code double} cannot represent exactly. Values are never
 * truncated.
 */
public class SharedOverflowException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public SharedOverflowException(String message) {
    super(message);
  }
}
