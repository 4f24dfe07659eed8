package org.colors;

import java.time.Duration;

/**
 * The held monitor of a shared object or repository, from {@link SharedMemory#lock(Object)}: a
 * stock JVM's {@code synchronized}/{@code wait}/{@code notifyAll} cannot reach shared monitors,
 * so they are used through this class:
 *
 * <pre>{@code
 * try (SharedMonitor m = SharedMemory.lock(box)) {
 *   while (box.get("ready") == null) m.await();
 *   box.put("taken", true);
 *   m.signalAll();
 * }
 * }</pre>
 *
 * <p>Semantics (as Java monitors): re-entrant per thread (each {@code lock} needs its own
 * {@link #close()}); {@link #await()} releases the monitor completely while it waits and holds it
 * again when it returns or throws; spurious wake-ups are possible, so wait in a loop; notification
 * is always notify-all ({@link #signalAll()}). Monitors are robust: if a process dies holding one,
 * the next {@code lock} throws {@link OwnerDiedException} once and the monitor works again.
 * Waits honour {@link Thread#interrupt()} ({@link SharedInterruptedException}, interrupt status
 * cleared). A SharedMonitor belongs to the thread that locked it.
 *
 * <p>Limitation: the owner of a shared monitor is the kernel thread, so it must be used from
 * platform threads (not virtual threads, which can move between carrier threads).
 */
public final class SharedMonitor implements AutoCloseable {
  private final Object target;  // keeps the shared object reachable, hence rooted, while locked
  private final long address;
  private boolean closed;

  SharedMonitor(Object target, long address) {
    this.target = target;
    this.address = address;
  }

  /**
   * The shared object or repository whose monitor this is.
   *
   * @return the locked object
   */
  public Object target() {
    return target;
  }

  private void checkOpen() {
    if (closed) throw new NotOwnerException("this SharedMonitor was closed (unlocked) already");
  }

  /**
   * Waits until another thread or process calls {@link #signalAll()} on the same object (or a
   * spurious wake-up), releasing the monitor meanwhile.
   *
   * @throws SharedInterruptedException if the thread is interrupted while waiting (the monitor is
   *     held again)
   * @throws OwnerDiedException if a process died holding the monitor while this thread waited (the
   *     monitor is held again)
   */
  public void await() {
    checkOpen();
    Native.monitorWait(address, -1);
  }

  /**
   * Waits at most {@code timeoutMillis} for a {@link #signalAll()}, releasing the monitor
   * meanwhile.
   *
   * @param timeoutMillis the longest wait in milliseconds
   * @return false if the timeout elapsed without a notification
   * @throws SharedInterruptedException if the thread is interrupted while waiting
   */
  public boolean await(long timeoutMillis) {
    long ms = SharedMemory.checkTimeout(timeoutMillis);
    checkOpen();
    return Native.monitorWait(address, ms);
  }

  /**
   * Waits at most {@code timeout} for a {@link #signalAll()}, releasing the monitor meanwhile.
   *
   * @param timeout the longest wait
   * @return false if the timeout elapsed without a notification
   * @throws SharedInterruptedException if the thread is interrupted while waiting
   */
  public boolean await(Duration timeout) {
    long ms = SharedMemory.millis(timeout);
    checkOpen();
    return Native.monitorWait(address, ms);
  }

  /**
   * Wakes every thread, in any process, waiting on this object's monitor.
   *
   * @throws NotOwnerException if this thread does not hold the monitor
   */
  public void signalAll() {
    checkOpen();
    Native.monitorNotifyAll(address);
  }

  /**
   * Whether the current thread holds this monitor.
   *
   * @return true while locked by the current thread
   */
  public boolean isHeldByCurrentThread() {
    return !closed && Native.monitorHeld(address);
  }

  /**
   * Releases one level of the monitor. Closing twice does nothing.
   *
   * @throws NotOwnerException if called by a thread that does not hold the monitor
   */
  @Override
  public void close() {
    if (closed) return;
    Native.monitorExit(address);
    closed = true;
  }

  @Override
  public String toString() {
    return "SharedMonitor[" + target + (closed ? ", closed]" : "]");
  }
}
