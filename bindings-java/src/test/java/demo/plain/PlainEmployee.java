package demo.plain;

/** The same fields as demo.staff.Employee, not mapped: the agent leaves its accesses alone. */
public class PlainEmployee {
  public String name;
  public double salary;
  public int age;
}
