package oo7;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/** {@code --name value} and {@code --flag} command-line options, checked against the accepted names. */
final class Args {
  private final Map<String, String> values = new HashMap<>();

  /** IllegalArgumentException for an unknown option or a missing value. */
  Args(String[] args, Set<String> withValue, Set<String> flags) {
    for (int i = 0; i < args.length; i++) {
      String a = args[i];
      if (flags.contains(a)) {
        values.put(a, "");
      } else if (withValue.contains(a)) {
        if (i + 1 >= args.length) throw new IllegalArgumentException(a + " needs a value");
        values.put(a, args[++i]);
      } else {
        throw new IllegalArgumentException("unknown option '" + a + "'");
      }
    }
  }

  boolean has(String name) {
    return values.containsKey(name);
  }

  String get(String name, String dflt) {
    return values.getOrDefault(name, dflt);
  }

  /** An unsigned 64-bit integer (0 .. 2^64-1, as a long's bits). */
  long getUnsigned(String name, long dflt) {
    String v = values.get(name);
    if (v == null) return dflt;
    try {
      return Long.parseUnsignedLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " needs an integer from 0 to 2^64-1, got '" + v + "'");
    }
  }

  long getLong(String name, long dflt) {
    String v = values.get(name);
    if (v == null) return dflt;
    try {
      return Long.parseLong(v);
    } catch (NumberFormatException e) {
      throw new IllegalArgumentException(name + " needs an integer, got '" + v + "'");
    }
  }
}
