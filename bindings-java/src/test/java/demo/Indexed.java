package demo;

import java.util.NavigableMap;

/** A class with an index field (as OO7's database holds its indexes): maps to the sortedmap type. */
public class Indexed {
  public NavigableMap<Object, Object> byId;
  public long count;
}
