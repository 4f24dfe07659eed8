package fig61;

import oo7.shared.AtomicPart;
import oo7.shared.BaseAssembly;
import oo7.shared.ComplexAssembly;
import oo7.shared.CompositePart;
import oo7.shared.Connection;
import oo7.shared.Module;

/**
 * Remote references to OO7 objects: {@code class tag << 32 | id}. OO7 ids are unique within a
 * class and below 2^32, so a handle names one object; the tag lets a client know the class of an
 * object a call returned (as a typed stub would) without another call.
 */
final class Handles {
  static final int MODULE = 1, COMPLEX = 2, BASE = 3, COMPOSITE = 4, PART = 5, CONNECTION = 6;

  private Handles() {}

  static long make(int tag, long id) {
    return ((long) tag << 32) | (id & 0xffffffffL);
  }

  static int tag(long h) {
    return (int) (h >>> 32);
  }

  static int id(long h) {
    return (int) (h & 0xffffffffL);
  }

  /** The handle of a database object read from the heap (its class, and its id field). */
  static long of(Object o) {
    if (o instanceof AtomicPart p) return make(PART, p.id);
    if (o instanceof Connection c) return make(CONNECTION, c.id);
    if (o instanceof CompositePart c) return make(COMPOSITE, c.id);
    if (o instanceof BaseAssembly b) return make(BASE, b.id);
    if (o instanceof ComplexAssembly c) return make(COMPLEX, c.id);
    if (o instanceof Module m) return make(MODULE, m.id);
    throw new IllegalStateException("not an OO7 object: " + (o == null ? "null" : o.getClass().getName()));
  }
}
