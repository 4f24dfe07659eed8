package oo7;

import java.util.List;
import java.util.Set;
import oo7.plain.PlainFactory;
import oo7.plain.PlainOps;
import oo7.shared.SharedClasses;
import oo7.shared.SharedFactory;
import oo7.shared.SharedOps;
import org.colors.ObjectRepository;
import org.colors.SharedMemory;
import org.colors.SharedMemoryException;
import org.colors.SharedSortedMap;

/**
 * The Java OO7 loader (run by {@code oo7/java/load} with the colors agent).
 *
 * <pre>
 * load [--size small|medium] [--seed N] [--private]      build, publish oo7.Database in oo7.SIZE, read back, check
 * load --check [--size S] [--seed N]                     read the published database and check it (no build)
 * load --check [--size S] --op t1|t6|t2a|t2b|t2c|q7|q1|q2|q3 [--repeat N]   run an operation or query N times
 * </pre>
 *
 * Building also builds and publishes the indexes ({@link Queries}: {@code oo7.SIZE.parts_by_id},
 * {@code oo7.SIZE.parts_by_date}); checking verifies them ("indexes ok"; "indexes none" when no
 * index is published, e.g. by an older loader; a broken one prints what is wrong, exit 1).
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
      SharedSortedMap byId = SharedMemory.newSortedMap();
      SharedSortedMap byDate = SharedMemory.newSortedMap();
      Queries.build(built, byId, byDate, n -> SharedMemory.allocate(List.class, n));
      // The database and its indexes appear together, in one transaction: a load interrupted
      // between the stores, or another loader's stores between them, left one load's database
      // with another's indexes.
      SharedMemory.atomically(() -> {
        SharedMemory.findOrCreateRepository(p.repository()).set(built);
        SharedMemory.findOrCreateRepository(Queries.byIdRepository(p)).set(byId);
        SharedMemory.findOrCreateRepository(Queries.byDateRepository(p)).set(byDate);
      });
    }
    Schema.Database db = published(p);
    SharedOps ops = new SharedOps();
    if (a.has("--op")) {
      String op = a.get("--op", "");
      for (long i = 0; i < repeat; i++) {
        if (Queries.isQuery(op)) {
          SharedSortedMap[] ix = publishedIndexes(p);
          if (ix == null) throw new IllegalArgumentException("no indexes are published beside " + p.repository());
          Queries.Result r = Queries.run(op, ix[0], ix[1], seed, Queries.atomicParts(p));
          System.out.println("op " + op + " result " + r);
        } else {
          OpResult r = ops.run(op, db);
          System.out.println("op " + op + " count " + r.count() + " check " + Fold.hex(r.check()));
        }
      }
      return 0;
    }
    if (check) System.out.println("checking the database published in " + p.repository());
    System.out.println("oo7 size=" + p.name() + " seed=" + Long.toUnsignedString(seed) + " lang=java");
    Checks.Summary s = Checks.summary(db, ops);
    System.out.println(s.lines());
    int rc = compare("shared", Checks.expected(p, seed), s);
    SharedSortedMap[] ix = publishedIndexes(p);
    if (ix == null) {
      System.out.println("indexes none");
    } else {
      List<String> bad = Queries.problems(db, ix[0], ix[1]);
      if (bad.isEmpty()) {
        System.out.println("indexes ok");
      } else {
        System.err.println("load: the indexes are wrong: " + String.join("; ", bad));
        rc = 1;
      }
    }
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

  /**
   * The published indexes {by id, by date}, or null when neither repository holds one.
   * IllegalArgumentException when only one does, or one holds something else.
   */
  public static SharedSortedMap[] publishedIndexes(Params p) {
    Object id = SharedMemory.findOrCreateRepository(Queries.byIdRepository(p)).get();
    Object date = SharedMemory.findOrCreateRepository(Queries.byDateRepository(p)).get();
    if (id == null && date == null) return null;
    if (!(id instanceof SharedSortedMap) || !(date instanceof SharedSortedMap)) {
      throw new IllegalArgumentException("the repositories " + Queries.byIdRepository(p) + " and "
          + Queries.byDateRepository(p) + " must both hold a sorted map (found " + (id == null ? "nothing" : describe(id))
          + " and " + (date == null ? "nothing" : describe(date)) + ")");
    }
    return new SharedSortedMap[] {(SharedSortedMap) id, (SharedSortedMap) date};
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
