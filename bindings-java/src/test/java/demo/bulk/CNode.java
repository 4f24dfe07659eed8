package demo.bulk;

import java.util.List;

/** A plain user class with a self reference and a container field (read by the per-object path). */
public class CNode {
  public CNode next;
  public List<Object> tags;
}
