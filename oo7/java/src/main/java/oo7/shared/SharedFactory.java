package oo7.shared;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import oo7.Factory;
import oo7.Schema;
import org.colors.SharedMemory;

/**
 * Makes the shared database: objects allocated in the shared heap ({@link SharedMemory#allocate},
 * bound instances of the {@code @Shared} classes) and shared lists. Nothing else may use the
 * objects while it runs (no locks: they are not published yet).
 */
public final class SharedFactory implements Factory {
  // The current composite part's parts, each with the connections that end at it, in the order
  // made: each part's from_ list is built once its composite part's connections are all made,
  // after them, so that the lists T1 never reads lie after the objects it does, not between them
  // (the C++ loader does the same, oo7/README.md).
  private final Map<AtomicPart, List<Connection>> incoming = new IdentityHashMap<>();
  private final List<AtomicPart> pending = new ArrayList<>();

  public SharedFactory() {
    SharedClasses.register();
  }

  @SuppressWarnings("unchecked")
  private static <T> List<T> list(int capacity) {
    return (List<T>) SharedMemory.allocate(List.class, capacity);
  }

  @Override
  public Module module(long id, String type, long buildDate) {
    Module m = SharedMemory.allocate(Module.class);
    m.id = id;
    m.type = type;
    m.buildDate = buildDate;
    return m;
  }

  @Override
  public CompositePart compositePart(long id, String type, long buildDate, String document) {
    finishComposite();
    CompositePart c = SharedMemory.allocate(CompositePart.class);
    c.id = id;
    c.type = type;
    c.buildDate = buildDate;
    c.document = document;
    c.parts = list(20);
    c.usedIn = list(4);
    return c;
  }

  @Override
  public AtomicPart atomicPart(long id, String type, long buildDate, long x, long y, Schema.CompositePart partOf) {
    AtomicPart p = SharedMemory.allocate(AtomicPart.class);
    p.id = id;
    p.x = x;
    p.y = y;
    p.buildDate = buildDate;
    p.type = type;
    p.to = list(3);
    pending.add(p);
    incoming.put(p, new ArrayList<>(4));
    CompositePart c = (CompositePart) partOf;
    p.partOf = c;
    c.parts.add(p);
    return p;
  }

  @Override
  public void setRootPart(Schema.CompositePart c, Schema.AtomicPart root) {
    ((CompositePart) c).rootPart = (AtomicPart) root;
  }

  @Override
  public Connection connection(long id, String type, long length, Schema.AtomicPart from, Schema.AtomicPart to) {
    Connection c = SharedMemory.allocate(Connection.class);
    AtomicPart f = (AtomicPart) from;
    AtomicPart t = (AtomicPart) to;
    c.id = id;
    c.type = type;
    c.length = length;
    c.from_ = f;
    c.to = t;
    f.to.add(c);
    incoming.get(t).add(c);
    return c;
  }

  @Override
  public ComplexAssembly complexAssembly(long id, String type, long buildDate, Schema.ComplexAssembly superAssembly) {
    finishComposite();
    ComplexAssembly a = SharedMemory.allocate(ComplexAssembly.class);
    ComplexAssembly sup = (ComplexAssembly) superAssembly;
    a.id = id;
    a.type = type;
    a.buildDate = buildDate;
    a.superAssembly = sup;
    a.subAssemblies = list(3);
    if (sup != null) sup.subAssemblies.add(a);
    return a;
  }

  @Override
  public BaseAssembly baseAssembly(long id, String type, long buildDate, Schema.ComplexAssembly superAssembly) {
    finishComposite();
    BaseAssembly b = SharedMemory.allocate(BaseAssembly.class);
    ComplexAssembly sup = (ComplexAssembly) superAssembly;
    b.id = id;
    b.type = type;
    b.buildDate = buildDate;
    b.superAssembly = sup;
    b.components = list(3);
    sup.subAssemblies.add(b);
    return b;
  }

  @Override
  public void addComponent(Schema.BaseAssembly b, Schema.CompositePart c) {
    ((BaseAssembly) b).components.add((CompositePart) c);
    ((CompositePart) c).usedIn.add((BaseAssembly) b);
  }

  @Override
  public void setDesignRoot(Schema.Module m, Schema.ComplexAssembly root) {
    ((Module) m).designRoot = (ComplexAssembly) root;
  }

  @Override
  public Database database(Schema.Module module, List<Schema.CompositePart> composites, List<Schema.Assembly> assemblies) {
    finishComposite();
    Database d = SharedMemory.allocate(Database.class);
    d.module = (Module) module;
    List<CompositePart> cs = list(composites.size());
    for (Schema.CompositePart c : composites) cs.add((CompositePart) c);
    d.composites = cs;
    List<Schema.Assembly> as = list(assemblies.size());
    for (Schema.Assembly a : assemblies) as.add(a);
    d.assemblies = as;
    return d;
  }

  /** Gives the pending parts their from_ lists (see {@link #incoming}). */
  private void finishComposite() {
    for (AtomicPart p : pending) {
      List<Connection> in = incoming.get(p);
      List<Connection> from = list(in.size());
      from.addAll(in);
      p.from_ = from;
    }
    pending.clear();
    incoming.clear();
  }
}
