package oo7;

import oo7.shared.SharedClasses;
import oo7.shared.SharedOps;
import org.colors.ObjectRepository;
import org.colors.SharedMemory;
import org.colors.SharedMonitor;

/**
 * A second process for {@link ConcurrentT2bTest}: reads the published database, prints "ready",
 * waits until the repository {@code go} is set, runs T2b {@code repeat} times, and prints the wall
 * clock interval it ran in ("ran START END", ms) so the test can check that the runs overlapped.
 * It prints "done I" after each run I when {@code REPEAT} is 0 (then it runs until it is killed).
 *
 * <pre>T2bChild SIZE REPEAT GO_REPOSITORY</pre>
 */
public final class T2bChild {
  private T2bChild() {}

  public static void main(String[] args) {
    Params p = Params.of(args[0]);
    int repeat = Integer.parseInt(args[1]);
    SharedMemory.attach();
    SharedClasses.register();
    Schema.Database db = Load.published(p);
    ObjectRepository go = SharedMemory.findOrCreateRepository(args[2]);
    System.out.println("ready");
    System.out.flush();
    try (SharedMonitor m = SharedMemory.lock(go)) {
      while (go.get() == null) m.await();
    }
    long start = System.currentTimeMillis();
    SharedOps ops = new SharedOps();
    if (repeat == 0) {
      for (long i = 0;; i++) {
        ops.t2b(db);
        System.out.println("done " + i);
        System.out.flush();
      }
    }
    for (int i = 0; i < repeat; i++) {
      OpResult r = ops.t2b(db);
      if (r.count() != Checks.SMALL_42.visits() && p == Params.SMALL) throw new IllegalStateException("T2b visited " + r.count());
    }
    System.out.println("ran " + start + " " + System.currentTimeMillis());
    System.exit(0);
  }
}
