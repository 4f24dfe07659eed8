package oo7;

import java.util.Set;
import oo7.plain.PlainFactory;
import oo7.plain.PlainOps;
import oo7.shared.SharedClasses;
import oo7.shared.SharedFactory;
import oo7.shared.SharedOps;
import org.colors.ObjectRepository;
import org.colors.SharedMemory;
import org.colors.SharedMemoryException;

/**
 * The Java OO7 loader (run by {@code oo7/java/load} with the colors agent).
 *
 * <pre>
 * load [--size small|medium] [--seed N] [--private]      build, publish oo7.Database in oo7.SIZE, read back, check
 * load --check [--size S] [--seed N]                     read the published database and check it (no build)
 * load --check [--size S] --op t1|t6|t2a|t2b|t2c|q7 [--repeat N]   run an operation on it N times
 * </pre>
 *
 * The three values are computed from the shared database read back from the repository; for seed
 * 42 small they are compared with the SPEC's (a mismatch: expected and found on stderr, exit 1).
 * {@code --private} also builds the POJO model in this process and checks its values.
 */
public final class Load {
  private Load() {}

  public static void main(String[] args) {
    int rc;
    try {
      rc = run(args);
    } catch (IllegalArgumentException e) {
      System.err.println("load: " + e.getMessage());
      rc = 2;
    } catch (SharedMemoryException e) {
      System.err.println("load: " + e.getClass().getSimpleName() + ": " + e.getMessage());
      rc = 1;
    }
    System.exit(rc);
  }

  static int run(String[] argv) {
    Args a = new Args(argv, Set.of("--size", "--seed", "--op", "--repeat"), Set.of("--check", "--private"));
    Params p = Params.of(a.get("--size", "small"));
    long seed = a.getUnsigned("--seed", 42);
    long repeat = a.getLong("--repeat", 1);
    if (repeat < 1) throw new IllegalArgumentException("--repeat needs a count >= 1");
    boolean check = a.has("--check");
    if (a.has("--op") && !check) throw new IllegalArgumentException("--op runs on a published database: add --check");
    SharedMemory.attach();
    SharedClasses.register();
    if (!check) {
      Schema.Database built = Builder.build(p, seed, new SharedFactory());
      SharedMemory.findOrCreateRepository(p.repository()).set(built);
    }
    Schema.Database db = published(p);
    SharedOps ops = new SharedOps();
    if (a.has("--op")) {
      String op = a.get("--op", "");
      for (long i = 0; i < repeat; i++) {
        OpResult r = ops.run(op, db);
        System.out.println("op " + op + " count " + r.count() + " check " + Fold.hex(r.check()));
      }
      return 0;
    }
    if (check) System.out.println("checking the database published in " + p.repository());
    System.out.println("oo7 size=" + p.name() + " seed=" + Long.toUnsignedString(seed) + " lang=java");
    Checks.Summary s = Checks.summary(db, ops);
    System.out.println(s.lines());
    int rc = compare("shared", Checks.expected(p, seed), s);
    if (a.has("--private")) {
      Schema.Database mine = Builder.build(p, seed, new PlainFactory());
      Checks.Summary ps = Checks.summary(mine, new PlainOps());
      System.out.println("private " + ps.lines().replace("\n", " "));
      rc = Math.max(rc, compare("private", Checks.expected(p, seed), ps));
      if (!ps.equals(s)) {
        System.err.println("load: the private database differs from the shared one: " + ps + " vs " + s);
        rc = 1;
      }
    }
    return rc;
  }

  /** The database published in the size's repository, read back as the shared classes. */
  public static Schema.Database published(Params p) {
    ObjectRepository r = SharedMemory.findOrCreateRepository(p.repository());
    Object o = r.get();
    if (o == null) {
      throw new IllegalArgumentException("no database is published in repository " + p.repository() + ": run the loader first");
    }
    if (!(o instanceof oo7.shared.Database)) {
      throw new IllegalArgumentException("repository " + p.repository() + " holds " + describe(o) + ", not an oo7.Database");
    }
    return (Schema.Database) o;
  }

  private static String describe(Object o) {
    return o instanceof org.colors.SharedObject ? "an object of class " + ((org.colors.SharedObject) o).className()
        : "a " + o.getClass().getName();
  }

  private static int compare(String which, Checks.Summary expected, Checks.Summary found) {
    if (expected == null || expected.equals(found)) return 0;
    System.err.println("load: the " + which + " database does not match the SPEC");
    System.err.println("expected:\n" + expected.lines());
    System.err.println("found:\n" + found.lines());
    return 1;
  }
}
