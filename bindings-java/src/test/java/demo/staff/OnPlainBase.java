package demo.staff;

import org.colors.Shared;

/** A mapped class extending a class the agent does not bind: refused, its inherited fields would not be shared. */
@Shared
public class OnPlainBase extends PlainBase {
  public int own;
}
