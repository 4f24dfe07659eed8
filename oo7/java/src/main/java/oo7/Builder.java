package oo7;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** The SPEC's generator run over a {@link Factory}: the same draws in the same order for every model. */
public final class Builder {
  private final Params p;
  private final SplitMix64 rng;
  private final Factory f;
  private long nextAssemblyId = 1;
  private final List<Schema.CompositePart> composites = new ArrayList<>();
  private final List<Schema.Assembly> assemblies = new ArrayList<>();

  private Builder(Params p, long seed, Factory f) {
    this.p = p;
    this.rng = new SplitMix64(seed);
    this.f = f;
  }

  /** Builds the database of size {@code p} from {@code seed} with {@code f}'s objects. */
  public static Schema.Database build(Params p, long seed, Factory f) {
    return new Builder(p, seed, f).build();
  }

  /** The text "I am the documentation for composite part #c. " repeated and cut to {@code size} bytes. */
  public static String document(long c, int size) {
    String unit = "I am the documentation for composite part #" + c + ". ";
    StringBuilder sb = new StringBuilder(size + unit.length());
    while (sb.length() < size) sb.append(unit);
    sb.setLength(size);  // ASCII: characters are bytes
    assert sb.toString().getBytes(StandardCharsets.UTF_8).length == size;
    return sb.toString();
  }

  private Schema.Database build() {
    Schema.Module module = f.module(1, rng.type(), rng.date());
    long connId = 1;
    int n = p.numAtomicPerComp();
    for (int c = 1; c <= p.numCompPerModule(); c++) {
      Schema.CompositePart cp = f.compositePart(c, rng.type(), rng.date(), document(c, p.documentSize()));
      Schema.AtomicPart[] parts = new Schema.AtomicPart[n];
      for (int j = 0; j < n; j++) {
        long id = (long) (c - 1) * n + j + 1;
        String type = rng.type();
        long date = rng.date();
        long x = rng.rand(100000);
        long y = rng.rand(100000);
        parts[j] = f.atomicPart(id, type, date, x, y, cp);
      }
      f.setRootPart(cp, parts[0]);
      for (int j = 0; j < n; j++) {
        for (int k = 0; k < p.numConnPerAtomic(); k++) {
          int target = k == 0 ? (j + 1) % n : (int) rng.rand(n);
          String type = rng.type();
          long length = 1 + rng.rand(100000);
          f.connection(connId++, type, length, parts[j], parts[target]);
        }
      }
      composites.add(cp);
    }
    Schema.Assembly root = assembly(p.numAssmLevels(), null);
    f.setDesignRoot(module, (Schema.ComplexAssembly) root);
    return f.database(module, composites, assemblies);
  }

  private Schema.Assembly assembly(int level, Schema.ComplexAssembly sup) {
    long id = nextAssemblyId++;
    String type = rng.type();
    long date = rng.date();
    if (level > 1) {
      Schema.ComplexAssembly a = f.complexAssembly(id, type, date, sup);
      assemblies.add(a);
      for (int i = 0; i < p.numAssmPerAssm(); i++) assembly(level - 1, a);
      return a;
    }
    Schema.BaseAssembly b = f.baseAssembly(id, type, date, sup);
    assemblies.add(b);
    for (int i = 0; i < p.numCompPerAssm(); i++) {
      f.addComponent(b, composites.get((int) rng.rand(p.numCompPerModule())));
    }
    return b;
  }
}
