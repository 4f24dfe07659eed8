package org.colors;

/**
 * A process died while holding the monitor of a shared object or repository. The guarded
 * state may be half-updated; the monitor has been released and works again (thrown once).
 */
public class OwnerDiedException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what happened and what to do about it
   */
  public OwnerDiedException(String message) {
    super(message);
  }
}
