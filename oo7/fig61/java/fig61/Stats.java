package fig61;

import java.util.concurrent.atomic.AtomicLong;

/**
 * What the server counts for the cost model: requests received (the thesis's X, one pair of
 * domain crossings each), calls run (its N: database accesses, or hand-batched composite calls),
 * and the nanoseconds spent running them (its R_S: from a request's arrival in the handler to its
 * result, so the transport's (un)marshaling is not in it). Atomic: the gRPC calls of one client
 * run on the executor's threads one after the other, the colors calls on the serving thread.
 */
final class Stats {
  final AtomicLong requests = new AtomicLong();
  final AtomicLong calls = new AtomicLong();
  final AtomicLong nanos = new AtomicLong();

  void request(long startNanos) {
    requests.incrementAndGet();
    nanos.addAndGet(System.nanoTime() - startNanos);
  }

  void call() {
    calls.incrementAndGet();
  }

  long[] snapshot() {
    return new long[] {requests.get(), calls.get(), nanos.get()};
  }

  void reset() {
    requests.set(0);
    calls.set(0);
    nanos.set(0);
  }
}
