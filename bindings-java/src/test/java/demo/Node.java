package demo;

import java.util.ArrayList;
import java.util.Map;

/** Fields of many kinds. */
public class Node {
  public long value;
  public Node next;
  public Object any;
  public int[] nums;
  public String[] names;
  public ArrayList<Object> list;
  public Map<Object, Object> map;
  public byte b;
  public short s;
  public char c;
  public float f;
  public boolean z;
  public Long boxed;
  public byte[] bin;
  public Point point;
}
