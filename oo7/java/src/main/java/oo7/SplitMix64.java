package oo7;

/** The SPEC's generator: SplitMix64 over wrapping 64-bit arithmetic, {@code rand(n) = next() mod n} (unsigned). */
public final class SplitMix64 {
  private long state;

  public SplitMix64(long seed) {
    this.state = seed;
  }

  public long next() {
    state += 0x9E3779B97F4A7C15L;
    long z = state;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  /** {@code next() mod n}, unsigned; n > 0. */
  public long rand(long n) {
    return Long.remainderUnsigned(next(), n);
  }

  /** {@code "type%03d" % rand(10)}. */
  public String type() {
    return String.format("type%03d", rand(10));
  }

  /** {@code 1000 + rand(1000)}. */
  public long date() {
    return 1000 + rand(1000);
  }
}
