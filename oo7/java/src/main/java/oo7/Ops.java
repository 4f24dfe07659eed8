package oo7;

/**
 * Issue 18's operations over one model's database. Each model implements them over its own
 * classes with direct field accesses (the benchmark times exactly that code); {@code db} must be
 * a database of that model.
 *
 * <ul>
 *   <li>T1: depth-first over the assembly tree from {@code module.designRoot}; at each base
 *       assembly, for each component in order, a depth-first search over the parts from
 *       {@code rootPart} along {@code to} connections, a fresh visited set per composite visit.
 *   <li>T6: T1's assembly walk visiting only each component's {@code rootPart}.
 *   <li>T2a/T2b/T2c: T1 that swaps {@code x}/{@code y} of the root part / of every part visited /
 *       four times per visited part; the shared model does each composite visit in one
 *       transaction.
 *   <li>Q7: all atomic parts over {@code composites[*].parts[*]}: their count and the sum of x.
 * </ul>
 */
public interface Ops {
  OpResult t1(Schema.Database db);

  OpResult t6(Schema.Database db);

  OpResult t2a(Schema.Database db);

  OpResult t2b(Schema.Database db);

  OpResult t2c(Schema.Database db);

  OpResult q7(Schema.Database db);

  /** The names {@link #run} accepts. */
  String[] NAMES = {"t1", "t6", "t2a", "t2b", "t2c", "q7"};

  /** Runs the operation named {@code op} (t1, t6, t2a, t2b, t2c, q7). */
  default OpResult run(String op, Schema.Database db) {
    switch (op) {
      case "t1": return t1(db);
      case "t6": return t6(db);
      case "t2a": return t2a(db);
      case "t2b": return t2b(db);
      case "t2c": return t2c(db);
      case "q7": return q7(db);
      default: throw new IllegalArgumentException("unknown operation '" + op + "': t1, t6, t2a, t2b, t2c or q7");
    }
  }
}
