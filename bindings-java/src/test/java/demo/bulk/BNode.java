package demo.bulk;

import java.util.List;

/** A plain (unmapped) user class with fields of every kind, for the bulk copy tests. */
public class BNode {
  public long l;
  public int i;
  public short sh;
  public byte by;
  public char ch;
  public double d;
  public float fl;
  public boolean z;
  public String s;
  public byte[] bin;
  public Long boxed;
  public Double boxedD;
  public Object any;
  public BNode a;
  public BNode b;
  public BNode[] arr;
  public long[] longs;
  public List<Object> list;
  public transient int notCopied = 7;
  public int initialised = 42;  // a field the shared versions made elsewhere may lack
}
