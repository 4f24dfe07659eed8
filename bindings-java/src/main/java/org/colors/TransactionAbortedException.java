package org.colors;

/**
 * A transaction was, or will be, rolled back: it ran longer than its timeout, it changed more
 * words than {@code COLORS_TX_MAX_WRITES} allows, its attachment to the heap ended
 * ({@link SharedMemory#detach()} inside it; the server rolled it back), an inner transaction of it
 * rolled back, or it was doomed by an earlier {@link TransactionConflictException}. Nothing it
 * wrote is kept. {@link SharedMemory#atomically(java.util.function.Supplier)} does not retry it.
 */
public class TransactionAbortedException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message why the transaction was rolled back
   */
  public TransactionAbortedException(String message) {
    super(message);
  }
}
