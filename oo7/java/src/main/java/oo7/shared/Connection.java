package oo7.shared;

import oo7.Schema;
import org.colors.Shared;

/** oo7.Connection, a shared class (bound by the colors agent: field accesses read and write the shared object). */
@Shared(name = "oo7.Connection")
public class Connection implements Schema.Connection {
  public long id;
  public String type;
  public long length;
  public AtomicPart from_;
  public AtomicPart to;

  @Override public long id() { return id; }
  @Override public String type() { return type; }
  @Override public long length() { return length; }
  @Override public AtomicPart from_() { return from_; }
  @Override public AtomicPart to() { return to; }
}
