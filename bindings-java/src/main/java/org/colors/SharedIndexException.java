package org.colors;

/**
 * An index out of range of a shared container (the {@link java.util.List} methods of
 * {@link SharedList} throw {@link IndexOutOfBoundsException} instead, as the {@code List} contract
 * requires).
 */
public class SharedIndexException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public SharedIndexException(String message) {
    super(message);
  }
}
