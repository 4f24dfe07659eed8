package demo;

/** A subclass: superclass fields come first in its shared class. */
public class Manager extends Employee {
  public long reports;

  public Manager() {}
}
