package demo.staff;

import org.colors.Shared;

/** A mapped class with a copy constructor that reads the original inside its this(...) call. */
@Shared
public class Copied {
  public String name;
  public double salary;

  public Copied(String name, double salary) {
    this.name = name;
    this.salary = salary;
  }

  public Copied(Copied o) {
    this(o.name, o.salary);
  }
}
