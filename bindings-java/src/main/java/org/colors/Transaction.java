package org.colors;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * An atomic, isolated group of reads and writes of shared objects, across the threads, processes
 * and languages attached to one heap (libshared's software transactional memory,
 * {@code libshared/src/transaction.hpp}; the semantics are in bindings-java/README.md,
 * "Transactions").
 *
 * <pre>{@code
 * try (Transaction tx = SharedMemory.beginTransaction()) {
 *   a.set("balance", a.getLong("balance") - 10);
 *   b.set("balance", b.getLong("balance") + 10);
 *   tx.commit();                       // all or nothing
 * }                                    // close() without commit() rolls back
 * }</pre>
 *
 * <p>Inside a transaction, field writes (of {@link SharedObject} views and of instances of mapped
 * classes), container operations ({@link SharedList}, {@link SharedMap}, {@link SharedSet},
 * {@link SharedSortedMap}), {@link ObjectRepository#set} and allocations are published at commit
 * all at once, or never; reads see a consistent state, serializable with every other transaction.
 * A process that dies inside one (even by {@code kill -9}) is rolled back by the server.
 *
 * <p>A transaction belongs to the thread that began it (libshared's transaction is per native
 * thread, and a JNI call runs on the calling Java thread's): using it from another thread throws
 * {@link InvalidArgumentException}. Nesting is flat: beginning a transaction inside one joins it
 * (its depth grows by one); an inner {@link #commit()} only ends its level, an inner rollback (or
 * close without commit) dooms the whole transaction, whose outermost commit then throws
 * {@link TransactionAbortedException}.
 *
 * <p>Errors: {@link TransactionConflictException} when another transaction holds or changed what
 * this one needs (the transaction is then doomed; {@link SharedMemory#atomically} retries it),
 * {@link TransactionAbortedException} on a timeout, an undo log beyond its limit, a doomed
 * transaction, or one whose attachment ended ({@link SharedMemory#detach()} inside it), and
 * {@link InvalidArgumentException} for channel operations, remote calls, schema evolution and
 * repository deletion inside a transaction (they cannot be rolled back) and for misuse (commit
 * twice, another thread, an inner transaction still open).
 */
public final class Transaction implements AutoCloseable {
  /**
   * How many threads of this JVM have a transaction open: the field fast path reads only this int
   * while it is 0, and looks at its thread's depth otherwise.
   *
   * <p>Invariant: a thread counts here while its {@link #DEPTH} is positive; both change only on
   * that thread (begin, commit, rollback), by an atomic add ({@link #OPEN_ADD}), so its own reads
   * see its own changes in program order. The fast path reads it plainly (no volatile): a value
   * another thread's change made stale only decides whether the thread also reads its own depth,
   * which is exact for it either way (a stale 0 while another thread runs a transaction is right
   * for this thread, whose own count is not in it; a stale non-zero costs a ThreadLocal read).
   */
  private static int threadsOpen;

  private static final VarHandle OPEN_ADD;

  static {
    try {
      OPEN_ADD = MethodHandles.lookup().findStaticVarHandle(Transaction.class, "threadsOpen", int.class);
    } catch (ReflectiveOperationException e) {
      throw new ExceptionInInitializerError(e);
    }
  }
  /** This thread's transaction depth as libshared reports it after each begin/commit/rollback. */
  private static final ThreadLocal<int[]> DEPTH = ThreadLocal.withInitial(() -> new int[1]);

  private final Thread owner;
  private final int depth;
  private boolean open = true;

  private Transaction(Thread owner, int depth) {
    this.owner = owner;
    this.depth = depth;
  }

  /** Whether the calling thread runs a transaction (the fast path's check: one plain int read while none runs). */
  static boolean inThisThread() {
    return threadsOpen != 0 && DEPTH.get()[0] > 0;
  }

  /** Mirrors libshared's depth of this thread's transaction (after a begin, commit or rollback). */
  private static void setDepth(int n) {
    int[] d = DEPTH.get();
    int old = d[0];
    d[0] = n;
    if (old == 0 && n > 0) {
      OPEN_ADD.getAndAdd(1);
    } else if (old > 0 && n == 0) {
      OPEN_ADD.getAndAdd(-1);
    }
  }

  private static void syncDepth() {
    setDepth(Native.txDepth());
  }

  /** Begins or joins this thread's transaction ({@code timeoutNs} 0: no timeout). */
  static Transaction begin(long timeoutNs) {
    SharedMemory.ensureAttached();
    int d = Native.txBegin(timeoutNs);
    setDepth(d);
    return new Transaction(Thread.currentThread(), d);
  }

  /** Makes the transaction that just began take what it reads as it takes what it writes (atomically's escalation). */
  static void escalate() {
    Native.txEscalate();
  }

  /** Sleeps before retry {@code attempt} (1-based): libshared's randomised exponential backoff. */
  static void backoff(int attempt) {
    Native.txBackoff(attempt);
  }

  private void checkUsable(String what) {
    if (Thread.currentThread() != owner) {
      throw new InvalidArgumentException("cannot " + what + " a transaction from a thread other than the one that began it ("
          + owner.getName() + "): a transaction belongs to its thread");
    }
    if (!open) throw new InvalidArgumentException("cannot " + what + ": this transaction already ended");
    int now = Native.txDepth();
    if (now > depth) {
      throw new InvalidArgumentException("cannot " + what + " this transaction: an inner transaction is still open");
    }
    if (now < depth) {
      open = false;
      throw new InvalidArgumentException("cannot " + what + ": this transaction already ended (an enclosing one ended first)");
    }
  }

  /**
   * Commits the transaction (the outermost level), or ends this level of a nested one (its writes
   * are then committed with the outermost one).
   *
   * @throws TransactionConflictException if validation failed (another transaction changed what
   *     this one read); the transaction was rolled back
   * @throws TransactionAbortedException if the transaction was doomed (an earlier conflict, a
   *     timeout, an inner rollback, its attachment ended); it was rolled back
   * @throws InvalidArgumentException if this transaction already ended, belongs to another thread,
   *     or an inner transaction is still open
   */
  public void commit() {
    checkUsable("commit");
    open = false;
    try {
      Native.txCommit();
    } finally {
      syncDepth();
    }
  }

  /**
   * Rolls the transaction back (the outermost level): every write it made is undone. For an inner
   * level: ends it and dooms the whole transaction (its outermost commit then throws
   * {@link TransactionAbortedException}).
   *
   * @throws InvalidArgumentException if this transaction already ended, belongs to another thread,
   *     or an inner transaction is still open
   */
  public void rollback() {
    checkUsable("roll back");
    open = false;
    try {
      Native.txRollback();
    } finally {
      syncDepth();
    }
  }

  /**
   * Rolls back if neither {@link #commit()} nor {@link #rollback()} ended this transaction (inner
   * levels left open inside it are ended first, which dooms the transaction); does nothing
   * otherwise.
   *
   * @throws InvalidArgumentException if called from another thread than the one that began it
   *     while the transaction is still open
   */
  @Override
  public void close() {
    if (!open) return;
    if (Thread.currentThread() != owner) {
      throw new InvalidArgumentException("cannot close a transaction from a thread other than the one that began it ("
          + owner.getName() + "): a transaction belongs to its thread");
    }
    open = false;
    try {
      int now = Native.txDepth();
      while (now > depth) now = Native.txRollback();  // inner levels never closed
      if (now == depth) Native.txRollback();
    } finally {
      syncDepth();
    }
  }

  /**
   * Whether this transaction (this level of it) is still open: not committed, rolled back or closed.
   *
   * @return true until commit, rollback or close
   */
  public boolean isActive() {
    return open;
  }

  /**
   * The nesting depth of this level: 1 for an outermost transaction, 2 for one begun inside it, ...
   *
   * @return the depth
   */
  public int depth() {
    return depth;
  }

  /** Whether the calling thread runs a transaction (SharedMemory.inTransaction). */
  static boolean active() {
    return DEPTH.get()[0] > 0;
  }
}
