package demo.bulk;

import java.util.Collection;

/** A class whose list-typed field is given a set (the shared field refuses it), for error tests. */
public class Holder {
  public Collection<Object> items;
  public int[] ints;
}
