package fig61;

/**
 * The colors rpc endpoint of the server (org.colors.rpc dispatches a call to the public method
 * of its name): the per-access methods of {@link Oo7Service}, the hand-batched
 * {@link #composite}, the aggregated plans ({@link #runPlan}, over {@link PlanExecutor}), and the
 * bookkeeping the client needs (the module's handle, the counters). Each served call is one
 * request in {@link Stats}.
 */
public final class ColorsEndpoint {
  private final Oo7Service db;
  private final PlanExecutor plans;

  ColorsEndpoint(Oo7Service db) {
    this.db = db;
    this.plans = new PlanExecutor(db);
  }

  public long designRoot(long h) {
    long t = System.nanoTime();
    try { return db.designRoot(h); } finally { db.stats.request(t); }
  }

  public long[] subAssemblies(long h) {
    long t = System.nanoTime();
    try { return db.subAssemblies(h); } finally { db.stats.request(t); }
  }

  public long[] components(long h) {
    long t = System.nanoTime();
    try { return db.components(h); } finally { db.stats.request(t); }
  }

  public long rootPart(long h) {
    long t = System.nanoTime();
    try { return db.rootPart(h); } finally { db.stats.request(t); }
  }

  public long[] outgoing(long h) {
    long t = System.nanoTime();
    try { return db.outgoing(h); } finally { db.stats.request(t); }
  }

  public long target(long h) {
    long t = System.nanoTime();
    try { return db.target(h); } finally { db.stats.request(t); }
  }

  public long ping(long x) {
    long t = System.nanoTime();
    try { return db.ping(x); } finally { db.stats.request(t); }
  }

  public long[] composite(long h) {
    long t = System.nanoTime();
    try { return db.composite(h); } finally { db.stats.request(t); }
  }

  /** An aggregated request: the plan's calls run in order (see {@link PlanExecutor}). */
  public Object[] runPlan(long[] plan) {
    long t = System.nanoTime();
    try { return plans.run(plan); } finally { db.stats.request(t); }
  }

  /** The methods a plan can name, in index order. */
  public String[] planMethods() {
    return plans.methodNames();
  }

  /** The module's handle: where T1 starts (the client's root, not an access of T1). */
  public long module() {
    return db.moduleHandle();
  }

  /** {requests, calls, server nanoseconds} since the last {@link #resetStats}. */
  public long[] stats() {
    return db.stats.snapshot();
  }

  public void resetStats() {
    db.stats.reset();
  }
}
