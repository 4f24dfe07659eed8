package demo.bulk;

import org.colors.Shared;

/** A mapped ({@code @Shared}) class for the bulk copy tests: private instances copy to bound ones. */
@Shared
public class MNode {
  public long l;
  public double d;
  public boolean z;
  public String s;
  public MNode left;
  public MNode right;
  public BNode plain;
}
