package oo7.plain;

import java.util.List;
import oo7.Schema;

/** oo7.AtomicPart, a plain Java object. */
public class AtomicPart implements Schema.AtomicPart {
  public long id;
  public long x;
  public long y;
  public long buildDate;
  public String type;
  public List<Connection> to;
  public List<Connection> from_;
  public CompositePart partOf;

  @Override public long id() { return id; }
  @Override public long x() { return x; }
  @Override public long y() { return y; }
  @Override public long buildDate() { return buildDate; }
  @Override public String type() { return type; }
  @Override public List<Connection> to() { return to; }
  @Override public List<Connection> from_() { return from_; }
  @Override public CompositePart partOf() { return partOf; }
}
