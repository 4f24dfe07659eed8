package demo.staff;

import java.util.ArrayList;
import java.util.List;
import org.colors.Shared;

/** A mapped class whose fields are final and set by its constructor (an immutable value class). */
@Shared
public class Frozen {
  public final long x;
  public final String label;
  public final List<Object> items = new ArrayList<>();

  public Frozen(long x, String label) {
    this.x = x;
    this.label = label;
  }
}
