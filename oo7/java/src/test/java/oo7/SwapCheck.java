package oo7;

import java.util.ArrayList;
import java.util.List;

/**
 * Checks a database's x/y against freshly generated values after swaps: a part swapped an even
 * number of times must hold its generated (x, y), an odd number of times (y, x). One lost or torn
 * swap changes the parity (or mixes the values) of that part, so it is reported.
 */
final class SwapCheck {
  private SwapCheck() {}

  /** How many times a part (by composite index and part index) was swapped. */
  interface Swaps {
    long of(int composite, int part);
  }

  /** The parts whose x/y do not match; empty when all do. */
  static List<String> mismatches(Schema.Database generated, Schema.Database db, Swaps swaps) {
    List<String> bad = new ArrayList<>();
    // For-each over the lists: one read of each shared list (a snapshot), not one per element.
    Object[] gs = generated.composites().toArray();
    int c = 0;
    for (Schema.CompositePart cp : db.composites()) {
      Object[] gp = ((Schema.CompositePart) gs[c]).parts().toArray();
      int j = 0;
      for (Schema.AtomicPart p : cp.parts()) {
        Schema.AtomicPart g = (Schema.AtomicPart) gp[j];
        long n = swaps.of(c, j);
        long ex = n % 2 != 0 ? g.y() : g.x();
        long ey = n % 2 != 0 ? g.x() : g.y();
        long x = p.x();
        long y = p.y();
        if (x != ex || y != ey) {
          bad.add("part " + p.id() + " (swapped " + n + " times): expected x=" + ex + " y=" + ey + ", found x=" + x + " y=" + y);
        }
        j++;
      }
      c++;
    }
    return bad;
  }

  /** The parts whose (x, y) is neither the generated pair nor the swapped one. */
  static List<String> torn(Schema.Database generated, Schema.Database db) {
    List<String> bad = new ArrayList<>();
    Object[] gs = generated.composites().toArray();
    int c = 0;
    for (Schema.CompositePart cp : db.composites()) {
      Object[] gp = ((Schema.CompositePart) gs[c++]).parts().toArray();
      int j = 0;
      for (Schema.AtomicPart p : cp.parts()) {
        Schema.AtomicPart g = (Schema.AtomicPart) gp[j++];
        long x = p.x();
        long y = p.y();
        if (!(x == g.x() && y == g.y()) && !(x == g.y() && y == g.x())) {
          bad.add("part " + p.id() + ": generated x=" + g.x() + " y=" + g.y() + ", found x=" + x + " y=" + y);
        }
      }
    }
    return bad;
  }

  /** How many times T1's walk visits composite part {@code c} (its usedIn count). */
  static long visitsOf(Schema.Database generated, int c) {
    return generated.composites().get(c).usedIn().size();
  }
}
