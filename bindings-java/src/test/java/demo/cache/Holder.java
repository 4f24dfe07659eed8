package demo.cache;

import java.util.List;
import org.colors.Shared;

/** A mapped class with reference fields, for the read cache's tests (org.colors.ReadCacheTest). */
@Shared
public class Holder {
  public long n;
  public Holder next;
  public List<Object> items;
}
