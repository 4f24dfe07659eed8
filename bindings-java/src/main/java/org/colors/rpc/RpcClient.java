package org.colors.rpc;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import org.colors.RpcSupport;
import org.colors.SharedInterruptedException;
import org.colors.SharedList;

/**
 * A connection to a named rpc endpoint served by a process in any language ({@link RpcServer},
 * {@code colors_shm.rpc.serve}, {@code colors::rpc::Server}) attached to the same colors heap.
 *
 * <pre>{@code
 * RpcClient calc = RpcClient.connect("calc");
 * long five = (Long) calc.call("add", 2, 3);                 // integers come back as Long
 * CompletableFuture<Object> f = calc.callAsync("add", 4, 5);  // f.get() -> 9L
 * interface Calc { int add(int a, int b); }
 * Calc c = calc.proxy(Calc.class);                           // c.add(1, 2) -> 3
 * }</pre>
 *
 * <p><b>Arguments</b> are copied in with one {@link org.colors.SharedMemory#copyToSharedMemory(Object)}
 * over all of them: scalars, strings, {@code byte[]} and shared proxies go as they are (a server
 * that changes a shared list the caller passed changes the caller's list), private lists, maps,
 * sets, arrays and user objects are copied, objects shared between arguments stay shared.
 * <b>Results</b> read back as the binding reads shared values: {@code null}, {@code Long},
 * {@code Double}, {@code Boolean}, {@code String}, {@code byte[]}, or proxies
 * ({@link org.colors.SharedList}, {@link org.colors.SharedMap}, {@link org.colors.SharedSet},
 * {@link org.colors.SharedObject}); {@link #proxy(Class)} converts them to declared types.
 *
 * <p><b>Waiting</b>: a caller spins on the request for the spin budget (the client's, else
 * {@code $COLORS_SPIN_NS}, else 50 µs), then blocks in the kernel (a futex), re-checking every
 * 10 ms that the server process lives. {@code Thread.interrupt()} of a waiting caller throws
 * {@link SharedInterruptedException} within ~50 ms.
 *
 * <p><b>Errors</b>: {@link RemoteException} (the remote method threw: remote type and message),
 * {@link RpcTimeoutException} (the call's timeout passed; the call is abandoned),
 * {@link UnavailableException} (no live process serves the endpoint, or its server died or stopped
 * during the call; raised promptly, never by hanging).
 *
 * <p>Thread-safe: any number of threads may call through one client. {@link #close()} stops the
 * client's waiter thread; the native connection is released when the client is unreachable.
 */
public final class RpcClient implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  /** Settings of a client; {@code RpcClient.options().spinNanos(20_000).timeout(Duration.ofSeconds(5))}. */
  public static final class Options {
    long spinNanos = -1;
    Duration timeout;

    private Options() {}

    /**
     * How long a caller spins on its request before it blocks in the kernel (default:
     * {@code $COLORS_SPIN_NS}, else 50 µs; 0: block at once).
     *
     * @param ns nanoseconds, {@code < 0} for the default
     * @return this
     */
    public Options spinNanos(long ns) {
      spinNanos = ns;
      return this;
    }

    /**
     * The default timeout of {@link #call(String, Object...)} and of proxy methods (default: none).
     *
     * @param t a positive duration, or null for none
     * @return this
     */
    public Options timeout(Duration t) {
      if (t != null && t.isNegative()) throw new IllegalArgumentException("negative timeout " + t);
      timeout = t;
      return this;
    }
  }

  /**
   * New default options (default spin budget, no timeout).
   *
   * @return options to adjust and pass to {@link #connect(String, Options)}
   */
  public static Options options() {
    return new Options();
  }

  private final String endpoint;
  private final long client;  // native colors::rpc::Client, freed by CLEANER
  private final long timeoutMs;
  private final Waiter waiter = new Waiter();
  private volatile boolean closed;

  private RpcClient(String endpoint, Options o) {
    this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
    this.timeoutMs = toMillis(o.timeout);
    RpcNative.init();
    long c = RpcNative.clientNew(endpoint, o.spinNanos);
    this.client = c;
    Waiter w = waiter;
    CLEANER.register(this, () -> {
      w.stop();
      RpcNative.clientFree(c);
    });
  }

  /**
   * Connects to endpoint {@code endpoint} (attaching to the colors heap if needed).
   *
   * @param endpoint the endpoint's name
   * @return the client
   * @throws UnavailableException if no live process serves {@code endpoint}
   */
  public static RpcClient connect(String endpoint) {
    return new RpcClient(endpoint, options());
  }

  /**
   * Connects with options (spin budget, default timeout).
   *
   * @param endpoint the endpoint's name
   * @param options see {@link #options()}
   * @return the client
   * @throws UnavailableException if no live process serves {@code endpoint}
   */
  public static RpcClient connect(String endpoint, Options options) {
    return new RpcClient(endpoint, options);
  }

  /**
   * The endpoint's name.
   *
   * @return the name given to {@code connect}
   */
  public String endpoint() {
    return endpoint;
  }

  private static long toMillis(Duration d) {
    if (d == null) return -1;
    if (d.isNegative()) throw new IllegalArgumentException("negative timeout " + d);
    try {
      return d.toMillis();
    } catch (ArithmeticException e) {
      return Long.MAX_VALUE / 2_000_000;
    }
  }

  private void checkOpen() {
    if (closed) throw new IllegalStateException("this RpcClient of endpoint '" + endpoint + "' is closed");
  }

  private static Object[] argsOf(Object[] args) {
    return args == null ? new Object[] {null} : args;  // call("m", null): one null argument
  }

  /**
   * Calls {@code method} with {@code args} and waits for its result (with the client's default
   * timeout, if any).
   *
   * @param method the remote method's name
   * @param args its arguments
   * @return its result (see the class comment for the types)
   * @throws RemoteException if the remote method failed
   * @throws RpcTimeoutException if the default timeout passed
   * @throws UnavailableException if no live process serves the endpoint or it died during the call
   */
  public Object call(String method, Object... args) {
    return call0(method, argsOf(args), timeoutMs);
  }

  /**
   * Calls {@code method} and waits at most {@code timeout} for its result.
   *
   * @param timeout how long to wait; null for no limit
   * @param method the remote method's name
   * @param args its arguments
   * @return its result
   * @throws RpcTimeoutException if the result did not arrive within {@code timeout} (the call is
   *     abandoned: the server may still run it), or the endpoint's request queue stayed full for
   *     that long (nothing was sent)
   * @throws RemoteException if the remote method failed
   * @throws UnavailableException if no live process serves the endpoint or it died during the call
   */
  public Object call(Duration timeout, String method, Object... args) {
    return call0(method, argsOf(args), toMillis(timeout));
  }

  private Object call0(String method, Object[] args, long timeout) {
    checkOpen();
    Objects.requireNonNull(method, "method");
    try {
      // One native call: the arguments built by the bulk copy, the request sent, waited for and its
      // result read.
      Object r = RpcSupport.callWithCopy(client, method, args, timeout);
      if (r != RpcSupport.DECLINED) return r;
      return RpcNative.clientCall(client, method, Convert.argsHandle(args), timeout);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Sends a call and returns at once. The future completes with the result, or exceptionally with
   * {@link RemoteException} or {@link UnavailableException} ({@code get()} wraps them in an
   * {@link java.util.concurrent.ExecutionException}, {@code join()} in a
   * {@link java.util.concurrent.CompletionException}).
   *
   * <p>Resolution: {@code get()}/{@code join()} wait for the request in the calling thread (spin,
   * then block: no CPU burnt while waiting); a waiter thread of this client (a daemon, started by
   * the first asynchronous call, blocked in the kernel while it waits) resolves outstanding
   * requests in sending order, so callbacks run without {@code get()}. {@code get(timeout, unit)}
   * throws {@link java.util.concurrent.TimeoutException} and leaves the call running.
   *
   * @param method the remote method's name
   * @param args its arguments
   * @return the future of the result
   * @throws UnavailableException if no live process serves the endpoint (thrown at once)
   */
  public CompletableFuture<Object> callAsync(String method, Object... args) {
    checkOpen();
    Objects.requireNonNull(method, "method");
    long p;
    try {
      p = send(method, argsOf(args));
    } finally {
      Reference.reachabilityFence(this);
    }
    Request r = new Request(p, 1, false);
    waiter.add(r);
    return r.futures[0];
  }

  private long send(String method, Object[] args) {
    long p = RpcSupport.sendWithCopy(client, method, args);
    if (p != 0) return p;
    return RpcNative.clientSend(client, method, Convert.argsHandle(args));
  }

  /**
   * A new batch: calls added to it are sent as one request when it is closed (see {@link RpcBatch}).
   *
   * @return the batch, to use in try-with-resources
   */
  public RpcBatch batch() {
    checkOpen();
    return new RpcBatch(this);
  }

  void sendBatch(Object[] items, RpcFuture[] futures) {
    checkOpen();
    long p;
    try {
      p = send(RpcServer.BATCH, items);
    } finally {
      Reference.reachabilityFence(this);
    }
    Request r = new Request(p, futures, true);
    for (RpcFuture f : futures) f.request = r;
    waiter.add(r);
  }

  /**
   * Whether the process serving the endpoint is alive and still serves it.
   *
   * @return true if a call would be sent to a live server
   */
  public boolean isServerAlive() {
    checkOpen();
    try {
      return RpcNative.clientAlive(client);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * A proxy implementing {@code iface} whose methods call the remote methods of the same name
   * with the same arguments (through {@link #call(String, Object...)}, with the client's default
   * timeout). Results convert to the declared return type: numbers with checked narrowing (a
   * result that does not fit raises {@link org.colors.SharedOverflowException}, never truncates;
   * null for a primitive raises {@link org.colors.TypeMismatchException}), {@code int[]} and other
   * arrays copied out of shared lists, user classes through
   * {@link org.colors.SharedObject#toPrivate(Class)}, {@code List/Map/Set/Object} as the shared
   * proxies; {@code void} ignores the result. A method returning {@code CompletableFuture} or
   * {@code Future} is called asynchronously ({@link #callAsync}); its value converts to the type
   * argument ({@code CompletableFuture<Integer>}: a checked int; a conversion failure completes
   * it exceptionally). Default methods run locally; {@code equals/hashCode/toString} are the proxy's own.
   * Reflection is resolved once per interface method.
   *
   * @param <T> the interface type
   * @param iface an interface
   * @return the proxy
   */
  public <T> T proxy(Class<T> iface) {
    if (!iface.isInterface()) throw new IllegalArgumentException(iface.getName() + " is not an interface");
    Map<Method, Convert.Conv> results = new HashMap<>();
    Map<Method, String> wheres = new HashMap<>();
    for (Method m : iface.getMethods()) {
      if (m.isDefault() || java.lang.reflect.Modifier.isStatic(m.getModifiers())) continue;
      Class<?> rt = m.getReturnType();
      if (rt == CompletableFuture.class || rt == Future.class) {
        // The future's value converts to the type argument (CompletableFuture<Integer>: checked int).
        Class<?> arg = Object.class;
        java.lang.reflect.Type g = m.getGenericReturnType();
        if (g instanceof java.lang.reflect.ParameterizedType) {
          java.lang.reflect.Type a = ((java.lang.reflect.ParameterizedType) g).getActualTypeArguments()[0];
          if (a instanceof Class) arg = (Class<?>) a;
          else if (a instanceof java.lang.reflect.ParameterizedType) {
            arg = (Class<?>) ((java.lang.reflect.ParameterizedType) a).getRawType();
          }
        }
        results.put(m, arg == Object.class || arg == Void.class ? null : Convert.to(arg));
      } else {
        results.put(m, rt == void.class ? null : Convert.to(rt));
      }
      wheres.put(m, "the result of " + endpoint + "." + m.getName());
    }
    InvocationHandler h = (proxy, m, args) -> {
      if (m.getDeclaringClass() == Object.class) {
        switch (m.getName()) {
          case "equals": return proxy == args[0];
          case "hashCode": return System.identityHashCode(proxy);
          case "toString": return "RpcClient proxy of " + iface.getName() + " for endpoint '" + endpoint + "'";
          default: throw new UnsupportedOperationException(m.getName());
        }
      }
      if (m.isDefault()) return invokeDefault(iface, proxy, m, args);
      Object[] a = args == null ? new Object[0] : args;
      Class<?> rt = m.getReturnType();
      Convert.Conv c = results.get(m);
      if (rt == CompletableFuture.class || rt == Future.class) {
        CompletableFuture<Object> f = callAsync(m.getName(), a);
        if (c == null) return f;
        String where = wheres.get(m);
        return f.thenApply(v -> c.apply(v, where));
      }
      Object r = call0(m.getName(), a, timeoutMs);
      return c == null ? null : c.apply(r, wheres.get(m));
    };
    return iface.cast(Proxy.newProxyInstance(iface.getClassLoader(), new Class<?>[] {iface}, h));
  }

  /** Runs a default method of {@code iface} on {@code proxy} (also for non-public interfaces). */
  private static Object invokeDefault(Class<?> iface, Object proxy, Method m, Object[] args) throws Throwable {
    try {
      return InvocationHandler.invokeDefault(proxy, m, args);
    } catch (IllegalAccessException e) {
      // A non-public interface: a private lookup in it (interfaces in unnamed modules are open).
      MethodHandle mh = MethodHandles.privateLookupIn(m.getDeclaringClass(), MethodHandles.lookup())
          .unreflectSpecial(m, m.getDeclaringClass());
      return mh.bindTo(proxy).invokeWithArguments(args == null ? new Object[0] : args);
    }
  }

  /**
   * Closes the client: later calls throw {@link IllegalStateException}; the waiter thread stops,
   * and futures it had not resolved still resolve when {@code get()} is called. Idempotent.
   */
  @Override
  public void close() {
    closed = true;
    waiter.stop();
  }

  @Override
  public String toString() {
    return "RpcClient[" + endpoint + (closed ? ", closed]" : "]");
  }

  // ---- asynchronous requests --------------------------------------------------------------------

  /**
   * One sent request (a call or a batch) and its futures. The native Pending is freed by the last
   * thread leaving a wait once the request is resolved.
   */
  static final class Request {
    final RpcFuture[] futures;
    final boolean batch;
    private long pending;  // guarded by this; 0 once freed
    private int users;     // threads inside a native wait; guarded by this
    private volatile boolean done;

    Request(long pending, int n, boolean batch) {
      this.pending = pending;
      this.batch = batch;
      this.futures = new RpcFuture[n];
      for (int i = 0; i < n; i++) futures[i] = new RpcFuture(this);
    }

    Request(long pending, RpcFuture[] futures, boolean batch) {
      this.pending = pending;
      this.batch = batch;
      this.futures = futures;
    }

    boolean ready() {
      if (done) return true;
      long p = enter();
      if (p == 0) return true;
      try {
        return RpcNative.pendingReady(p);
      } finally {
        leave();
      }
    }

    private synchronized long enter() {
      if (done || pending == 0) return 0;
      users++;
      return pending;
    }

    private synchronized void leave() {
      users--;
      if (done && users == 0 && pending != 0) {
        RpcNative.pendingFree(pending);
        pending = 0;
      }
    }

    /** Waits without limit (timeoutMs -1) and completes the futures. */
    void resolve(long timeoutMs) {
      if (done) return;
      long p = enter();
      if (p == 0) return;
      Object r = null;
      RuntimeException err = null;
      try {
        r = RpcNative.pendingGet(p, timeoutMs);
      } catch (RpcTimeoutException | SharedInterruptedException e) {
        leave();
        throw e;
      } catch (RuntimeException e) {
        err = e;
      }
      try {
        complete(r, err);
      } finally {
        synchronized (this) {
          done = true;
        }
        leave();
      }
    }

    /** Resolves within {@code ms}; false on timeout (the call goes on). */
    boolean resolveWithin(long ms) {
      try {
        resolve(Math.max(0, ms));
        return true;
      } catch (RpcTimeoutException e) {
        return false;
      }
    }

    private void complete(Object r, RuntimeException err) {
      if (err != null) {
        for (RpcFuture f : futures) f.completeExceptionally(err);
        return;
      }
      if (!batch) {
        futures[0].complete(r);
        return;
      }
      Object[] outcomes = ((SharedList) r).toArray();
      for (int i = 0; i < futures.length; i++) {
        Object[] o = i < outcomes.length ? ((SharedList) outcomes[i]).toArray() : null;
        if (o == null) {
          futures[i].completeExceptionally(new RemoteException("colors::Error", "the server returned no outcome"));
        } else if (Boolean.TRUE.equals(o[0])) {
          futures[i].complete(o[1]);
        } else {
          futures[i].completeExceptionally(new RemoteException((String) o[1], (String) o[2]));
        }
      }
    }
  }

  /** The daemon thread resolving outstanding requests in sending order, started on first use. */
  private static final class Waiter implements Runnable {
    private final LinkedBlockingQueue<Request> queue = new LinkedBlockingQueue<>();
    private Thread thread;  // guarded by this
    private boolean stopped;

    synchronized void add(Request r) {
      if (stopped) return;
      queue.add(r);
      if (thread == null) {
        thread = new Thread(this, "colors-rpc-waiter");
        thread.setDaemon(true);
        thread.start();
      }
    }

    synchronized void stop() {
      stopped = true;
      if (thread != null) thread.interrupt();
    }

    @Override
    public void run() {
      try {
        while (true) {
          Request r = queue.take();
          try {
            r.resolve(-1);
          } catch (SharedInterruptedException e) {
            return;
          } catch (RuntimeException e) {
            // Detached, server gone: resolve() completed the futures exceptionally.
          }
          synchronized (this) {
            if (stopped) return;
          }
        }
      } catch (InterruptedException e) {
        // stopped
      }
    }
  }
}
