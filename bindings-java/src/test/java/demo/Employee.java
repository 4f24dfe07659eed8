package demo;

import java.util.List;

/** The paper's Employee, as a plain Java class (shared class name demo.Employee). */
public class Employee {
  public static int instances;  // static: not mapped
  public String name;
  public double salary;
  public Employee manager;
  public List<Object> tags;
  public int age;
  public transient int cache;  // transient: not mapped

  public Employee() {}

  public Employee(String name, double salary) {
    this.name = name;
    this.salary = salary;
  }
}
