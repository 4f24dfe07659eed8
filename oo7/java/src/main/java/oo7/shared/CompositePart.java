package oo7.shared;

import java.util.List;
import oo7.Schema;
import org.colors.Shared;

/** oo7.CompositePart, a shared class (bound by the colors agent: field accesses read and write the shared object). */
@Shared(name = "oo7.CompositePart")
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
