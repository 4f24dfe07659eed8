package oo7.plain;

import oo7.Schema;

/** oo7.Connection, a plain Java object. */
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
