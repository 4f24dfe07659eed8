package demo.staff;

import org.colors.Shared;

/** A mapped class with an explicit shared class name. */
@Shared(name = "staff.NamedThing")
public class Named {
  public int x;
  public String label;
}
