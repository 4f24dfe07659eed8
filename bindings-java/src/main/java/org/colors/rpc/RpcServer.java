package org.colors.rpc;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import org.colors.NotAttachedException;
import org.colors.ServerGoneException;
import org.colors.SharedInterruptedException;

/**
 * Serves the public methods of a Java object as a named rpc endpoint: processes in any language
 * attached to the same colors heap call them by name ({@link RpcClient} in Java,
 * {@code colors_shm.rpc.connect} in Python, {@code colors::rpc::Client} in C++).
 *
 * <pre>{@code
 * class Calc { public long add(long a, long b) { return a + b; } }
 * try (RpcServer s = RpcServer.serve("calc", new Calc(), 2)) {   // two serving threads
 *   ...                                                          // serves until close()
 * }
 * }</pre>
 *
 * <p><b>Dispatch.</b> The handler's public methods (except those of {@code Object}) are resolved
 * once, when serving starts, into a table by (name, arity); overloads with the same arity are tried
 * in turn and the first whose parameters accept the arguments runs. Arguments arrive as shared
 * values and are converted to the parameter types: {@code int/long/short/byte/char/double/float/
 * boolean} and their boxes with checked narrowing (an argument that does not fit fails the call,
 * it is never truncated), {@code String}, {@code byte[]}, {@code int[]/long[]/double[]} and other
 * arrays (copied out of a shared list), {@code List/Map/Set/Collection} and {@code Object}
 * (shared proxies: changes are seen by the caller), user classes (a private copy through
 * {@link org.colors.SharedObject#toPrivate(Class)}).
 *
 * <p><b>Results.</b> A returned value is stored with
 * {@link org.colors.SharedMemory#copyToSharedMemory(Object)} semantics: scalars, strings and
 * shared proxies as they are, private lists, maps, sets, arrays and user objects copied in. A
 * {@code void} method returns null.
 *
 * <p><b>Failures.</b> An exception thrown by the method reaches the caller as a remote error whose
 * type is the exception's fully qualified class name and whose message is its
 * {@link Throwable#getMessage()} ({@code ""} when null); a {@link RemoteException} escaping the
 * method (a nested remote call failed) passes on its remote type and message. An unknown method or
 * arity is a {@code java.lang.NoSuchMethodException}; an argument that cannot be converted a
 * {@code org.colors.TypeMismatchException} or {@code org.colors.SharedOverflowException}.
 *
 * <p><b>Threads.</b> Each serving thread (a daemon platform thread named
 * {@code colors-rpc-<endpoint>-<i>}) takes one request at a time from the endpoint's queue (spinning
 * for the spin budget, then blocking in the kernel) and runs it; a batch runs its calls in order on
 * one thread. The handler must be thread-safe when {@code threads > 1}. {@link #close()} stops the
 * threads after the calls they are running and unregisters the endpoint (queued calls that did not
 * start fail with {@link UnavailableException}); servers not closed are closed by a shutdown hook when
 * the JVM exits (waiting up to 2 s per thread). Interrupting a serving thread ends that thread.
 * If this process dies, callers get {@link UnavailableException} promptly.
 */
public final class RpcServer implements AutoCloseable {
  /** Method name of a batch request (colors::rpc::kBatchMethod). */
  static final String BATCH = "colors.rpc.batch";
  /**
   * Stands, in serverNext's array, for an argument that is a container or user object: the
   * Dispatcher makes it when its parameter asks (a proxy, or a transient one for a parameter
   * converted to a private value), so that no proxy keeps an argument alive past its call.
   */
  static final Object LAZY = new Object();

  /** Settings of a server; {@code RpcServer.options().threads(2).spinNanos(20_000)}. */
  public static final class Options {
    int threads = 1;
    int queueCapacity = 1024;
    long spinNanos = -1;

    private Options() {}

    /**
     * The number of serving threads (default 1).
     *
     * @param n at least 1
     * @return this
     */
    public Options threads(int n) {
      if (n < 1) throw new IllegalArgumentException("threads must be >= 1, got " + n);
      threads = n;
      return this;
    }

    /**
     * The capacity of the endpoint's request queue (default 1024; callers block while it is full).
     * Only the first server of an endpoint in a heap's life sets it.
     *
     * @param n at least 1
     * @return this
     */
    public Options queueCapacity(int n) {
      if (n < 1) throw new IllegalArgumentException("queueCapacity must be >= 1, got " + n);
      queueCapacity = n;
      return this;
    }

    /**
     * How long a serving thread spins on the empty queue before it blocks in the kernel
     * (default: {@code $COLORS_SPIN_NS}, else libshared's default of 50 µs; 0: block at once).
     *
     * @param ns nanoseconds, {@code < 0} for the default
     * @return this
     */
    public Options spinNanos(long ns) {
      spinNanos = ns;
      return this;
    }
  }

  /**
   * New default options (1 thread, queue capacity 1024, default spin budget).
   *
   * @return options to adjust and pass to {@link #serve(String, Object, Options)}
   */
  public static Options options() {
    return new Options();
  }

  /** Servers not closed yet: closed by a shutdown hook when the JVM exits. */
  private static final Set<RpcServer> LIVE = ConcurrentHashMap.newKeySet();
  private static volatile boolean hookInstalled;

  private static synchronized void installHook() {
    if (hookInstalled) return;
    hookInstalled = true;
    Runtime.getRuntime().addShutdownHook(new Thread(() -> {
      for (RpcServer s : LIVE.toArray(new RpcServer[0])) s.close(2_000);
    }, "colors-rpc-shutdown"));
  }

  private final String endpoint;
  private final Dispatcher dispatcher;
  private final long spinNanos;
  private final List<Thread> threads = new ArrayList<>();
  private final Object lock = new Object();
  private long server;  // native JServer; 0 once freed. Guarded by lock.
  private volatile boolean closed;

  private RpcServer(String endpoint, Object handler, Options o) {
    this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
    this.dispatcher = new Dispatcher(endpoint, Objects.requireNonNull(handler, "handler"));
    this.spinNanos = o.spinNanos;
    RpcNative.init();
    server = RpcNative.serverNew(endpoint, o.queueCapacity);
    try {
      for (int i = 0; i < o.threads; i++) {
        Thread t = new Thread(this::loop, "colors-rpc-" + endpoint + "-" + i);
        t.setDaemon(true);
        threads.add(t);
      }
      LIVE.add(this);
      if (!hookInstalled) installHook();
      for (Thread t : threads) t.start();
    } catch (Throwable e) {
      // No thread could be made or started (OutOfMemoryError: the JVM's thread limit): the
      // endpoint registered above would be served by nobody, and no RpcServer could close it.
      close(0);
      throw e;
    }
  }

  /**
   * Serves the public methods of {@code handler} as endpoint {@code endpoint} with one thread.
   *
   * @param endpoint the endpoint's name
   * @param handler the object whose public methods are served
   * @return the running server; {@link #close()} it to stop
   * @throws org.colors.InvalidArgumentException if another live process serves {@code endpoint}
   */
  public static RpcServer serve(String endpoint, Object handler) {
    return new RpcServer(endpoint, handler, options());
  }

  /**
   * Serves {@code handler} with {@code threads} serving threads.
   *
   * @param endpoint the endpoint's name
   * @param handler the object whose public methods are served (thread-safe if threads &gt; 1)
   * @param threads the number of serving threads, at least 1
   * @return the running server
   * @throws org.colors.InvalidArgumentException if another live process serves {@code endpoint}
   */
  public static RpcServer serve(String endpoint, Object handler, int threads) {
    return new RpcServer(endpoint, handler, options().threads(threads));
  }

  /**
   * Serves {@code handler} with the given options (threads, queue capacity, spin budget).
   *
   * @param endpoint the endpoint's name
   * @param handler the object whose public methods are served
   * @param options see {@link #options()}
   * @return the running server
   * @throws org.colors.InvalidArgumentException if another live process serves {@code endpoint}
   */
  public static RpcServer serve(String endpoint, Object handler, Options options) {
    return new RpcServer(endpoint, handler, options);
  }

  /**
   * The endpoint's name.
   *
   * @return the name given to {@code serve}
   */
  public String endpoint() {
    return endpoint;
  }

  /**
   * Whether {@link #close()} was called.
   *
   * @return true once closed
   */
  public boolean isClosed() {
    return closed;
  }

  private void loop() {
    long srv;
    synchronized (lock) {
      srv = server;
    }
    if (srv == 0) return;
    long w = RpcNative.workerNew();
    try {
      while (!closed) {
        Object[] call;
        try {
          call = RpcNative.serverNext(srv, w, spinNanos, LAZY);
          java.util.function.Supplier<RuntimeException> fault = takeFault;
          if (call != null && fault != null) {
            RuntimeException e = fault.get();
            if (e != null) throw e;
          }
        } catch (SharedInterruptedException | NotAttachedException | ServerGoneException e) {
          return;  // interrupted, detached, or the colors server is gone
        } catch (RuntimeException | OutOfMemoryError e) {
          // The call was taken but its arguments could not be made into Java values (the JVM's
          // heap is full, a class mapping fails): that caller learns why, the thread serves on.
          // Without a call taken the error is the queue's own, and the thread ends with it.
          if (!failTaken(w, e)) throw e;
          continue;
        }
        if (call == null) return;  // closing
        String method = (String) call[0];
        if (BATCH.equals(method)) runBatch(w, call);
        else runOne(w, method, call);
      }
    } finally {
      try {
        RpcNative.workerFree(w);
      } catch (NotAttachedException | ServerGoneException e) {
        // A detach is closing the segment, which the worker's native state may not touch now: it
        // is left to the process (one small object per serving thread and detach), rather than
        // the thread ending with an uncaught exception.
      }
    }
  }

  // The outcome's failure goes through failTaken: a handler may have detached (the reply then
  // finished the call with NotAttachedException before throwing it here, and the worker holds no
  // call any more); the loop's next serverNext ends the thread then, as for any detach.
  private void runOne(long w, String method, Object[] call) {
    Object result;
    try {
      result = dispatcher.invoke(method, call, 1, w, -1);
    } catch (Throwable t) {
      failTaken(w, t);
      return;
    }
    try {
      Convert.reply(w, result);
    } catch (RuntimeException e) {
      failTaken(w, e);  // the result could not be stored (type, heap full): the caller learns why
    }
  }

  /** A batch: each [method, args] in order on this thread; one outcome list per call. */
  private void runBatch(long w, Object[] call) {
    List<Object> outcomes = new ArrayList<>(call.length - 1);
    try {
      for (int i = 1; i < call.length; i++) {
        // {method, args...}, its arguments made as a single call's are (lazily).
        Object[] item = RpcNative.workerBatchItem(w, i - 1, LAZY);
        List<Object> outcome = new ArrayList<>(3);
        try {
          Object r = dispatcher.invoke((String) item[0], item, 1, w, i - 1);
          outcome.add(true);
          outcome.add(r);
        } catch (Throwable t) {
          outcome.add(false);
          outcome.add(remoteType(t));
          outcome.add(remoteMessage(t));
        }
        outcomes.add(outcome);
      }
      // One copy over all results: objects shared between results stay shared.
      Convert.reply(w, outcomes);
    } catch (RuntimeException e) {
      failTaken(w, e);
    }
  }

  static String remoteType(Throwable t) {
    return t instanceof RemoteException ? ((RemoteException) t).getRemoteType() : t.getClass().getName();
  }

  /** The handler exception's message; a fallback if its {@code getMessage()} throws. */
  static String remoteMessage(Throwable t) {
    if (t instanceof RemoteException) return ((RemoteException) t).getRemoteMessage();
    try {
      String m = t.getMessage();
      return m == null ? "" : m;
    } catch (Throwable e) {
      return "(the exception's getMessage() threw " + e.getClass().getName() + ")";
    }
  }

  private static void fail(long w, Throwable t) {
    RpcNative.workerFail(w, remoteType(t), remoteMessage(t));
  }

  /** Fails the call worker {@code w} holds with {@code t}; false if it holds none. */
  private static boolean failTaken(long w, Throwable t) {
    try {
      fail(w, t);
      return true;
    } catch (RuntimeException none) {
      return false;
    }
  }

  /**
   * Fault injection for tests: consulted after each call is taken; an exception it returns is
   * thrown as if making the call's arguments into Java values had failed. Null in production.
   */
  static volatile java.util.function.Supplier<RuntimeException> takeFault;

  /**
   * Stops serving: the threads finish the calls they are running and end (an idle thread notices
   * within 50 ms), then the endpoint is unregistered; calls still queued fail with
   * {@link UnavailableException}, later calls too. Idempotent. Called from a handler it does not
   * wait for its own thread.
   */
  @Override
  public void close() {
    close(-1);
  }

  /**
   * close() waiting at most {@code waitMs} per thread (-1: no limit). A thread still running a
   * call after that keeps the native server alive (not freed: the JVM is exiting).
   */
  private void close(long waitMs) {
    long srv;
    synchronized (lock) {
      if (server == 0) {
        LIVE.remove(this);
        return;
      }
      closed = true;
      srv = server;
      RpcNative.serverClose(srv);
    }
    boolean interrupted = false;
    boolean allEnded = true;
    for (Thread t : threads) {
      if (t == Thread.currentThread()) continue;
      while (true) {
        try {
          if (waitMs < 0) t.join();
          else t.join(waitMs);
          break;
        } catch (InterruptedException e) {
          interrupted = true;
        }
      }
      if (t.isAlive()) allEnded = false;
    }
    synchronized (lock) {
      if (server != 0 && allEnded) {
        server = 0;
        RpcNative.serverFree(srv);  // unregisters (colors::rpc::Server's destructor)
      }
    }
    LIVE.remove(this);
    if (interrupted) Thread.currentThread().interrupt();
  }

  /**
   * Waits until every serving thread ended (after {@link #close()} from another thread, or after
   * the colors server went away).
   *
   * @throws InterruptedException if this thread is interrupted while waiting
   */
  public void join() throws InterruptedException {
    for (Thread t : threads) if (t != Thread.currentThread()) t.join();
  }

  @Override
  public String toString() {
    return "RpcServer[" + endpoint + (closed ? ", closed]" : "]");
  }
}
