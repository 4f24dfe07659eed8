package oo7;

import java.nio.charset.StandardCharsets;

/** The SPEC's FNV-1a fold over 64-bit integers and strings (UTF-8 length, then each byte). */
public final class Fold {
  private long h = 0xcbf29ce484222325L;  // 14695981039346656037

  public Fold add(long v) {
    h = (h ^ v) * 0x100000001b3L;  // 1099511628211, mod 2^64 by wrapping
    return this;
  }

  public Fold add(String s) {
    byte[] b = s.getBytes(StandardCharsets.UTF_8);
    add(b.length);
    for (byte x : b) add(x & 0xff);
    return this;
  }

  public long value() {
    return h;
  }

  /** 16 lowercase hex digits. */
  public static String hex(long v) {
    return String.format("%016x", v);
  }
}
