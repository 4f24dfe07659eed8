package org.colors;

/**
 * Internal: the bridge through which {@code org.colors.rpc} reaches the binding's package-private
 * value encoding, checked conversions and class mapping. Not part of the API: it may change
 * without notice; applications use {@link org.colors.rpc.RpcServer} and
 * {@link org.colors.rpc.RpcClient}.
 */
public final class RpcSupport {
  private RpcSupport() {}

  /** Tag of values that need {@link SharedMemory#copyToSharedMemory(Object)} before they can be stored. */
  public static final int NONE = Codec.NONE;
  /** Tag of shared references (proxies). */
  public static final int REF = Codec.REF;
  /** Returned by {@link #callWithCopy} when the arguments need the per-object copy. */
  public static final Object DECLINED = BulkWriter.FALLBACK;

  /**
   * Loads the JNI library (which registers the natives of {@code org.colors.rpc} too) without
   * attaching. Safe to call while the library is being loaded (from the class initializer of a
   * class whose natives it registers).
   */
  public static void loadLibrary() {
    try {
      Class.forName("org.colors.Native", true, RpcSupport.class.getClassLoader());
    } catch (ClassNotFoundException e) {
      throw new IllegalStateException(e);
    }
  }

  /** Loads the JNI library and attaches to the colors server if not attached yet. */
  public static void ensureAttached() {
    SharedMemory.ensureAttached();
  }

  /**
   * The encoding tag of a value (see {@code Codec}), or {@link #NONE} if it must be copied first.
   *
   * @param o any value
   * @return its tag
   */
  public static int tagOrNone(Object o) {
    return Codec.tagOrNone(o);
  }

  /**
   * The bits of a scalar in the (tag, bits, obj) encoding.
   *
   * @param o the value
   * @param tag its tag
   * @return the bits
   */
  public static long bits(Object o, int tag) {
    return Codec.bits(o, tag);
  }

  /**
   * The object part of the (tag, bits, obj) encoding (a string, byte[] or a proxy's handle).
   *
   * @param o the value
   * @param tag its tag
   * @return the object to pass to a native
   */
  public static Object obj(Object o, int tag) {
    return Codec.obj(o, tag);
  }

  /**
   * Calls {@code method} on an rpc client with the shared copy of {@code args} as its argument
   * list, built and sent in one native call by the bulk copy (the encoding of
   * {@link SharedMemory#copyToSharedMemory(Object)}).
   *
   * @param client the client's native handle
   * @param method the remote method's name
   * @param args the arguments
   * @param timeoutMs the call's timeout, or a negative number for none
   * @return the result, or {@link #DECLINED} (nothing sent) when the arguments need the per-object
   *     copy: the caller then copies them with {@code copyToSharedMemory} and calls with that
   */
  public static Object callWithCopy(long client, String method, Object[] args, long timeoutMs) {
    java.util.Objects.requireNonNull(args, "args");
    SharedMemory.ensureAttached();
    return BulkWriter.call(client, method, args, timeoutMs);
  }

  /**
   * As {@link #callWithCopy}, sent without waiting.
   *
   * @param client the client's native handle
   * @param method the remote method's name
   * @param args the arguments
   * @return the pending call's native handle, or 0 (nothing sent) when the arguments need the
   *     per-object copy
   */
  public static long sendWithCopy(long client, String method, Object[] args) {
    java.util.Objects.requireNonNull(args, "args");
    SharedMemory.ensureAttached();
    return BulkWriter.send(client, method, args);
  }

  /**
   * Replies to the call serving worker {@code worker} holds with the shared copy of
   * {@code result} (a private graph: user objects, arrays, collections), built in one native call
   * that stores it as the reply without making a proxy, so that no JVM object keeps the reply's
   * root until the next JVM collection.
   *
   * @param worker the serving thread's native worker
   * @param result the handler's result, not a scalar, string or proxy
   * @return false (nothing replied) when the graph needs the per-object copy: the caller then copies
   *     it with {@link SharedMemory#copyToSharedMemory(Object)} and replies with that
   */
  public static boolean replyWithCopy(long worker, Object result) {
    SharedMemory.ensureAttached();
    return BulkWriter.reply(result, worker);
  }

  /**
   * Releases the root of a transient proxy (a server's argument made by {@code workerArg} for a
   * parameter converted to a private value) at once, instead of at the JVM's next collection.
   * Proxies from the identity cache are left alone.
   *
   * @param proxy the transient proxy, no longer used by anyone
   */
  public static void releaseTransient(Object proxy) {
    Proxies.releaseTransient(proxy);
  }

  /**
   * The handle of a proxy (to pass to a native), or null for anything else.
   *
   * @param proxy a shared list, map, set or object
   * @return its handle
   */
  public static Object handleOf(Object proxy) {
    return Proxies.handleOf(proxy);
  }

  /**
   * The checked conversion of typed reads: numbers narrow with overflow checks, other types must
   * match.
   *
   * @param v a value as read from shared memory
   * @param type the wanted type
   * @param where what the value is, for messages
   * @return the converted value
   */
  public static Object convert(Object v, Class<?> type, String where) {
    return Codec.convert(v, type, where);
  }

  /**
   * A private deep copy of a shared list as an array ({@code @ByValue} parameters): elements read
   * as {@link SharedObject#toPrivate(Class)} reads array fields (user objects as private instances
   * of the component type, sharing and cycles preserved across the whole array), in one native
   * call when the graph allows it, else element by element.
   *
   * @param list a {@link SharedList}
   * @param arrayType the array type, e.g. {@code Node[].class}
   * @param where what the value is, for messages
   * @return the new array
   */
  public static Object toPrivateArray(Object list, Class<?> arrayType, String where) {
    Object r = BulkReader.toPrivateArray((SharedList) list, arrayType);
    if (r != BulkReader.FALLBACK) return r;
    return new Materializer(arrayClassLoader(arrayType)).javaValue(list, arrayType, where);
  }

  private static ClassLoader arrayClassLoader(Class<?> arrayType) {
    Class<?> c = arrayType;
    while (c.isArray()) c = c.getComponentType();
    return c.getClassLoader();
  }

  /**
   * The private copy of a shared user object ({@code @ByValue} parameters): a view or an instance
   * bound by the agent, read as {@link SharedObject#toPrivate(Class)}; null for anything else.
   *
   * @param shared a value read from shared memory
   * @param type a user class
   * @return the private instance, or null if {@code shared} is not a shared user object
   */
  public static Object toPrivate(Object shared, Class<?> type) {
    SharedObject so = Proxies.viewOf(shared);
    return so == null ? null : so.toPrivate(type);
  }

  /**
   * Whether instances of {@code c} are copied as shared objects of a user class.
   *
   * @param c a class
   * @return true for user classes
   */
  public static boolean isUserClass(Class<?> c) {
    return ClassMapping.isUserClass(c);
  }
}
