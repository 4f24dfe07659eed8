package demo.staff;

/** Field accesses of mapped classes from a class that is not mapped itself. */
public final class Outside {
  private Outside() {}

  public static void give(Employee e, double amount) {
    e.salary += amount;
  }

  public static int sumAges(Employee[] es) {
    int s = 0;
    for (Employee e : es) s += e.age;
    return s;
  }
}
