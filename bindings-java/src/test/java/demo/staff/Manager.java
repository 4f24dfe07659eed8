package demo.staff;

/** A subclass of a mapped class: mapped too (shared class demo.staff.Manager). */
public class Manager extends Employee {
  public int reports;

  public Manager() {}

  public int addReport() {
    return ++reports;
  }
}
