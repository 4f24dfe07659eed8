package oo7.plain;

import java.util.List;
import oo7.Schema;

/** oo7.CompositePart, a plain Java object. */
public class CompositePart implements Schema.CompositePart {
  public long id;
  public String type;
  public long buildDate;
  public String document;
  public AtomicPart rootPart;
  public List<AtomicPart> parts;
  public List<BaseAssembly> usedIn;

  @Override public long id() { return id; }
  @Override public String type() { return type; }
  @Override public long buildDate() { return buildDate; }
  @Override public String document() { return document; }
  @Override public AtomicPart rootPart() { return rootPart; }
  @Override public List<AtomicPart> parts() { return parts; }
  @Override public List<BaseAssembly> usedIn() { return usedIn; }
}
