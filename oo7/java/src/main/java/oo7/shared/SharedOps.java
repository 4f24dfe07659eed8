package oo7.shared;

import java.util.HashSet;
import oo7.OpResult;
import oo7.Ops;
import oo7.Schema;
import org.colors.SharedMemory;

/**
 * The operations over the shared database, the same code as {@link oo7.plain.PlainOps} over the
 * bound {@code @Shared} classes: every field access reads (or writes) the shared object, every
 * list is read from the heap when it is iterated (one snapshot per for-each).
 *
 * <p>Invariant: an update of a part's {@code x}/{@code y} happens only inside a transaction that
 * covers the whole visit of its composite part (T2a/T2b/T2c: {@link SharedMemory#atomically}, from
 * the root part's swap through the search), so concurrent T2 runs in any process and language
 * lose no swap, and a process killed in the middle is rolled back by the server; T1, T6 and Q7
 * only read. A transaction retried after a conflict runs the visit again: the walk's count and
 * fold are put back to their values before it first.
 */
public final class SharedOps implements Ops {
  private static final int T1 = 0, T6 = 1, T2A = 2, T2B = 3, T2C = 4;

  @Override public OpResult t1(Schema.Database db) { return walk(db, T1); }
  @Override public OpResult t6(Schema.Database db) { return walk(db, T6); }
  @Override public OpResult t2a(Schema.Database db) { return walk(db, T2A); }
  @Override public OpResult t2b(Schema.Database db) { return walk(db, T2B); }
  @Override public OpResult t2c(Schema.Database db) { return walk(db, T2C); }

  @Override
  public OpResult q7(Schema.Database db) {
    long n = 0, sum = 0;
    for (CompositePart c : ((Database) db).composites) {
      for (AtomicPart p : c.parts) {
        n++;
        sum += p.x;
      }
    }
    return new OpResult(n, sum);
  }

  private static OpResult walk(Schema.Database db, int mode) {
    Walk w = new Walk(mode);
    w.assembly(((Database) db).module.designRoot);
    return new OpResult(w.count, w.fold);
  }

  private static void swap(AtomicPart p) {
    long t = p.x;
    p.x = p.y;
    p.y = t;
  }

  /** One walk: the visit count and the FNV fold of the visited ids (the SPEC's visit order). */
  private static final class Walk {
    final int mode;
    long count;
    long fold = 0xcbf29ce484222325L;

    Walk(int mode) {
      this.mode = mode;
    }

    void assembly(Schema.Assembly a) {
      if (a instanceof ComplexAssembly) {
        for (Schema.Assembly s : ((ComplexAssembly) a).subAssemblies) assembly(s);
      } else {
        for (CompositePart c : ((BaseAssembly) a).components) composite(c);
      }
    }

    void composite(CompositePart c) {
      if (mode == T1 || mode == T6) {
        search(c);
        return;
      }
      final long count0 = count, fold0 = fold;
      SharedMemory.atomically(() -> {
        count = count0;
        fold = fold0;
        search(c);
      });
    }

    private void search(CompositePart c) {
      AtomicPart root = c.rootPart;
      if (mode == T6) {
        visit(root);
        return;
      }
      if (mode == T2A) swap(root);
      HashSet<AtomicPart> seen = new HashSet<>();
      seen.add(root);
      dfs(root, seen);
    }

    void dfs(AtomicPart p, HashSet<AtomicPart> seen) {
      visit(p);
      if (mode == T2B) {
        swap(p);
      } else if (mode == T2C) {
        for (int i = 0; i < 4; i++) swap(p);
      }
      for (Connection c : p.to) {
        AtomicPart q = c.to;
        if (seen.add(q)) dfs(q, seen);
      }
    }

    void visit(AtomicPart p) {
      count++;
      fold = (fold ^ p.id) * 0x100000001b3L;
    }
  }
}
