package oo7;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import oo7.plain.PlainFactory;
import oo7.plain.PlainOps;
import oo7.shared.SharedFactory;
import oo7.shared.SharedOps;
import org.colors.SharedMemory;
import org.colors.SharedType;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The small database, seed 42, built in a fresh server and as POJOs: the SPEC's three values on
 * both, the shared schema, and every operation once on each with the same results. The databases
 * built once for the class are only read (a test that changes one restores it); tests that run
 * updates build their own.
 */
@ExtendWith(Oo7Server.class)
class SmallDatabaseTest {
  private static Schema.Database shared;
  private static Schema.Database mine;

  @BeforeAll
  static void build() {
    shared = freshShared();
    mine = freshPrivate();
  }

  /** A new shared database, published in oo7.small and read back from the repository. */
  private static Schema.Database freshShared() {
    Schema.Database built = Builder.build(Params.SMALL, 42, new SharedFactory());
    SharedMemory.findOrCreateRepository("oo7.small").set(built);
    return Load.published(Params.SMALL);
  }

  private static Schema.Database freshPrivate() {
    return Builder.build(Params.SMALL, 42, new PlainFactory());
  }

  @Test
  void generatorMatchesSplitMix64ReferenceValues() {
    // SplitMix64 with seed 0: the reference outputs of Vigna's splitmix64.c.
    SplitMix64 r = new SplitMix64(0);
    assertEquals(0xe220a8397b1dcdafL, r.next());
    assertEquals(0x6e789e6aa1b965f4L, r.next());
    assertEquals(0x06c45d188009454fL, r.next());
  }

  @Test
  void sharedAndPrivateDatabasesGiveTheSpecValues() {
    assertEquals(Checks.SMALL_42, Checks.summary(shared, new SharedOps()));
    assertEquals(Checks.SMALL_42, Checks.summary(mine, new PlainOps()));
    assertTrue(shared instanceof oo7.shared.Database);
    assertTrue(SharedMemory.isObjectShared(shared));
    assertFalse(SharedMemory.isObjectShared(mine));
  }

  @Test
  void sharedClassesHaveTheSpecFieldsInOrder() {
    Schema.CompositePart c = shared.composites().get(0);
    Schema.AtomicPart p = c.rootPart();
    Schema.ComplexAssembly root = shared.module().designRoot();
    Schema.Assembly base = shared.assemblies().get(shared.assemblies().size() - 1);
    Map<Object, List<String>> expected = Map.of(
        shared, List.of("module", "composites", "assemblies"),
        shared.module(), List.of("id", "type", "buildDate", "designRoot"),
        root, List.of("id", "type", "buildDate", "superAssembly", "subAssemblies"),
        base, List.of("id", "type", "buildDate", "superAssembly", "components"),
        c, List.of("id", "type", "buildDate", "document", "rootPart", "parts", "usedIn"),
        p, List.of("id", "x", "y", "buildDate", "type", "to", "from_", "partOf"),
        p.to().get(0), List.of("id", "type", "length", "from_", "to"));
    for (Map.Entry<Object, List<String>> e : expected.entrySet()) {
      SharedType t = SharedMemory.getSharedType(e.getKey());
      assertEquals("oo7." + e.getKey().getClass().getSimpleName(), t.name());
      assertEquals(e.getValue(), t.fields().stream().map(SharedType.Field::name).collect(Collectors.toList()), t.name());
    }
    SharedType ap = SharedMemory.getSharedType(p);
    assertEquals(SharedType.Kind.INTEGER, ap.field("x").kind());
    assertEquals(SharedType.Kind.STRING, ap.field("type").kind());
    assertEquals(SharedType.Kind.LIST, ap.field("to").kind());
    assertEquals(SharedType.Kind.STRING, SharedMemory.getSharedType(c).field("document").kind());
  }

  @Test
  void sharedReadsSeeWritesMadeThroughAnotherPath() {
    // The shared model reads the heap on every access: a write through the explicit view is seen
    // by the bound instance, and the operations see it too.
    Schema.AtomicPart p = shared.composites().get(0).parts().get(0);
    long x = p.x();
    SharedMemory.sharedView(p).set("x", x + 1);
    assertEquals(x + 1, p.x());
    OpResult q7 = new SharedOps().q7(shared);
    assertEquals(new PlainOps().q7(mine).check() + 1, q7.check());
    SharedMemory.sharedView(p).set("x", x);
  }

  @Test
  void everyOperationAgreesOnBothModels() {
    Schema.Database shared = freshShared();
    Schema.Database mine = freshPrivate();
    Ops so = new SharedOps();
    Ops po = new PlainOps();
    for (String op : Ops.NAMES) {
      OpResult s = so.run(op, shared);
      OpResult m = po.run(op, mine);
      assertEquals(m, s, op);
      assertTrue(s.count() > 0, op);
    }
    OpResult t1 = po.t1(mine);
    assertEquals(43740, t1.count());
    assertEquals(Checks.SMALL_42.visitOrder(), t1.check());
    assertEquals(new OpResult(2187, po.t6(mine).check()), so.t6(shared));
    assertEquals(10000, po.q7(mine).count());
  }

  @Test
  void t2SwapsEveryVisitedPartAsOftenAsItsCompositeIsVisited() {
    Schema.Database shared = freshShared();
    Schema.Database mine = freshPrivate();
    Schema.Database generated = freshPrivate();
    Ops so = new SharedOps();
    Ops po = new PlainOps();
    // T2a: the root part of each composite, once per visit of the composite.
    so.t2a(shared);
    po.t2a(mine);
    SwapCheck.Swaps roots = (c, j) -> j == 0 ? SwapCheck.visitsOf(generated, c) : 0;
    assertEquals(List.of(), SwapCheck.mismatches(generated, shared, roots));
    assertEquals(List.of(), SwapCheck.mismatches(generated, mine, roots));
    so.t2a(shared);
    po.t2a(mine);
    // T2b: every part of the composite (all are reachable from the root), once per visit.
    so.t2b(shared);
    po.t2b(mine);
    SwapCheck.Swaps all = (c, j) -> SwapCheck.visitsOf(generated, c);
    assertEquals(List.of(), SwapCheck.mismatches(generated, shared, all));
    assertEquals(List.of(), SwapCheck.mismatches(generated, mine, all));
    // T2c: four swaps per visit, so the values are where T2b left them.
    so.t2c(shared);
    po.t2c(mine);
    assertEquals(List.of(), SwapCheck.mismatches(generated, shared, all));
    assertEquals(List.of(), SwapCheck.mismatches(generated, mine, all));
    assertEquals(Checks.fingerprint(mine), Checks.fingerprint(shared));
    assertNotEquals(Checks.SMALL_42.fingerprint(), Checks.fingerprint(shared));
  }

  @Test
  void swapCheckReportsOneLostSwap() {
    Schema.Database mine = freshPrivate();
    Schema.Database generated = freshPrivate();
    new PlainOps().t2b(mine);
    SwapCheck.Swaps all = (c, j) -> SwapCheck.visitsOf(generated, c);
    assertEquals(List.of(), SwapCheck.mismatches(generated, mine, all));
    // Undo one swap of one part, as an unlocked concurrent T2b can lose one.
    oo7.plain.AtomicPart p = ((oo7.plain.Database) mine).composites.get(7).parts.get(3);
    long t = p.x;
    p.x = p.y;
    p.y = t;
    List<String> bad = SwapCheck.mismatches(generated, mine, all);
    assertEquals(1, bad.size(), bad.toString());
    assertTrue(bad.get(0).startsWith("part " + p.id + " "), bad.get(0));
  }

  @Test
  void boundInstancesAreTheSameObjectForTheSameSharedObject() {
    Schema.CompositePart c = shared.composites().get(3);
    assertSame(c, c.rootPart().partOf());
  }
}
