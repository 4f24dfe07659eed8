package org.colors;

/** Live root counts that tests can compare before and after their own reads. */
final class RootCounts {
  private RootCounts() {}

  /**
   * {@link Roots#live()} once the roots of proxies that earlier code dropped are released: drops
   * the read cache, runs the JVM's GC and waits (2 s at most) until the count holds still for
   * 50 ms. Without this the colors-release thread may release earlier tests' roots while a test
   * runs, and its count falls below the one it started with (runs saw 10 to 0 and 1623 to 803).
   */
  static long settled() {
    ReadCache.dropAll();
    System.gc();
    final long deadline = System.nanoTime() + 2_000_000_000L;
    long last = Roots.live();
    for (int still = 0; still < 5 && System.nanoTime() - deadline < 0; ) {
      try {
        Thread.sleep(10);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        break;
      }
      final long now = Roots.live();
      still = now == last ? still + 1 : 0;
      last = now;
    }
    return last;
  }
}
