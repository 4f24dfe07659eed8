package org.colors;

/**
 * A transaction could not go on because another transaction holds, or changed, an object it
 * needs: the holder did not finish within the conflict wait ({@code COLORS_TX_CONFLICT_WAIT_MS},
 * 20 ms by default), the two transactions wait for each other (the message starts with
 * "deadlock"), or an object this transaction read was changed by a commit meanwhile. The message
 * names the holder ("held by the transaction of process P (thread T)").
 *
 * <p>The transaction is doomed: it is rolled back when it ends (its {@link Transaction#close()}),
 * and its later operations throw {@link TransactionAbortedException}.
 * {@link SharedMemory#atomically(java.util.function.Supplier)} retries it.
 */
public class TransactionConflictException extends SharedMemoryException {
  private static final long serialVersionUID = 1L;

  /**
   * Creates the exception.
   *
   * @param message what conflicted, and with whom
   */
  public TransactionConflictException(String message) {
    super(message);
  }
}
