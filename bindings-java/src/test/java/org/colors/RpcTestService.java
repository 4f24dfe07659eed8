package org.colors;

import demo.Employee;
import java.util.ArrayList;
import java.util.List;
import org.colors.rpc.ByValue;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/** The handler the rpc tests serve (in this JVM, in a child JVM, and to Python clients). */
public class RpcTestService {
  private final AtomicLong counter = new AtomicLong();
  private final Map<String, Object> store = new ConcurrentHashMap<>();

  public Object echo(Object x) {
    return x;
  }

  public long add(long a, long b) {
    return a + b;
  }

  public long add(long a, long b, long c) {
    return a + b + c;
  }

  public int addInts(int a, int b) {
    return a + b;
  }

  public String concat(String a, String b) {
    return a + b;
  }

  public long sum(int[] xs) {
    long s = 0;
    for (int x : xs) s += x;
    return s;
  }

  public double half(double x) {
    return x / 2;
  }

  public boolean not(boolean b) {
    return !b;
  }

  public int bytesLength(byte[] b) {
    return b.length;
  }

  public void fail(String message) {
    throw new IllegalStateException(message);
  }

  public void failNull() {
    throw new UnsupportedOperationException();
  }

  public long sleep(long ms) throws InterruptedException {
    Thread.sleep(ms);
    return ms;
  }

  /** Appends x to the caller's (shared) list: the caller sees the change. */
  public int append(List<Object> l, Object x) {
    l.add(x);
    return l.size();
  }

  public boolean same(Object a, Object b) {
    return a == b;
  }

  public long incr() {
    return counter.incrementAndGet();
  }

  public void put(String k, Object v) {
    store.put(k, v);
  }

  public Object get(String k) {
    return store.get(k);
  }

  public long big() {
    return 1L << 40;
  }

  public List<Object> makeList(int n) {
    List<Object> l = new ArrayList<>();
    for (int i = 0; i < n; i++) l.add(i);
    return l;
  }

  public Map<String, Object> makeMap() {
    return Map.of("a", 1, "b", List.of("x", "y"));
  }

  public Employee employee(String name, double salary) {
    return new Employee(name, salary);
  }

  public double salaryOf(Employee e) {
    return e.salary;
  }

  /** The sum of salaries, from private copies of the shared Employees (@ByValue). */
  public double payroll(@ByValue List<Employee> staff) {
    double t = 0;
    for (Employee e : staff) {
      if (SharedMemory.isObjectShared(e)) throw new IllegalStateException("not a private copy");
      t += e.salary;
    }
    return t;
  }

  public String[] strings(String[] xs) {
    return xs;
  }

  public List<String> stringList(List<String> xs) {
    return new ArrayList<>(xs);
  }

  /** A private deep copy of a shared value (lists as ArrayLists): the reply is built from it. */
  public Object privateCopy(Object x) {
    if (!(x instanceof List)) return x;
    List<Object> l = new ArrayList<>();
    for (Object e : (List<?>) x) l.add(privateCopy(e));
    return l;
  }

  /** A reply that cannot be stored: a string with a lone surrogate (in a String[], in a list, alone). */
  public Object loneSurrogate(int kind) {
    if (kind == 0) return new String[] {"ok", "x\uD800y"};
    if (kind == 1) return new ArrayList<>(List.of("ok", "x\uDC00"));
    return "\uD800";
  }

  public long pid() {
    return ProcessHandle.current().pid();
  }
}
