package oo7.shared;

import java.util.List;
import oo7.Schema;
import org.colors.Shared;

/** oo7.AtomicPart, a shared class (bound by the colors agent: field accesses read and write the shared object). */
@Shared(name = "oo7.AtomicPart")
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
