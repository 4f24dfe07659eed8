package org.colors;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

/**
 * The child side of {@link FuzzSafetyTest} ({@code ChildMain fuzz seed ops serverPid}): a sequence
 * of random public-API calls drawn from {@code new Random(seed)}: copies, allocations, container,
 * object, repository, channel and monitor operations on random operands (live proxies, proxies
 * from before a detach, private values, nulls), detach/attach, {@code System.gc()}, collect,
 * threads blocked in {@code receive()} / {@code await()} that a detach must wake, and (serverPid
 * &gt; 0) SIGKILL of the server. Every exception is an acceptable outcome; the process must end
 * normally (the test checks its exit status and that no hs_err file appeared). Prints "done".
 */
final class FuzzProgram {
  private static final String[] NAMES = {"fuzz-a", "fuzz-b", "fuzz-c"};
  private static final String[] FIELDS = {"name", "salary", "manager", "x", "", "tags"};
  private final Random rnd;
  private final long serverPid;
  private final List<Object> pool = new ArrayList<>();
  private final List<Thread> blocked = new ArrayList<>();
  private final Map<String, Integer> outcomes = new HashMap<>();

  private FuzzProgram(long seed, long serverPid) {
    this.rnd = new Random(seed);
    this.serverPid = serverPid;
    pool.add(null);
    pool.add(1L);
    pool.add(-7);
    pool.add(Long.MIN_VALUE);
    pool.add(2.5);
    pool.add(Double.NaN);
    pool.add(true);
    pool.add("s");
    pool.add("é\u2603");
    pool.add(new byte[] {1, 2});
    pool.add(List.of(1L, "a"));
    pool.add(Map.of("k", List.of(1L)));
    pool.add(Set.of(1L, 2L));
    pool.add(new Object());
    pool.add(new demo.Employee());
  }

  static void run(long seed, int ops, long serverPid) throws InterruptedException {
    FuzzProgram f = new FuzzProgram(seed, serverPid);
    for (int i = 0; i < ops; i++) {
      int op = f.rnd.nextInt(serverPid > 0 ? 18 : 17);
      try {
        f.step(op);
        f.count(op + ":ok");
      } catch (RuntimeException e) {
        f.count(op + ":" + e.getClass().getSimpleName());
      }
    }
    // Detach wakes the blocked threads. A thread that only now reaches its receive()/lock()
    // attaches again implicitly (as any first use does): detach again until all are done.
    long deadline = System.nanoTime() + 30_000_000_000L;
    for (Thread t : f.blocked) {
      while (t.isAlive() && System.nanoTime() < deadline) {
        try {
          SharedMemory.detach();
        } catch (RuntimeException e) {
          f.count("final-detach:" + e.getClass().getSimpleName());
        }
        t.join(200);
      }
      if (t.isAlive()) {
        System.out.println("HANG: a blocked thread survived detach() (attached " + SharedMemory.isAttached() + ")");
        for (StackTraceElement e : t.getStackTrace()) System.out.println("  at " + e);
        System.out.flush();
        System.exit(5);
      }
    }
    try {
      f.closeRpc();
    } catch (RuntimeException e) {
      f.count("final-close:" + e.getClass().getSimpleName());
    }
    System.gc();
    System.out.println("outcomes " + f.outcomes);
    System.out.println("done");
  }

  private void count(String k) {
    outcomes.merge(k, 1, Integer::sum);
  }

  private Object pick() {
    return pool.get(rnd.nextInt(pool.size()));
  }

  private void add(Object o) {
    pool.add(o);
    if (pool.size() > 200) pool.subList(15, 65).clear();
  }

  private Object privateValue() {
    switch (rnd.nextInt(6)) {
      case 0: return List.of(rnd.nextLong(), "x", List.of(1L, 2L));
      case 1: return Map.of("a", rnd.nextInt(100), "b", List.of());
      case 2: return new HashSet<>(List.of(1L, "two"));
      case 3: return new byte[rnd.nextInt(16)];
      case 4: {
        List<Object> cyc = new ArrayList<>();
        cyc.add(cyc);
        return cyc;
      }
      default: return pick();
    }
  }

  private void step(int op) {
    switch (op) {
      case 0: add(SharedMemory.copyToSharedMemory(rnd.nextBoolean() ? privateValue() : pick())); break;
      case 1: {
        Class<?>[] classes = {List.class, Map.class, Set.class, byte[].class, String.class, Object.class,
            SharedObject.class, demo.Employee.class};
        Class<?> c = classes[rnd.nextInt(classes.length)];
        add(rnd.nextBoolean() ? SharedMemory.allocate(c, rnd.nextInt(64) - 8) : SharedMemory.allocateObject(c));
        break;
      }
      case 2: list(pick()); break;
      case 3: map(pick()); break;
      case 4: set(pick()); break;
      case 5: object(pick()); break;
      case 6: {
        ObjectRepository r = SharedMemory.findOrCreateRepository(NAMES[rnd.nextInt(NAMES.length)]);
        if (rnd.nextBoolean()) r.set(pick());
        else add(r.get());
        break;
      }
      case 7: {
        ObjectChannel ch = SharedMemory.findOrCreateChannel(NAMES[rnd.nextInt(NAMES.length)], rnd.nextInt(6) - 1);
        switch (rnd.nextInt(4)) {
          case 0: ch.send(pick(), 10); break;
          case 1: add(ch.receive(10)); break;
          case 2: ch.trySend(pick()); break;
          default: add(ch.tryReceive());
        }
        break;
      }
      case 8: {
        try (SharedMonitor m = SharedMemory.lock(pick())) {
          if (rnd.nextBoolean()) m.await(10);
          else m.signalAll();
        }
        break;
      }
      case 9: SharedMemory.detach(); break;
      case 10: SharedMemory.attach(); break;
      case 11: System.gc(); break;
      case 12: SharedMemory.collect(Duration.ofSeconds(5)); break;
      case 13: blockedThread(); break;
      case 14: {
        Object o = pick();
        add(SharedMemory.isObjectShared(o));
        add(SharedMemory.getSharedType(o));
        add(SharedMemory.sharedView(o));
        break;
      }
      case 15:
        if (rnd.nextBoolean()) {
          if (pool.size() > 15) pool.remove(15 + rnd.nextInt(pool.size() - 15));
        } else {
          Map<String, SharedType.Kind> fields = new java.util.LinkedHashMap<>();
          SharedType.Kind[] kinds = SharedType.Kind.values();
          for (int i = rnd.nextInt(4); i > 0; i--) fields.put(FIELDS[rnd.nextInt(FIELDS.length)], kinds[rnd.nextInt(kinds.length)]);
          SharedType t = SharedMemory.defineClass(rnd.nextBoolean() ? "fuzz.C" + rnd.nextInt(3) : "", fields);
          add(t);
          add(SharedMemory.allocateObject(t));
        }
        break;
      case 16: rpc(); break;
      default:
        if (rnd.nextInt(3) == 0) ProcessHandle.of(serverPid).ifPresent(ProcessHandle::destroyForcibly);
    }
  }

  private org.colors.rpc.RpcServer rpcServer;
  private org.colors.rpc.RpcClient rpcClient;

  /**
   * Remote calls on an endpoint this process serves, with operands from the pool (private graphs
   * included: arguments and results are bulk copies), and the natives behind RpcSupport's public
   * methods given forged handles. The server and client are made on first use and again, at
   * random, after a detach or a close.
   */
  private void rpc() {
    if (rpcServer == null || rpcClient == null || rnd.nextInt(20) == 0) {
      closeRpc();
      rpcServer = org.colors.rpc.RpcServer.serve("fuzz-rpc", new RpcTestService());
      rpcClient = org.colors.rpc.RpcClient.connect("fuzz-rpc",
          org.colors.rpc.RpcClient.options().timeout(Duration.ofSeconds(2)));
    }
    Object arg = rnd.nextBoolean() ? privateValue() : pick();
    switch (rnd.nextInt(7)) {
      case 0: add(rpcClient.call("echo", arg)); break;
      case 1: add(rpcClient.call("privateCopy", arg)); break;
      case 2: add(rpcClient.call("strings", (Object) new String[] {"a", null, "\uD800", "é"})); break;
      case 3: rpcClient.callAsync("same", arg, pick()).orTimeout(2, java.util.concurrent.TimeUnit.SECONDS); break;
      case 4: add(RpcSupport.callWithCopy(rnd.nextLong(), "echo", new Object[] {arg}, 100)); break;
      case 5: add(RpcSupport.sendWithCopy(rnd.nextLong(), "echo", new Object[] {arg})); break;
      default: add(RpcSupport.replyWithCopy(rnd.nextLong(), java.util.Collections.singletonList(arg)));
    }
  }

  void closeRpc() {
    org.colors.rpc.RpcClient c = rpcClient;
    org.colors.rpc.RpcServer srv = rpcServer;
    rpcClient = null;
    rpcServer = null;
    try {
      if (c != null) c.close();
    } finally {
      if (srv != null) srv.close();
    }
  }

  @SuppressWarnings("unchecked")
  private void list(Object o) {
    if (!(o instanceof List)) return;
    List<Object> l = (List<Object>) o;
    int i = rnd.nextInt(8) - 2;
    switch (rnd.nextInt(9)) {
      case 0: add(l.get(i)); break;
      case 1: l.set(i, pick()); break;
      case 2: l.add(pick()); break;
      case 3: l.add(i, pick()); break;
      case 4: add(l.remove(i)); break;
      case 5: add(l.size()); break;
      case 6: add(l.subList(Math.max(0, i), Math.max(0, i) + rnd.nextInt(3))); break;
      case 7: for (Iterator<Object> it = l.iterator(); it.hasNext();) add(it.next()); break;
      default: l.addAll((Collection<Object>) (rnd.nextBoolean() ? List.of(1L, "z") : l));
    }
  }

  @SuppressWarnings("unchecked")
  private void map(Object o) {
    if (!(o instanceof Map)) return;
    Map<Object, Object> m = (Map<Object, Object>) o;
    switch (rnd.nextInt(5)) {
      case 0: m.put(pick(), pick()); break;
      case 1: add(m.get(pick())); break;
      case 2: add(m.remove(pick())); break;
      case 3: for (Map.Entry<Object, Object> e : m.entrySet()) add(e.getValue()); break;
      default: m.clear();
    }
  }

  @SuppressWarnings("unchecked")
  private void set(Object o) {
    if (!(o instanceof Set)) return;
    Set<Object> s = (Set<Object>) o;
    switch (rnd.nextInt(4)) {
      case 0: s.add(pick()); break;
      case 1: add(s.contains(pick())); break;
      case 2: s.remove(pick()); break;
      default: for (Object x : s) add(x);
    }
  }

  private void object(Object o) {
    if (!(o instanceof SharedObject)) return;
    SharedObject so = (SharedObject) o;
    String f = FIELDS[rnd.nextInt(FIELDS.length)];
    switch (rnd.nextInt(5)) {
      case 0: add(so.get(f)); break;
      case 1: so.set(f, pick()); break;
      case 2: so.set(f, rnd.nextLong()); break;
      case 3: add(so.fieldNames()); break;
      default: add(so.toPrivate(demo.Employee.class));
    }
  }

  /** A thread blocked in receive() or await() without timeout, until a detach wakes it. */
  private void blockedThread() {
    ObjectChannel ch = SharedMemory.findOrCreateChannel("fuzz-empty-" + rnd.nextInt(2), 4);
    Object target = pick();
    boolean receive = rnd.nextBoolean();
    Thread t = new Thread(() -> {
      try {
        if (receive) {
          ch.receive();
        } else {
          try (SharedMonitor m = SharedMemory.lock(target)) {
            m.await();
          }
        }
      } catch (RuntimeException e) {
        // NotAttachedException after a detach; anything else is fine too
      }
    }, "fuzz-blocked");
    t.setDaemon(true);
    t.start();
    blocked.add(t);
  }
}
