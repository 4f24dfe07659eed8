package oo7.plain;

import java.util.ArrayList;
import java.util.List;
import oo7.Factory;
import oo7.Schema;

/** Makes the private baseline: POJOs with ArrayLists. */
public final class PlainFactory implements Factory {
  @Override
  public Module module(long id, String type, long buildDate) {
    Module m = new Module();
    m.id = id;
    m.type = type;
    m.buildDate = buildDate;
    return m;
  }

  @Override
  public CompositePart compositePart(long id, String type, long buildDate, String document) {
    CompositePart c = new CompositePart();
    c.id = id;
    c.type = type;
    c.buildDate = buildDate;
    c.document = document;
    c.parts = new ArrayList<>();
    c.usedIn = new ArrayList<>();
    return c;
  }

  @Override
  public AtomicPart atomicPart(long id, String type, long buildDate, long x, long y, Schema.CompositePart partOf) {
    AtomicPart p = new AtomicPart();
    p.id = id;
    p.x = x;
    p.y = y;
    p.buildDate = buildDate;
    p.type = type;
    p.to = new ArrayList<>();
    p.from_ = new ArrayList<>();
    p.partOf = (CompositePart) partOf;
    p.partOf.parts.add(p);
    return p;
  }

  @Override
  public void setRootPart(Schema.CompositePart c, Schema.AtomicPart root) {
    ((CompositePart) c).rootPart = (AtomicPart) root;
  }

  @Override
  public Connection connection(long id, String type, long length, Schema.AtomicPart from, Schema.AtomicPart to) {
    Connection c = new Connection();
    c.id = id;
    c.type = type;
    c.length = length;
    c.from_ = (AtomicPart) from;
    c.to = (AtomicPart) to;
    c.from_.to.add(c);
    c.to.from_.add(c);
    return c;
  }

  @Override
  public ComplexAssembly complexAssembly(long id, String type, long buildDate, Schema.ComplexAssembly superAssembly) {
    ComplexAssembly a = new ComplexAssembly();
    a.id = id;
    a.type = type;
    a.buildDate = buildDate;
    a.superAssembly = (ComplexAssembly) superAssembly;
    a.subAssemblies = new ArrayList<>();
    if (a.superAssembly != null) a.superAssembly.subAssemblies.add(a);
    return a;
  }

  @Override
  public BaseAssembly baseAssembly(long id, String type, long buildDate, Schema.ComplexAssembly superAssembly) {
    BaseAssembly b = new BaseAssembly();
    b.id = id;
    b.type = type;
    b.buildDate = buildDate;
    b.superAssembly = (ComplexAssembly) superAssembly;
    b.components = new ArrayList<>();
    b.superAssembly.subAssemblies.add(b);
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
    Database d = new Database();
    d.module = (Module) module;
    d.composites = new ArrayList<>();
    for (Schema.CompositePart c : composites) d.composites.add((CompositePart) c);
    d.assemblies = new ArrayList<>(assemblies);
    return d;
  }
}
