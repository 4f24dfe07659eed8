package demo.plain;

import java.util.HashMap;

/** A workload that never touches mapped classes (the agent leaves this class unchanged). */
public final class PlainWork {
  private final PlainEmployee[] plain;
  private final HashMap<String, Integer> map = new HashMap<>();
  public long sink;

  public PlainWork(int n) {
    plain = new PlainEmployee[n];
    for (int i = 0; i < n; i++) {
      plain[i] = new PlainEmployee();
      plain[i].age = i;
      plain[i].name = "n" + i;
    }
  }

  /** One pass: field reads and writes, a HashMap merge and a string length per element. */
  public void pass(int round) {
    long s = 0;
    for (PlainEmployee e : plain) {
      e.age += round & 1;
      s += e.age + map.merge(e.name, 1, Integer::sum) + e.name.length();
    }
    sink += s;
  }
}
