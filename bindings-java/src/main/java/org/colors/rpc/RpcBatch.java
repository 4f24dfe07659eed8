package org.colors.rpc;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.colors.SharedMemory;

/**
 * Calls deferred and sent as one request when the batch is closed:
 *
 * <pre>{@code
 * CompletableFuture<Object> a, b;
 * try (RpcBatch batch = client.batch()) {
 *   a = batch.call("put", "k", 1);
 *   b = batch.call("get", "k");
 * }                                  // sent here, as one request
 * b.get();                           // 1
 * }</pre>
 *
 * <p>The server runs the calls in order on one thread, so each sees the effects of the previous
 * ones; a call that fails completes its future exceptionally with a {@link RemoteException} and
 * the following calls still run. The arguments of all calls are copied in with one
 * {@link SharedMemory#copyToSharedMemory(Object)}, so a private object passed to several calls
 * arrives as one shared object. The futures behave as those of {@link RpcClient#callAsync}. Not
 * thread-safe: one thread fills a batch.
 */
public final class RpcBatch implements AutoCloseable {
  private final RpcClient client;
  private final List<Object> calls = new ArrayList<>();
  private final List<RpcFuture> futures = new ArrayList<>();
  private boolean sent;

  RpcBatch(RpcClient client) {
    this.client = client;
  }

  /**
   * Adds a call to the batch.
   *
   * @param method the remote method's name
   * @param args its arguments (as for {@link RpcClient#call(String, Object...)})
   * @return the future of its result, completed once the batch was sent and run
   * @throws IllegalStateException if the batch was already sent
   */
  public CompletableFuture<Object> call(String method, Object... args) {
    if (sent) throw new IllegalStateException("this batch was already sent");
    calls.add(Arrays.asList(method, Arrays.asList(args == null ? new Object[] {null} : args)));
    RpcFuture f = new RpcFuture(null);
    futures.add(f);
    return f;
  }

  /**
   * The number of calls added so far.
   *
   * @return the count
   */
  public int size() {
    return calls.size();
  }

  /**
   * Sends the calls as one request (nothing for an empty batch) and returns at once; the futures
   * complete when the server has run them. Idempotent.
   *
   * @throws UnavailableException if no live process serves the endpoint (every future of the
   *     batch then completes exceptionally with it as well)
   */
  public void send() {
    if (sent) return;
    sent = true;
    if (calls.isEmpty()) return;
    RpcFuture[] fs = futures.toArray(new RpcFuture[0]);
    try {
      // One request; its arguments built natively when they are lists and scalars met once, else
      // one copyToSharedMemory over the whole batch: either way objects shared between calls stay
      // shared.
      client.sendBatch(calls.toArray(), fs);
    } catch (RuntimeException e) {
      for (RpcFuture f : fs) f.completeExceptionally(e);
      throw e;
    }
  }

  /** Sends the batch ({@link #send()}). */
  @Override
  public void close() {
    send();
  }
}
