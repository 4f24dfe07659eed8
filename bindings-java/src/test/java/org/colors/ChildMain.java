package org.colors;

import demo.tree.Node;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The second process of the cross-process tests ({@code java org.colors.ChildMain command args}),
 * started by {@link ColorsServer.Server#spawn}. It attaches through {@code COLORS_SOCKET}, prints
 * what the test checks on stdout, and exits 0 on success.
 */
public final class ChildMain {
  private ChildMain() {}

  public static void main(String[] args) throws Exception {
    String cmd = args[0];
    switch (cmd) {
      case "repo-idiom": repoIdiom(args[1]); break;
      case "channel-echo": channelEcho(args[1], args[2], Integer.parseInt(args[3])); break;
      case "hold-monitor": holdMonitor(args[1]); break;
      case "walk-cycle": walkCycle(args[1]); break;
      case "no-server": noServer(args[1]); break;
      case "receive-until-gone": receiveUntilGone(args[1]); break;
      case "server-death": serverDeath(args[1]); break;
      case "server-restart": serverRestart(args[1]); break;
      case "use-during-detach": useDuringDetach(Integer.parseInt(args[1])); break;
      case "attach-after-restarts": attachAfterRestarts(args[1], Integer.parseInt(args[2])); break;
      case "rpc-serve": rpcServe(args[1], Integer.parseInt(args[2])); break;
      case "rpc-serve-exit": rpcServeExit(args[1]); break;
      case "rpc-client": rpcClient(args[1], Integer.parseInt(args[2])); break;
      case "rpc-slow-call": rpcSlowCall(args[1], Long.parseLong(args[2])); break;
      case "pressure-churn": pressureChurn(Double.parseDouble(args[1])); break;
      case "pressure-full": pressureFull(); break;
      case "pressure-replies": pressureReplies(args[1], Double.parseDouble(args[2])); break;
      case "fuzz": FuzzProgram.run(Long.parseLong(args[1]), Integer.parseInt(args[2]), Long.parseLong(args[3])); break;
      case "detach-wakes-blocked": detachWakesBlocked(args[1]); break;
      case "tx": TxChild.run(java.util.Arrays.copyOfRange(args, 1, args.length)); break;
      case "list-stress": listStress(args[1], Integer.parseInt(args[2]), Double.parseDouble(args[3])); break;
      default: throw new IllegalArgumentException("unknown command " + cmd);
    }
    System.out.flush();
  }

  /**
   * ContainerAtomicityTest's worker: two threads (writer ids wid and wid + 1) append, remove (by
   * index and by value), set and read tagged values (writer * 1e9 + seq) in the repository's shared
   * list, without any lock, for `secs` seconds. Prints per thread: "thread WID WRITTEN APPENDED
   * REMOVED BAD MAXSEEN" (BAD: values read that are not tags; MAXSEEN: "w:s,..." the highest seq
   * seen per writer; REMOVED counts removals, not overwrites), then "removed v1 v2 ..." with every value
   * that left the list through this process (removed, or returned by set as overwritten).
   */
  private static void listStress(String repoName, int wid, double secs) throws InterruptedException {
    SharedList list = (SharedList) SharedMemory.findOrCreateRepository(repoName).get();
    List<String> lines = java.util.Collections.synchronizedList(new ArrayList<>());
    List<Long> removedAll = java.util.Collections.synchronizedList(new ArrayList<>());
    Thread[] threads = new Thread[2];
    for (int t = 0; t < 2; t++) {
      final int w = wid + t;
      threads[t] = new Thread(() -> {
        java.util.Random rng = new java.util.Random(w);
        java.util.Map<Long, Long> maxSeen = new java.util.HashMap<>();
        long seq = 0, appended = 0, removed = 0, bad = 0;
        List<Long> mine = new ArrayList<>();
        long end = System.nanoTime() + (long) (secs * 1e9);
        while (System.nanoTime() < end) {
          Object read = null;
          boolean haveRead = false;
          boolean gone = false;  // the value read left the list (removed or overwritten)
          try {
            switch (rng.nextInt(6)) {
              case 0:
              case 1: {
                long v = w * 1_000_000_000L + seq++;
                list.add(v);
                mine.add(v);
                appended++;
                break;
              }
              case 2: read = list.remove(rng.nextBoolean() ? 0 : list.size() - 1); haveRead = gone = true; removed++; break;
              case 3: read = list.set(rng.nextInt(8), w * 1_000_000_000L + seq++); haveRead = gone = true; break;
              case 4: read = list.get(rng.nextInt(8)); haveRead = true; break;
              default: {
                if (mine.isEmpty()) break;
                Long v = mine.remove(mine.size() - 1);
                if (list.remove((Object) v)) {
                  removed++;
                  removedAll.add(v);
                }
              }
            }
          } catch (IndexOutOfBoundsException e) {
            continue;  // empty, or the index is out of range now
          }
          if (!haveRead) continue;
          if (!(read instanceof Long) || (Long) read < 1_000_000_000L) {
            bad++;
            continue;
          }
          long v = (Long) read;
          maxSeen.merge(v / 1_000_000_000L, v % 1_000_000_000L, Math::max);
          if (gone) removedAll.add(v);
        }
        StringBuilder ms = new StringBuilder();
        for (java.util.Map.Entry<Long, Long> e : maxSeen.entrySet()) ms.append(e.getKey()).append(':').append(e.getValue()).append(',');
        lines.add("thread " + w + " " + seq + " " + appended + " " + removed + " " + bad + " " + ms);
      });
      threads[t].start();
    }
    for (Thread t : threads) t.join();
    for (String l : lines) System.out.println(l);
    StringBuilder sb = new StringBuilder("removed");
    for (long v : removedAll) sb.append(' ').append(v);
    System.out.println(sb);
  }

  /**
   * The paper's client side: waits on the repository's monitor until the parent set a box, then
   * computes box.job's sum into box.result under the box's monitor and signals.
   */
  private static void repoIdiom(String repoName) {
    ObjectRepository r = SharedMemory.findOrCreateRepository(repoName);
    SharedMap box;
    try (SharedMonitor m = SharedMemory.lock(r)) {
      System.out.println("waiting");
      System.out.flush();
      while (r.get() == null) m.await();
      box = (SharedMap) r.get();
    }
    try (SharedMonitor m = SharedMemory.lock(box)) {
      long sum = 0;
      for (Object x : (SharedList) box.get("job")) sum += (Long) x;
      box.put("result", sum);
      m.signalAll();
    }
    System.out.println("done");
  }

  /** Receives n lists from `in` and sends back, on `out`, a new shared map {sum, size, first}. */
  private static void channelEcho(String in, String out, int n) {
    ObjectChannel cin = SharedMemory.findOrCreateChannel(in);
    ObjectChannel cout = SharedMemory.findOrCreateChannel(out);
    System.out.println("ready");
    System.out.flush();
    for (int i = 0; i < n; i++) {
      Object v = cin.receive();
      if (v instanceof SharedList) {
        SharedList l = (SharedList) v;
        long sum = 0;
        for (long x : l.toLongArray()) sum += x;
        SharedMap reply = SharedMemory.allocate(SharedMap.class, 4);
        reply.put("sum", sum);
        reply.put("size", l.size());
        reply.put("same", l);  // the very object received: the parent sees its own proxy
        cout.send(reply);
      } else {
        cout.send(v);  // scalars echo back
      }
    }
    System.out.println("done");
  }

  /** Locks the repository's monitor, says so, and sleeps until killed. */
  private static void holdMonitor(String repoName) throws InterruptedException {
    ObjectRepository r = SharedMemory.findOrCreateRepository(repoName);
    SharedMonitor m = SharedMemory.lock(r);
    System.out.println("locked " + m.isHeldByCurrentThread());
    System.out.flush();
    Thread.sleep(120_000);
  }

  /** Walks the cyclic graph the parent built: root = [a, b], a = {"next": b}, b = {"next": a}, root[2] = root. */
  private static void walkCycle(String repoName) {
    SharedList root = (SharedList) SharedMemory.findOrCreateRepository(repoName).get();
    SharedMap a = (SharedMap) root.get(0);
    SharedMap b = (SharedMap) root.get(1);
    boolean ok = a.get("next") == b && b.get("next") == a && root.get(2) == root
        && ((SharedMap) a.get("next")).get("next") == a;
    // Steps around the cycle many times: every step must give the same proxies.
    Object cur = a;
    for (int i = 0; i < 1000; i++) cur = ((SharedMap) cur).get("next");
    ok &= cur == a;
    System.out.println(ok ? "cycle ok" : "cycle broken");
    a.put("visited", "java child");
  }

  /** Blocks in receive() on an empty channel until its server goes away; prints what it threw. */
  private static void receiveUntilGone(String chan) {
    ObjectChannel ch = SharedMemory.findOrCreateChannel(chan);
    System.out.println("receiving");
    System.out.flush();
    try {
      System.out.println("received?! " + ch.receive());
    } catch (SharedMemoryException e) {
      System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
    }
  }

  /**
   * Holds a shared list, a repository and a channel, prints "ready", waits for a line on stdin
   * (the parent killed the server), then prints how long isAttached() took to turn false, what
   * still works on the list, and which exception each server-dependent call throws.
   */
  @SuppressWarnings("unchecked")
  private static void serverDeath(String name) throws Exception {
    List<Object> held = SharedMemory.allocate(List.class);
    held.add(1L);
    ObjectRepository repo = SharedMemory.findOrCreateRepository(name);
    repo.set(held);
    ObjectChannel ch = SharedMemory.findOrCreateChannel(name, 4);
    System.out.println("ready");
    System.out.flush();
    new java.io.BufferedReader(new java.io.InputStreamReader(System.in)).readLine();
    long t0 = System.nanoTime();
    while (SharedMemory.isAttached() && System.nanoTime() - t0 < 5_000_000_000L) Thread.sleep(1);
    System.out.println("noticed " + (SharedMemory.isAttached() ? -1 : (System.nanoTime() - t0) / 1_000_000));
    held.set(0, 7L);
    System.out.println("held " + held.get(0));
    System.out.println("repo.set " + thrown(() -> repo.set(held)));
    System.out.println("channel.send " + thrown(() -> ch.trySend(1L)));
    System.out.println("allocate " + thrown(() -> {
      for (int i = 0; i < 200_000; i++) held.add("x".repeat(200));
    }));
  }

  /**
   * ServerDeathTest's survivor: builds a list, and after the parent killed the server ("killed")
   * writes and allocates while none runs ("gap"); after the parent started a successor
   * ("restarted") its next repository store reattaches, and it prints what it finds.
   */
  @SuppressWarnings("unchecked")
  private static void serverRestart(String name) throws Exception {
    List<Object> held = SharedMemory.allocate(List.class);
    for (long i = 0; i < 100; i++) held.add(i);
    SharedMemory.findOrCreateRepository(name).set(held);
    System.out.println("ready");
    System.out.flush();
    java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
    in.readLine();
    while (SharedMemory.isAttached()) Thread.sleep(1);
    held.set(0, 1000L);
    held.add("written while no server ran");
    System.out.println("gap");
    System.out.flush();
    in.readLine();
    ObjectRepository repo = SharedMemory.findOrCreateRepository(name);  // cached: no server needed
    List<Object> again = (List<Object>) repo.get();
    repo.set(again);  // a repository store needs the server: reattaches to the successor
    System.out.println("size " + again.size() + " first " + again.get(0) + " last " + again.get(100) + " attached "
        + SharedMemory.isAttached());
  }

  /**
   * ServerDeathTest's client of a server killed `rounds` times: after each kill (a "killed" line
   * on stdin) and the successor's start ("restarted"), attaches again, explicitly, and prints
   * "watchers N attached B": the heap-pressure watcher threads alive once the count settles (5 s
   * at most) and whether the attach took the process back.
   */
  private static void attachAfterRestarts(String socket, int rounds) throws Exception {
    SharedMemory.attach(Path.of(socket));
    List<Object> held = SharedMemory.allocate(List.class);
    held.add(1L);
    SharedMemory.findOrCreateRepository("attach-after-restarts").set(held);
    java.io.BufferedReader in = new java.io.BufferedReader(new java.io.InputStreamReader(System.in));
    System.out.println("ready watchers " + Proxies.pressureWatchers());
    System.out.flush();
    for (int k = 0; k < rounds; k++) {
      in.readLine();  // killed
      while (SharedMemory.isAttached()) Thread.sleep(1);
      in.readLine();  // restarted
      SharedMemory.attach(Path.of(socket));
      held.add((long) k);
      long deadline = System.nanoTime() + 5_000_000_000L;
      while (Proxies.pressureWatchers() != 1 && System.nanoTime() < deadline) Thread.sleep(10);
      System.out.println("watchers " + Proxies.pressureWatchers() + " attached " + SharedMemory.isAttached() + " size "
          + held.size());
      System.out.flush();
    }
  }

  /**
   * Two threads read and write shared objects without pause while the main thread detaches and
   * attaches again `rounds` times: they may get exceptions, the process must not die.
   */
  @SuppressWarnings("unchecked")
  private static void useDuringDetach(int rounds) throws Exception {
    java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
    java.util.concurrent.atomic.AtomicLong ops = new java.util.concurrent.atomic.AtomicLong();
    List<Thread> threads = new ArrayList<>();
    for (int t = 0; t < 2; t++) {
      Thread th = new Thread(() -> {
        List<Object> l = null;
        while (!stop.get()) {
          try {
            if (l == null) {
              l = SharedMemory.allocate(List.class);
              for (int i = 0; i < 16; i++) l.add((long) i);
            }
            for (int i = 0; i < 16; i++) l.set(i, (Long) l.get(i) + 1);
            ops.incrementAndGet();
          } catch (SharedMemoryException e) {
            l = null;  // a stale proxy: take a new one
          }
        }
      });
      th.start();
      threads.add(th);
    }
    for (int r = 0; r < rounds; r++) {
      Thread.sleep(5);
      SharedMemory.detach();
      Thread.sleep(1);
      SharedMemory.attach();
    }
    stop.set(true);
    for (Thread th : threads) th.join(10_000);
    System.out.println("survived " + (ops.get() > 0));
  }

  private static String thrown(Runnable r) {
    try {
      r.run();
      return "nothing";
    } catch (RuntimeException e) {
      return e.getClass().getSimpleName();
    }
  }

  /**
   * A thread blocked in receive() and one in await() while the main thread detaches: both must
   * end with NotAttachedException (the detach wakes them), and the process must survive.
   */
  private static void detachWakesBlocked(String chan) throws InterruptedException {
    ObjectChannel ch = SharedMemory.findOrCreateChannel(chan, 4);
    SharedList target = SharedMemory.allocate(SharedList.class, 1);
    List<String> results = java.util.Collections.synchronizedList(new ArrayList<>());
    Thread receiver = new Thread(() -> {
      try {
        results.add("received " + ch.receive());
      } catch (NotAttachedException e) {
        results.add("not attached");
      }
    });
    Thread waiter = new Thread(() -> {
      try (SharedMonitor m = SharedMemory.lock(target)) {
        m.await();
        results.add("woken");
      } catch (NotAttachedException e) {
        results.add("not attached");
      }
    });
    receiver.start();
    waiter.start();
    Thread.sleep(500);
    SharedMemory.detach();
    receiver.join(10_000);
    waiter.join(10_000);
    System.out.println("alive " + receiver.isAlive() + " " + waiter.isAlive());
    System.out.println("results " + results);
    try {
      target.size();
      System.out.println("stale proxy worked");
    } catch (NotAttachedException e) {
      System.out.println("stale proxy raises");
    }
  }

  /** Attaches to a socket no server listens on and prints the exception. */
  private static void noServer(String socket) {
    try {
      SharedMemory.attach(Path.of(socket));
      System.out.println("attached?!");
    } catch (SharedMemoryException e) {
      System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
    }
    try {
      SharedMemory.copyToSharedMemory(java.util.List.of(1));
      System.out.println("implicit attach?!");
    } catch (SharedMemoryException e) {
      System.out.println(e.getClass().getSimpleName() + ": " + e.getMessage());
    }
  }

  /** Serves RpcTestService as `endpoint`, prints "ready", serves until stdin closes (or a kill). */
  private static void rpcServe(String endpoint, int threads) throws Exception {
    try (org.colors.rpc.RpcServer s = org.colors.rpc.RpcServer.serve(endpoint, new RpcTestService(), threads)) {
      System.out.println("ready " + ProcessHandle.current().pid());
      System.out.flush();
      while (System.in.read() >= 0) {
        // serve until the parent closes stdin
      }
    }
    System.out.println("stopped");
  }

  /** n calls of add(i, 1) (checked), then "ok". */
  private static void rpcClient(String endpoint, int n) {
    org.colors.rpc.RpcClient c = org.colors.rpc.RpcClient.connect(endpoint);
    System.out.println("connected");
    System.out.flush();
    for (int i = 0; i < n; i++) {
      Object r = c.call("add", i, 1);
      if (!Long.valueOf(i + 1L).equals(r)) throw new AssertionError("add(" + i + ", 1) = " + r);
    }
    System.out.println("ok");
  }

  /** Prints "calling" and calls sleep(ms): the parent kills this JVM during the call. */
  private static void rpcSlowCall(String endpoint, long ms) {
    org.colors.rpc.RpcClient c = org.colors.rpc.RpcClient.connect(endpoint);
    java.util.concurrent.CompletableFuture<Object> f = c.callAsync("sleep", ms);
    System.out.println("calling");
    System.out.flush();
    System.out.println(f.join());
  }

  /** Serves RpcTestService without closing it; System.exit when stdin closes (the hook closes it). */
  private static void rpcServeExit(String endpoint) throws Exception {
    org.colors.rpc.RpcServer.serve(endpoint, new RpcTestService());
    System.out.println("ready");
    System.out.flush();
    while (System.in.read() >= 0) {
      // until the parent closes stdin
    }
    System.out.println("exiting");
    System.out.flush();
    System.exit(0);
  }

  // ---- heap pressure (HeapPressureTest; run with the agent) ----

  /**
   * Calls {@code make(64)} of the Python rpc server {@code endpoint} (a new 64-string list built by
   * that process each time) until {@code heaps} shared heaps' worth was allocated, dropping every
   * reply at once. This JVM allocates little Java memory meanwhile, so its own GC does not run:
   * only the heap-pressure watcher, woken by the server's failing allocations, releases the roots
   * of the dropped replies. Prints "ok ..." or "oom ..." (exit 3).
   */
  private static void pressureReplies(String endpoint, double heaps) {
    HeapStats h0 = SharedMemory.heapStats();
    long target = (long) (heaps * h0.capacity());
    long allocated = 0, calls = 0, sum = 0;
    try (org.colors.rpc.RpcClient c = org.colors.rpc.RpcClient.connect(endpoint)) {
      while ((allocated = SharedMemory.heapStats().allocatedBytesTotal() - h0.allocatedBytesTotal()) < target) {
        Object r = c.call(java.time.Duration.ofSeconds(60), "make", 64L);
        sum += ((List<?>) r).size();
        calls++;
      }
    } catch (org.colors.rpc.RemoteException | SharedOutOfMemoryException e) {
      System.out.println("oom after " + allocated + " of " + target + " bytes, " + calls + " calls; " + pressureState()
          + "; " + e);
      System.out.flush();
      System.exit(3);
    }
    System.out.println("ok allocated=" + allocated + " capacity=" + h0.capacity() + " calls=" + calls + " sum=" + sum
        + " watchCalls=" + Proxies.pressureWatchCalls() + " " + pressureState());
  }

  private static String pressureState() {
    return "pressureCalls=" + Proxies.pressureCalls() + " released=" + Proxies.pressureReleased() + " hookCalls="
        + Native.pressureHookCalls() + " error=" + Proxies.pressureError + " cached=" + Proxies.cacheSize()
        + " javaRoots=" + Roots.live() + " jvalues=" + Native.liveHandles() + " " + SharedMemory.gcStats();
  }

  private static Node tree(int d, long[] counter) {
    Node n = SharedMemory.allocate(Node.class);
    long c = counter[0]++;
    n.i = c;
    n.s = "n" + c;
    if (d > 1) {
      n.left = tree(d - 1, counter);
      n.right = tree(d - 1, counter);
    }
    return n;
  }

  private static long walk(Node n) {
    long s = n.i + n.s.length();
    if (n.left != null) s += walk(n.left);
    if (n.right != null) s += walk(n.right);
    return s;
  }

  /**
   * Makes short-lived proxies until {@code heaps} times the shared heap's capacity was allocated:
   * trees of {@code @Shared} nodes built and walked through the fast path (Java-held roots), and
   * lists and SharedObject views made by the natives (JValue roots), each dropped right away.
   * Prints "ok ..." or, on SharedOutOfMemoryException, "oom ..." and exits with 3.
   */
  @SuppressWarnings("unchecked")
  private static void pressureChurn(double heaps) {
    HeapStats h0 = SharedMemory.heapStats();
    long target = (long) (heaps * h0.capacity());
    long allocated = 0, nodes = 0, sum = 0;
    long[] counter = {0};
    try {
      while ((allocated = SharedMemory.heapStats().allocatedBytesTotal() - h0.allocatedBytesTotal()) < target) {
        for (int k = 0; k < 16; k++) {
          long before = counter[0];
          sum += walk(tree(6, counter));
          nodes += counter[0] - before;
          List<Object> l = (List<Object>) SharedMemory.copyToSharedMemory(List.of("r" + k, k, List.of(nodes)));
          sum += l.size() + ((List<Object>) l.get(2)).size();
          SharedObject o = SharedMemory.allocateObject(demo.tree.PlainNode.class);
          o.set("s", "view " + nodes);
          sum += o.getString("s").length();
        }
      }
    } catch (SharedOutOfMemoryException e) {
      System.out.println("oom after " + allocated + " of " + target + " bytes, " + nodes + " nodes; " + pressureState()
          + "; " + e.getMessage());
      System.out.flush();
      System.exit(3);
    }
    System.out.println("ok allocated=" + allocated + " capacity=" + h0.capacity() + " nodes=" + nodes + " sum=" + sum
        + " " + pressureState());
  }

  /**
   * Keeps every node it allocates reachable until the shared heap is really full: prints "full ..."
   * with the failing call's duration and message; checks the kept nodes; then drops them and
   * allocates again (the dropped proxies' roots must go) and prints "again ...".
   */
  private static void pressureFull() {
    List<Node> keep = new ArrayList<>();
    long t0 = 0;
    try {
      for (;;) {
        t0 = System.nanoTime();
        Node n = SharedMemory.allocate(Node.class);
        n.s = "kept " + keep.size();
        keep.add(n);
      }
    } catch (SharedOutOfMemoryException e) {
      long failMs = (System.nanoTime() - t0) / 1_000_000;
      System.out.println("full kept=" + keep.size() + " failMs=" + failMs + " " + pressureState() + " message="
          + e.getMessage());
    }
    for (int i = 0; i < keep.size(); i++) {
      String s = keep.get(i).s;
      if (s != null && !s.equals("kept " + i)) throw new AssertionError("node " + i + " reads " + s);
    }
    keep.clear();
    long t1 = System.nanoTime();
    Node again = SharedMemory.allocate(Node.class);
    again.s = "again";
    System.out.println("again ok ms=" + (System.nanoTime() - t1) / 1_000_000 + " s=" + again.s + " " + pressureState());
  }
}
