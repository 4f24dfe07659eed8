package org.colors;

import java.util.List;

/**
 * The child JVM of TransactionTest ({@code ChildMain tx <command> args}): attaches through
 * COLORS_SOCKET and prints what the test checks.
 */
final class TxChild {
  private TxChild() {}

  static void run(String[] args) throws Exception {
    switch (args[0]) {
      case "increment": increment(args[1], Integer.parseInt(args[2])); break;
      case "hold": hold(args[1]); break;
      case "bank": org.colors.tools.BankWorker.main(java.util.Arrays.copyOfRange(args, 1, args.length)); break;
      default: throw new IllegalArgumentException("unknown tx command " + args[0]);
    }
  }

  /** Increments field "n" of the object in repository {@code repo} {@code times} times, each in atomically. */
  private static void increment(String repo, int times) {
    SharedObject c = (SharedObject) SharedMemory.findOrCreateRepository(repo).get();
    for (int i = 0; i < times; i++) SharedMemory.atomically(() -> c.set("n", c.getLong("n") + 1));
    System.out.println("done " + times);
  }

  /**
   * Inside a transaction: sets field "n" of the object in repository {@code repo} to -1, appends
   * to its list "items", replaces the repository's value by a new object; prints "written" and
   * waits (the test kills this JVM with SIGKILL).
   */
  @SuppressWarnings("unchecked")
  private static void hold(String repo) throws InterruptedException {
    ObjectRepository r = SharedMemory.findOrCreateRepository(repo);
    SharedObject c = (SharedObject) r.get();
    Transaction tx = SharedMemory.beginTransaction();
    c.set("n", -1L);
    ((List<Object>) c.get("items")).add("uncommitted");
    SharedObject other = SharedMemory.allocateObject(c.sharedType());
    other.set("n", 12345L);
    r.set(other);
    System.out.println("written");
    System.out.flush();
    Thread.sleep(600_000);
    tx.commit();  // never reached: killed before
  }
}
