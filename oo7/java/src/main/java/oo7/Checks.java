package oo7;

import java.util.List;

/** The SPEC's untimed checks over either model, read through {@link Schema}. */
public final class Checks {
  private Checks() {}

  /** The three values the loaders print: T1's visit count, the fingerprint and the visit order. */
  public record Summary(long visits, long fingerprint, long visitOrder) {
    public String lines() {
      return "visits " + visits + "\nfingerprint " + Fold.hex(fingerprint) + "\nvisit-order " + Fold.hex(visitOrder);
    }
  }

  /** The SPEC's expected values for seed 42, small. */
  public static final Summary SMALL_42 = new Summary(43740, 0xe0381c302e05b74aL, 0x2c0f1a48f8151d7dL);

  /** The expected summary for a size and seed, or null when the SPEC gives none. */
  public static Summary expected(Params p, long seed) {
    return p == Params.SMALL && seed == 42 ? SMALL_42 : null;
  }

  /** Visits and visit order by running T1 with {@code ops}, and the fingerprint of {@code db}. */
  public static Summary summary(Schema.Database db, Ops ops) {
    OpResult t1 = ops.t1(db);
    return new Summary(t1.count(), fingerprint(db), t1.check());
  }

  /** The SPEC's fingerprint: module, composite parts with their parts and connections, assemblies in preorder. */
  public static long fingerprint(Schema.Database db) {
    Fold f = new Fold();
    Schema.Module m = db.module();
    f.add(m.id()).add(m.type()).add(m.buildDate()).add(m.designRoot().id());
    for (Schema.CompositePart c : db.composites()) {
      f.add(c.id()).add(c.type()).add(c.buildDate()).add(c.document()).add(c.rootPart().id());
      List<? extends Schema.BaseAssembly> usedIn = c.usedIn();
      f.add(usedIn.size());
      for (Schema.BaseAssembly b : usedIn) f.add(b.id());
      for (Schema.AtomicPart p : c.parts()) {
        f.add(p.id()).add(p.x()).add(p.y()).add(p.buildDate()).add(p.type()).add(p.partOf().id());
        List<? extends Schema.Connection> to = p.to();
        List<? extends Schema.Connection> from = p.from_();
        f.add(to.size()).add(from.size());
        for (Schema.Connection k : to) f.add(k.id()).add(k.type()).add(k.length()).add(k.from_().id()).add(k.to().id());
        for (Schema.Connection k : from) f.add(k.id());
      }
    }
    for (Schema.Assembly a : db.assemblies()) {
      Schema.ComplexAssembly sup = a.superAssembly();
      f.add(a.id()).add(a.type()).add(a.buildDate()).add(sup == null ? 0 : sup.id());
      if (a instanceof Schema.ComplexAssembly) {
        List<? extends Schema.Assembly> subs = ((Schema.ComplexAssembly) a).subAssemblies();
        f.add(2).add(subs.size());
        for (Schema.Assembly s : subs) f.add(s.id());
      } else {
        List<? extends Schema.CompositePart> comps = ((Schema.BaseAssembly) a).components();
        f.add(3).add(comps.size());
        for (Schema.CompositePart k : comps) f.add(k.id());
      }
    }
    return f.value();
  }
}
