package demo.tree;

import org.colors.Shared;

/**
 * A binary tree node of the shape rpc-bench's colors server uses (bench.ColorsServer.Node): with
 * the colors agent, instances made by {@code SharedMemory.allocate(Node.class)} are bound to shared
 * objects; {@code new Node()} is a private instance. Used by {@code org.colors.TreeBench} and the
 * lifetime tests.
 */
@Shared
public final class Node {
  public long i;
  public double f;
  public boolean b;
  public String s;
  public Node left;
  public Node right;
}
