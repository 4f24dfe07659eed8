package org.colors.rpc;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.colors.SharedInterruptedException;

/**
 * The future of an asynchronous call or of one call of a batch. Resolution is lazy with a waiter
 * behind it: {@link #get()}, {@link #join()} and {@link #isDone()} wait for (or check) the
 * request themselves in the calling thread (spin for the client's spin budget, then block in the
 * kernel: no CPU is burnt while blocked), and the client's waiter thread resolves outstanding
 * requests in the order they were sent, so that callbacks ({@code thenApply}, ...) run without
 * anyone calling {@code get()}. Both may wait on the same request; whoever sees the result first
 * completes the future.
 */
final class RpcFuture extends CompletableFuture<Object> {
  /** The request that resolves this future; null for a call of a batch not sent yet. */
  volatile RpcClient.Request request;

  RpcFuture(RpcClient.Request request) {
    this.request = request;
  }

  private RpcClient.Request request() {
    RpcClient.Request r = request;
    if (r == null) throw new IllegalStateException("the batch of this call was not sent yet: close() or send() it first");
    return r;
  }

  @Override
  public Object get() throws InterruptedException, ExecutionException {
    if (!super.isDone()) {
      try {
        request().resolve(-1);
      } catch (SharedInterruptedException e) {
        throw new InterruptedException(e.getMessage());
      }
    }
    return super.get();
  }

  @Override
  public Object get(long timeout, TimeUnit unit) throws InterruptedException, ExecutionException, TimeoutException {
    if (!super.isDone()) {
      try {
        if (!request().resolveWithin(unit.toMillis(timeout))) {
          throw new TimeoutException("the rpc call did not complete within " + timeout + " " + unit);
        }
      } catch (SharedInterruptedException e) {
        throw new InterruptedException(e.getMessage());
      }
    }
    return super.get(timeout, unit);
  }

  @Override
  public Object join() {
    if (!super.isDone()) request().resolve(-1);
    return super.join();
  }

  @Override
  public Object getNow(Object valueIfAbsent) {
    isDone();
    return super.getNow(valueIfAbsent);
  }

  @Override
  public boolean isDone() {
    if (super.isDone()) return true;
    RpcClient.Request r = request;
    if (r != null && r.ready()) r.resolve(-1);
    return super.isDone();
  }
}
