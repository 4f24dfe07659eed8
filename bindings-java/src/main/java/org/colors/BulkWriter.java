package org.colors;

import java.util.Arrays;
import java.util.Collection;
import java.util.Map;
import java.util.Set;

/**
 * {@link SharedMemory#copyToSharedMemory(Object)} in one native call: encodes a private graph in
 * Java (fields read with {@link FieldAccess}, strings encoded to UTF-8 here) and lets
 * {@code Bulk.toShared} (jni_bulk.cpp) build it. The same encoding carries a served call's reply
 * ({@code Bulk.toSharedReply}) and an rpc client's arguments ({@code Bulk.clientCall},
 * {@code clientSend}), each built and handed over in the same native call. The result is the graph {@link Copier} builds: the
 * same shared class versions ({@link ClassMapping#sharedClass()}), the same values, sharing and
 * cycles preserved (identity memo), no recursion (objects are encoded in the order met).
 *
 * <p>Covered: user class instances (plain and private instances of mapped classes), arrays and
 * non-set {@code Collection}s (copied as lists), sets, maps and sorted maps, boxed scalars,
 * strings, byte[], null and proxies (stored as they are). Anything else — objects of unsupported
 * classes, strings with lone surrogates, a sorted map with a null key — and every case the native
 * side declines (a value a field's type refuses, a field the version lacks) goes to the
 * {@link Copier} instead ({@link #copy} returns
 * {@link #FALLBACK}), which gives the same results and the same exceptions. Nothing is
 * written to the heap before the encoding is complete, and a declined native build leaves only
 * unreachable garbage behind.
 *
 * <p>One instance per thread, its arrays reused between calls. User code runs in the middle of an
 * encoding (a collection's {@code toArray}, a map's {@code entrySet}) and may copy another graph
 * on the same thread: that copy takes a fresh instance ({@link #acquire}), so the outer encoding
 * is never reset under it.
 */
final class BulkWriter {
  /** Returned by {@link #copy} when the Copier must run. */
  static final Object FALLBACK = new Object();

  private static final ThreadLocal<BulkWriter> LOCAL = ThreadLocal.withInitial(BulkWriter::new);

  /** Whether this instance is encoding (between the start and the end of {@link #runAndClear}). */
  private boolean busy;

  /** This thread's instance, or a fresh one while that one is encoding (a nested copy). */
  private static BulkWriter acquire() {
    BulkWriter w = LOCAL.get();
    return w.busy ? new BulkWriter() : w;
  }

  /** Per mapped class: its shared class version and the record index of each mapped field. */
  private static final class ClassPlan {
    final FieldAccess access;
    final String[] names;
    volatile long generation = -1;
    volatile long cls;
    volatile int[] fieldIdx;

    ClassPlan(FieldAccess a) {
      access = a;
      names = new String[a.mapping.fields.size()];
      for (int i = 0; i < names.length; i++) names[i] = a.mapping.fields.get(i).name;
    }

    /** Refreshes cls/fieldIdx for the current attachment. */
    void resolve() {
      long gen = Native.generation();
      if (generation == gen) return;
      long c = access.mapping.sharedClass();
      int[] idx = Bulk.fieldIndices(c, names);
      cls = c;
      fieldIdx = idx;
      generation = gen;
    }
  }

  private static final ClassValue<ClassPlan> PLANS = new ClassValue<>() {
    @Override
    protected ClassPlan computeValue(Class<?> type) {
      return new ClassPlan(FieldAccess.of(type));
    }
  };

  // Objects (containers and user instances) in the order met; `items` holds what to encode.
  private int[] objs = new int[64];
  private Object[] items = new Object[32];
  private int nobj;
  private final IdentityIds ids = new IdentityIds();
  // The value stream.
  private byte[] tags = new byte[256];
  private long[] vals = new long[256];
  private int nvals;
  private byte[] blob = new byte[1024];
  private int nblob;
  private Object[] refs = new Object[8];
  private int nrefs;
  // The last user class met in this call and its index (skips two ClassValue lookups per object).
  private Class<?> lastUserClass;
  private int lastUserIndex;
  // Classes of this call.
  private ClassPlan[] plans = new ClassPlan[4];
  private int nplans;

  // The header of a container in objs (a user object's is its class index, >= 0): its kind, then
  // its value count (a map's keys and values alternate). jni_bulk.cpp has the same numbers.
  private static final int LIST = -1, SET = -2, MAP = -3, SORTED_MAP = -4;

  // Where run() sends the encoded graph.
  private static final int PROXY = 0, REPLY = 1, CALL = 2, SEND = 3;

  /** Returned by {@link #run} when it replied to a call instead of making a proxy. */
  private static final Object REPLIED = new Object();

  // The target of REPLY (the worker), CALL and SEND (client, method, timeout) for the current run.
  private int mode;
  private long worker;
  private long client;
  private String method;
  private long timeoutMs;

  /** The shared copy of {@code root}, or {@link #FALLBACK}. REQUIRES: attached. */
  static Object copy(Object root) {
    if (Codec.tagOrNone(root) != Codec.NONE) return FALLBACK;  // scalars, strings, proxies: the Copier's roundTrip
    BulkWriter w = acquire();
    w.mode = PROXY;
    return w.runAndClear(root);
  }

  /**
   * Replies to the call of the serving thread's native {@code worker} with the shared copy of
   * {@code root} (Bulk.toSharedReply); false, with nothing replied, when the Copier must run.
   * REQUIRES: attached; the worker holds a call.
   */
  static boolean reply(Object root, long worker) {
    if (worker == 0 || Codec.tagOrNone(root) != Codec.NONE) return false;  // no worker: nothing to reply to
    BulkWriter w = acquire();
    w.mode = REPLY;
    w.worker = worker;
    return w.runAndClear(root) == REPLIED;
  }

  /**
   * Calls {@code method} on the rpc client {@code client} with the shared copy of {@code args} as
   * its argument list, built and sent in one native call (Bulk.clientCall): the result, or
   * {@link #FALLBACK} (nothing sent) when the Copier must copy the arguments. REQUIRES: attached.
   */
  static Object call(long client, String method, Object[] args, long timeoutMs) {
    BulkWriter w = acquire();
    w.mode = CALL;
    w.client = client;
    w.method = method;
    w.timeoutMs = timeoutMs;
    return w.runAndClear(args);
  }

  /**
   * As {@link #call}, without waiting (Bulk.clientSend): the pending call's handle, or 0 (nothing
   * sent) when the Copier must copy the arguments. REQUIRES: attached.
   */
  static long send(long client, String method, Object[] args) {
    BulkWriter w = acquire();
    w.mode = SEND;
    w.client = client;
    w.method = method;
    Object r = w.runAndClear(args);
    return r == FALLBACK ? 0 : (Long) r;
  }

  private Object runAndClear(Object root) {
    busy = true;
    try {
      return run(root);
    } finally {
      clear();
      busy = false;
    }
  }

  /** Encodes the graph of {@code root} and hands it to the native of {@link #mode}. */
  private Object run(Object root) {
    nobj = nvals = nblob = nrefs = nplans = 0;
    lastUserClass = null;
    ids.findOrAdd(root, 0);
    if (!meet(root)) return FALLBACK;
    for (int k = 0; k < nobj; k++) {
      if (!encode(k)) return FALLBACK;
    }
    long[] classes = null;
    int[] fieldStart = null, fieldIdx = null;
    if (nplans > 0) {
      classes = new long[nplans];
      fieldStart = new int[nplans];
      int total = 0;
      for (int i = 0; i < nplans; i++) {
        try {
          plans[i].resolve();
        } catch (RuntimeException e) {
          return FALLBACK;  // e.g. a class version that cannot be defined: the Copier reports it
        }
        classes[i] = plans[i].cls;
        fieldStart[i] = total;
        total += plans[i].fieldIdx.length;
      }
      fieldIdx = new int[total];
      for (int i = 0; i < nplans; i++) {
        int[] f = plans[i].fieldIdx;
        System.arraycopy(f, 0, fieldIdx, fieldStart[i], f.length);
      }
    }
    Object r;
    switch (mode) {
      case PROXY:
        r = Bulk.toShared(objs, nobj, tags, vals, nvals, blob, nblob, refs, classes, fieldStart, fieldIdx);
        if (r == null) return FALLBACK;
        break;
      case REPLY:
        boolean replied =
            Bulk.toSharedReply(worker, objs, nobj, tags, vals, nvals, blob, nblob, refs, classes, fieldStart, fieldIdx);
        if (!replied) return FALLBACK;
        r = REPLIED;
        break;
      case CALL:
        r = Bulk.clientCall(client, method, timeoutMs, FALLBACK, objs, nobj, tags, vals, nvals, blob, nblob, refs,
            classes, fieldStart, fieldIdx);
        if (r == FALLBACK) return FALLBACK;
        break;
      default: {
        long p = Bulk.clientSend(client, method, objs, nobj, tags, vals, nvals, blob, nblob, refs, classes,
            fieldStart, fieldIdx);
        if (p == 0) return FALLBACK;
        r = p;
      }
    }
    Bulk.WRITES.incrementAndGet();
    return r;
  }

  private void clear() {
    Arrays.fill(items, 0, nobj, null);
    Arrays.fill(refs, 0, nrefs, null);
    ids.clear();
    nobj = nrefs = 0;
    method = null;
  }

  /**
   * Numbers a container or user instance met for the first time (its header: class index or -1,
   * and its value count). False for what the bulk copy does not cover.
   */
  private boolean meet(Object x) {
    Object item;
    int cls;
    int count;
    Class<?> xc = x.getClass();
    if (xc == lastUserClass) {  // the common case: another instance of the last user class met
      item = x;
      cls = lastUserIndex;
      count = plans[cls].names.length;
    } else if (x instanceof Map) {
      Object[] entries = ((Map<?, ?>) x).entrySet().toArray();  // a snapshot, as the Copier's
      Object[] kv = new Object[2 * entries.length];
      boolean sorted = x instanceof java.util.SortedMap;
      for (int i = 0; i < entries.length; i++) {
        Map.Entry<?, ?> e = (Map.Entry<?, ?>) entries[i];
        kv[2 * i] = e.getKey();
        kv[2 * i + 1] = e.getValue();
        if (sorted && kv[2 * i] == null) return false;  // the Copier raises the sorted map's NullPointerException
      }
      item = kv;
      cls = sorted ? SORTED_MAP : MAP;
      count = kv.length;
    } else if (x instanceof Set) {
      item = ((Set<?>) x).toArray();  // a snapshot, as the Copier's
      cls = SET;
      count = ((Object[]) item).length;
    } else if (x instanceof Collection) {
      item = ((Collection<?>) x).toArray();  // a snapshot, as the Copier's
      cls = LIST;
      count = ((Object[]) item).length;
    } else if (x.getClass().isArray()) {
      item = x;
      cls = LIST;
      count = java.lang.reflect.Array.getLength(x);
    } else if (ClassMapping.isUserClass(x.getClass())) {
      ClassPlan p;
      try {
        p = PLANS.get(x.getClass());
      } catch (RuntimeException e) {
        return false;  // a class ClassMapping refuses: the Copier raises it
      }
      item = x;
      cls = classIndex(p);
      count = p.names.length;
      lastUserClass = xc;
      lastUserIndex = cls;
    } else {
      return false;  // the Copier raises its TypeMismatchException
    }
    if (2 * nobj + 2 > objs.length) objs = Arrays.copyOf(objs, objs.length * 2);
    if (nobj == items.length) items = Arrays.copyOf(items, items.length * 2);
    objs[2 * nobj] = cls;
    objs[2 * nobj + 1] = count;
    items[nobj] = item;
    nobj++;
    return true;
  }

  private int classIndex(ClassPlan p) {
    for (int i = 0; i < nplans; i++) if (plans[i] == p) return i;
    if (nplans == plans.length) plans = Arrays.copyOf(plans, nplans * 2);
    plans[nplans] = p;
    return nplans++;
  }

  /** Encodes the values of object k. */
  private boolean encode(int k) {
    Object x = items[k];
    int cls = objs[2 * k];
    if (cls >= 0) {
      FieldAccess a = plans[cls].access;
      int n = a.prim.length;
      for (int i = 0; i < n; i++) {
        switch (a.prim[i]) {
          case FieldAccess.REF: {
            Object o = a.getRef(x, i);
            if (o == null) {
              put(Codec.NULL, 0);
            } else if (a.types[i] == String.class) {
              if (!string((String) o)) return false;
            } else if (!value(o)) {
              return false;
            }
            break;
          }
          case FieldAccess.DOUBLE:
          case FieldAccess.FLOAT:
            put(Codec.FLOAT, Double.doubleToRawLongBits(a.getReal(x, i)));
            break;
          case FieldAccess.BOOLEAN:
            put(Codec.BOOL, a.getBoolean(x, i) ? 1 : 0);
            break;
          default:
            put(Codec.INT, a.getIntegral(x, i));
        }
      }
      return true;
    }
    if (x instanceof Object[]) {
      for (Object o : (Object[]) x) if (!value(o)) return false;
    } else if (x instanceof int[]) {
      for (int v : (int[]) x) put(Codec.INT, v);
    } else if (x instanceof long[]) {
      for (long v : (long[]) x) put(Codec.INT, v);
    } else if (x instanceof double[]) {
      for (double v : (double[]) x) put(Codec.FLOAT, Double.doubleToRawLongBits(v));
    } else if (x instanceof short[]) {
      for (short v : (short[]) x) put(Codec.INT, v);
    } else if (x instanceof char[]) {
      for (char v : (char[]) x) put(Codec.INT, v);
    } else if (x instanceof float[]) {
      for (float v : (float[]) x) put(Codec.FLOAT, Double.doubleToRawLongBits(v));
    } else if (x instanceof boolean[]) {
      for (boolean v : (boolean[]) x) put(Codec.BOOL, v ? 1 : 0);
    } else {
      return false;  // byte[] is a binary, never a list; nothing else is numbered as a list
    }
    return true;
  }

  /** Encodes one value as the Copier's convert would store it. */
  private boolean value(Object o) {
    if (o == null) {
      put(Codec.NULL, 0);
    } else if (o.getClass() == lastUserClass && Proxies.handleOf(o) == null) {  // a private instance
      int id = ids.findOrAdd(o, nobj);
      if (id < 0) {
        id = nobj;
        if (!meet(o)) return false;
      }
      put(Codec.OBJ, id);
    } else if (o instanceof String) {
      return string((String) o);
    } else if (o instanceof Long || o instanceof Integer || o instanceof Short || o instanceof Byte) {
      put(Codec.INT, ((Number) o).longValue());
    } else if (o instanceof Double || o instanceof Float) {
      put(Codec.FLOAT, Double.doubleToRawLongBits(((Number) o).doubleValue()));
    } else if (o instanceof Boolean) {
      put(Codec.BOOL, (Boolean) o ? 1 : 0);
    } else if (o instanceof Character) {
      put(Codec.INT, (Character) o);
    } else if (o instanceof byte[]) {
      byte[] b = (byte[]) o;
      ensureBlob(b.length);
      System.arraycopy(b, 0, blob, nblob, b.length);
      nblob += b.length;
      put(Codec.BINARY, b.length);
    } else {
      Handle h = Proxies.handleOf(o);
      if (h != null) {
        if (nrefs == refs.length) refs = Arrays.copyOf(refs, nrefs * 2);
        refs[nrefs] = h;
        put(Codec.REF, nrefs++);
        return true;
      }
      int id = ids.findOrAdd(o, nobj);
      if (id < 0) {
        id = nobj;
        if (!meet(o)) return false;
      }
      put(Codec.OBJ, id);
    }
    return true;
  }

  /** UTF-8 of s into the blob; false for a lone surrogate (the Copier reports it). */
  private boolean string(String s) {
    ensureBlob(3 * s.length());
    int p = utf8(s, blob, nblob);
    if (p < 0) return false;
    put(Codec.STRING, p - nblob);
    nblob = p;
    return true;
  }

  /**
   * Writes the UTF-8 of {@code s} into {@code b} from {@code p} and returns the end, or -1 if
   * {@code s} has a lone surrogate (nothing valid to write: the callers fall back to a path whose
   * native, jni_values.cpp java_to_utf8, reports it).
   * REQUIRES: {@code b} has room for {@code 3 * s.length()} bytes from {@code p} (a surrogate
   * pair, two chars, takes 4).
   */
  static int utf8(String s, byte[] b, int p) {
    int n = s.length();
    for (int i = 0; i < n; i++) {
      char c = s.charAt(i);
      if (c < 0x80) {
        b[p++] = (byte) c;
      } else if (c < 0x800) {
        b[p++] = (byte) (0xC0 | (c >> 6));
        b[p++] = (byte) (0x80 | (c & 0x3F));
      } else if (Character.isSurrogate(c)) {
        if (!Character.isHighSurrogate(c) || i + 1 >= n || !Character.isLowSurrogate(s.charAt(i + 1))) return -1;
        int cp = Character.toCodePoint(c, s.charAt(++i));
        b[p++] = (byte) (0xF0 | (cp >> 18));
        b[p++] = (byte) (0x80 | ((cp >> 12) & 0x3F));
        b[p++] = (byte) (0x80 | ((cp >> 6) & 0x3F));
        b[p++] = (byte) (0x80 | (cp & 0x3F));
      } else {
        b[p++] = (byte) (0xE0 | (c >> 12));
        b[p++] = (byte) (0x80 | ((c >> 6) & 0x3F));
        b[p++] = (byte) (0x80 | (c & 0x3F));
      }
    }
    return p;
  }

  private void ensureBlob(int more) {
    if (nblob + more > blob.length) blob = Arrays.copyOf(blob, Math.max(blob.length * 2, nblob + more));
  }

  private void put(int tag, long v) {
    if (nvals == tags.length) {
      tags = Arrays.copyOf(tags, nvals * 2);
      vals = Arrays.copyOf(vals, nvals * 2);
    }
    tags[nvals] = (byte) tag;
    vals[nvals++] = v;
  }
}
