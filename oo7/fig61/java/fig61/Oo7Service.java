package fig61;

import java.util.HashMap;
import java.util.List;
import oo7.Schema;
import oo7.shared.AtomicPart;
import oo7.shared.BaseAssembly;
import oo7.shared.ComplexAssembly;
import oo7.shared.CompositePart;
import oo7.shared.Connection;
import oo7.shared.Database;
import oo7.shared.Module;

/**
 * The OO7 database of this server, reached by handle: one public method per database-object
 * access of T1 (the SPEC's "object access": one read of a field through a reference, a list-valued
 * field counting once), and the hand-batched {@link #composite}. Every method reads the shared
 * objects (bound {@code @Shared} classes: each field access reads the heap). Handles are
 * resolved through tables indexed by id, built once from the database's lists.
 *
 * <p>Only methods whose parameters are all {@code long} are public: {@link PlanExecutor} serves
 * exactly these in aggregated plans.
 */
public final class Oo7Service {
  private final Module module;
  private final Object[] assemblies;      // by id: ComplexAssembly or BaseAssembly
  private final CompositePart[] composites;
  private final AtomicPart[] parts;
  private final Connection[] connections;
  final Stats stats = new Stats();

  Oo7Service(Database db) {
    module = db.module;
    List<Schema.Assembly> as = db.assemblies;
    assemblies = new Object[as.size() + 1];
    for (Schema.Assembly a : as) assemblies[(int) a.id()] = a;
    List<CompositePart> cs = db.composites;
    composites = new CompositePart[cs.size() + 1];
    int nParts = 0, nConns = 0;
    for (CompositePart c : cs) {
      composites[(int) c.id] = c;
      for (AtomicPart p : c.parts) {
        nParts = Math.max(nParts, (int) p.id);
        for (Connection k : p.to) nConns = Math.max(nConns, (int) k.id);
      }
    }
    parts = new AtomicPart[nParts + 1];
    connections = new Connection[nConns + 1];
    for (CompositePart c : cs) {
      for (AtomicPart p : c.parts) {
        parts[(int) p.id] = p;
        for (Connection k : p.to) connections[(int) k.id] = k;
      }
    }
  }

  long moduleHandle() {
    return Handles.of(module);
  }

  // ---- one access each -----------------------------------------------------------------------

  /** Module.designRoot. */
  public long designRoot(long module) {
    stats.call();
    return Handles.of(resolveModule(module).designRoot);
  }

  /** ComplexAssembly.subAssemblies. */
  public long[] subAssemblies(long assembly) {
    stats.call();
    return handles(resolve(assembly, Handles.COMPLEX, ComplexAssembly.class).subAssemblies);
  }

  /** BaseAssembly.components. */
  public long[] components(long assembly) {
    stats.call();
    return handles(resolve(assembly, Handles.BASE, BaseAssembly.class).components);
  }

  /** CompositePart.rootPart. */
  public long rootPart(long composite) {
    stats.call();
    return Handles.of(resolve(composite, Handles.COMPOSITE, CompositePart.class).rootPart);
  }

  /** AtomicPart.to: the part's outgoing connections. */
  public long[] outgoing(long part) {
    stats.call();
    return handles(resolve(part, Handles.PART, AtomicPart.class).to);
  }

  /** Connection.to: the connection's target part. */
  public long target(long connection) {
    stats.call();
    return Handles.of(resolve(connection, Handles.CONNECTION, Connection.class).to);
  }

  /** A null call (measures the round trip). */
  public long ping(long x) {
    stats.call();
    return x;
  }

  // ---- hand-batched --------------------------------------------------------------------------

  /**
   * What T1 needs of a composite part, in one call: {@code [root index, n, id_0 .. id_n-1,
   * degree_0 .. degree_n-1, targets...]}, parts in the composite's order, each part's
   * connections' target parts as indexes into that order.
   */
  public long[] composite(long composite) {
    stats.call();
    Graph g = graph(resolve(composite, Handles.COMPOSITE, CompositePart.class));
    int n = g.ids.length;
    long[] out = new long[2 + 2 * n + g.targets.length];
    out[0] = g.root;
    out[1] = n;
    for (int i = 0; i < n; i++) {
      out[2 + i] = g.ids[i];
      out[2 + n + i] = g.degree[i];
    }
    for (int i = 0; i < g.targets.length; i++) out[2 + 2 * n + i] = g.targets[i];
    return out;
  }

  /** A composite part's graph (the hand-batched reply, before either transport encodes it). */
  record Graph(int root, long[] ids, int[] degree, int[] targets) {}

  Graph compositeGraph(long composite) {
    stats.call();
    return graph(resolve(composite, Handles.COMPOSITE, CompositePart.class));
  }

  private static Graph graph(CompositePart c) {
    List<AtomicPart> ps = c.parts;
    int n = ps.size();
    long[] ids = new long[n];
    AtomicPart[] local = new AtomicPart[n];
    HashMap<Long, Integer> index = new HashMap<>(2 * n);
    int i = 0;
    for (AtomicPart p : ps) {
      local[i] = p;
      ids[i] = p.id;
      index.put(ids[i], i);
      i++;
    }
    int[] degree = new int[n];
    int[] targets = new int[n * 4];
    int t = 0;
    for (i = 0; i < n; i++) {
      List<Connection> to = local[i].to;
      degree[i] = to.size();
      for (Connection k : to) {
        Integer j = index.get(k.to.id);
        if (j == null) throw new IllegalStateException("connection " + k.id + " leaves composite part " + c.id);
        if (t == targets.length) targets = java.util.Arrays.copyOf(targets, 2 * t);
        targets[t++] = j;
      }
    }
    Integer root = index.get(c.rootPart.id);
    if (root == null) throw new IllegalStateException("composite part " + c.id + ": root part not among its parts");
    return new Graph(root, ids, degree, java.util.Arrays.copyOf(targets, t));
  }

  // ---- handles -------------------------------------------------------------------------------

  private static long[] handles(List<?> l) {
    long[] out = new long[l.size()];
    int i = 0;
    for (Object o : l) out[i++] = Handles.of(o);
    return out;
  }

  private Module resolveModule(long h) {
    if (Handles.tag(h) != Handles.MODULE || Handles.id(h) != module.id) throw bad(h, "module");
    return module;
  }

  private <T> T resolve(long h, int tag, Class<T> cls) {
    if (Handles.tag(h) != tag) throw bad(h, cls.getSimpleName());
    int id = Handles.id(h);
    Object[] table = switch (tag) {
      case Handles.COMPLEX, Handles.BASE -> assemblies;
      case Handles.COMPOSITE -> composites;
      case Handles.PART -> parts;
      default -> connections;
    };
    if (id <= 0 || id >= table.length || !cls.isInstance(table[id])) throw bad(h, cls.getSimpleName());
    return cls.cast(table[id]);
  }

  private static IllegalArgumentException bad(long h, String what) {
    return new IllegalArgumentException("handle 0x" + Long.toHexString(h) + " does not name a " + what);
  }
}
