package demo.staff;

import org.colors.Shared;

/** Holds an inner (non-static) mapped class, whose instances keep their Outer in a hidden field: refused. */
public class Outer {
  public int base = 10;

  /** An inner class: its hidden this$0 cannot be shared. */
  @Shared
  public class Item {
    public int n;

    public int total() {
      return base + n;
    }
  }
}
