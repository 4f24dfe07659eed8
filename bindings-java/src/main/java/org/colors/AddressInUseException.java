package org.colors;

/**
 * The fixed address range of the shared segment is already mapped in this process.
 */
public class AddressInUseException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public AddressInUseException(String message) {
    super(message);
  }
}
