package demo.tree;

/** {@link Node}'s fields in a class the agent does not map: the private baseline of TreeBench. */
public final class PlainNode {
  public long i;
  public double f;
  public boolean b;
  public String s;
  public PlainNode left;
  public PlainNode right;
}
