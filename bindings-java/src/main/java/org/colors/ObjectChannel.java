package org.colors;

import java.time.Duration;

/**
 * A named bounded blocking queue of shared values between processes: {@link #send(Object)} blocks
 * while the channel is full, {@link #receive()} while it is empty. A value in a channel stays
 * alive. {@code null} cannot be sent (it marks an empty slot).
 *
 * <p>Blocking calls honour {@link Thread#interrupt()}: they throw
 * {@link SharedInterruptedException} within about 50 ms (and clear the interrupt status, as
 * {@link InterruptedException} does). Timeouts are in milliseconds or a {@link Duration}.
 *
 * <p>Obtained from {@link SharedMemory#findOrCreateChannel(String)}; one instance per name until
 * the channel is deleted ({@link SharedMemory#deleteChannel(String)}): from then on this instance
 * throws {@link SharedKeyException}, and findOrCreateChannel gives a new one.
 */
public final class ObjectChannel {
  private final String name;
  private final long ptr;

  ObjectChannel(String name, long ptr) {
    this.name = name;
    this.ptr = ptr;
  }

  /**
   * The name (key) of this channel.
   *
   * @return the name
   */
  public String name() {
    return name;
  }

  /**
   * The capacity the channel was created with (by whichever process created it first).
   *
   * @return the number of values it holds at most
   */
  public int capacity() {
    SharedMemory.ensureAttached();
    return Native.chanCapacity(ptr);
  }

  private boolean send0(Object value, long timeoutMs) {
    int t = Codec.tag(value);
    if (t == Codec.NULL) throw new InvalidArgumentException("null cannot be sent through a channel (it marks an empty slot)");
    SharedMemory.ensureAttached();
    return Native.chanSend(ptr, t, Codec.bits(value, t), Codec.obj(value, t), timeoutMs);
  }

  /**
   * Sends a value, blocking while the channel is full.
   *
   * @param value a shared object, or a scalar, String or byte[] (copied in); not null
   * @throws SharedInterruptedException if the thread is interrupted while blocked
   */
  public void send(Object value) {
    send0(value, -1);
  }

  /**
   * Sends a value, blocking at most {@code timeoutMillis} while the channel is full.
   *
   * @param value a shared object, or a scalar, String or byte[] (copied in); not null
   * @param timeoutMillis the longest wait in milliseconds (0: do not wait)
   * @return false if the channel stayed full until the timeout
   * @throws SharedInterruptedException if the thread is interrupted while blocked
   */
  public boolean send(Object value, long timeoutMillis) {
    return send0(value, SharedMemory.checkTimeout(timeoutMillis));
  }

  /**
   * Sends a value, blocking at most {@code timeout} while the channel is full.
   *
   * @param value a shared object, or a scalar, String or byte[] (copied in); not null
   * @param timeout the longest wait
   * @return false if the channel stayed full until the timeout
   * @throws SharedInterruptedException if the thread is interrupted while blocked
   */
  public boolean send(Object value, Duration timeout) {
    return send0(value, SharedMemory.millis(timeout));
  }

  /**
   * Sends a value if there is room, without blocking.
   *
   * @param value a shared object, or a scalar, String or byte[] (copied in); not null
   * @return false if the channel is full
   */
  public boolean trySend(Object value) {
    return send0(value, 0);
  }

  /**
   * Receives a value, blocking while the channel is empty.
   *
   * @return the value (never null)
   * @throws SharedInterruptedException if the thread is interrupted while blocked
   */
  public Object receive() {
    SharedMemory.ensureAttached();
    return Native.chanReceive(ptr, -1);
  }

  /**
   * Receives a value, blocking at most {@code timeoutMillis} while the channel is empty.
   *
   * @param timeoutMillis the longest wait in milliseconds (0: do not wait)
   * @return the value, or {@code null} if nothing arrived before the timeout
   * @throws SharedInterruptedException if the thread is interrupted while blocked
   */
  public Object receive(long timeoutMillis) {
    long ms = SharedMemory.checkTimeout(timeoutMillis);
    SharedMemory.ensureAttached();
    return Native.chanReceive(ptr, ms);
  }

  /**
   * Receives a value, blocking at most {@code timeout} while the channel is empty.
   *
   * @param timeout the longest wait
   * @return the value, or {@code null} if nothing arrived before the timeout
   * @throws SharedInterruptedException if the thread is interrupted while blocked
   */
  public Object receive(Duration timeout) {
    long ms = SharedMemory.millis(timeout);
    SharedMemory.ensureAttached();
    return Native.chanReceive(ptr, ms);
  }

  /**
   * Receives a value if one is there, without blocking.
   *
   * @return the value, or {@code null} if the channel is empty
   */
  public Object tryReceive() {
    SharedMemory.ensureAttached();
    return Native.chanReceive(ptr, 0);
  }

  /**
   * Whether this handle's channel has been deleted (by any process); a deleted one throws
   * {@link SharedKeyException} from every operation.
   *
   * @return true once deleted
   */
  public boolean deleted() {
    SharedMemory.ensureAttached();
    return Native.chanDeleted(ptr);
  }

  @Override
  public String toString() {
    return "ObjectChannel[" + name + "]";
  }
}
