package demo.staff;

import org.colors.Shared;

/**
 * The paper's Employee as a mapped class: with the colors agent, its instances may be bound to
 * shared objects of the shared class demo.staff.Employee, and every field access reads and writes
 * the shared object.
 */
@Shared
public class Employee {
  public static int instances;  // static: not mapped
  public String name;
  public double salary;
  public Employee manager;
  public int age;
  public long id;
  public boolean active;
  public short level;
  public byte grade;
  public char initial;
  public float bonus;
  public Object extra;          // shared type any
  public transient int cache;   // transient: private to each Java object, not mapped

  public Employee() {}

  public Employee(String name, double salary) {
    this.name = name;
    this.salary = salary;
  }

  /** A field access inside the class. */
  public void raise(double amount) {
    salary += amount;
  }

  public double salary() {
    return salary;
  }
}
