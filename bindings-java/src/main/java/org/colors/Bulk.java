package org.colors;

import java.util.concurrent.ConcurrentHashMap;

/**
 * The natives of the bulk copies (jni_bulk.cpp, resolved by their exported JNI names) and the
 * per-attachment caches they need: {@link BulkWriter} (private graph to shared memory in one native
 * call: {@link SharedMemory#copyToSharedMemory(Object)}, a served call's reply and an rpc client's
 * arguments) and {@link BulkReader} (shared graph to private instances from one native call,
 * {@link SharedObject#toPrivate(Class)}).
 *
 * <p>What they do not cover goes to {@link Copier} and {@link Materializer} (one native call per
 * object or field), which give the same results and exceptions; no switch chooses between them.
 */
final class Bulk {
  private Bulk() {}

  /** Copies done in one native call, each way (for tests and diagnostics). */
  static final java.util.concurrent.atomic.AtomicLong WRITES = new java.util.concurrent.atomic.AtomicLong(),
      READS = new java.util.concurrent.atomic.AtomicLong();

  /**
   * Private-to-shared copies built inside a read scope so far, with no root per object (a graph
   * whose references all point forward, jni_bulk.cpp says which); for tests and diagnostics.
   */
  static native long scopedBuilds();

  /**
   * Builds the encoded private graph in shared memory (jni_bulk.cpp has the encoding and the GC
   * invariants); returns the root's proxy, or null when the {@link Copier} must do the copy. Only
   * {@code objs[0, 2 nobj)}, {@code tags}/{@code vals[0, nvals)} and {@code blob[0, nblob)} are
   * read; {@code classes}, {@code fieldStart} and {@code fieldIdx} may be null (no user objects).
   */
  static native Object toShared(int[] objs, int nobj, byte[] tags, long[] vals, int nvals, byte[] blob, int nblob,
      Object[] refs, long[] classes, int[] fieldStart, int[] fieldIdx);

  /**
   * As {@link #toShared}, but the copy becomes the reply of the call that the serving thread's
   * native worker holds, and no proxy is made (jni_bulk.cpp: why). False when the Copier must run.
   */
  static native boolean toSharedReply(long worker, int[] objs, int nobj, byte[] tags, long[] vals, int nvals,
      byte[] blob, int nblob, Object[] refs, long[] classes, int[] fieldStart, int[] fieldIdx);

  /**
   * A call of the rpc client {@code client} whose arguments are the encoded graph (its root the
   * list of arguments), built and sent in one native call; returns the result, or
   * {@code declined} (nothing sent) when the Copier must copy the arguments.
   */
  static native Object clientCall(long client, String method, long timeoutMs, Object declined, int[] objs, int nobj,
      byte[] tags, long[] vals, int nvals, byte[] blob, int nblob, Object[] refs, long[] classes, int[] fieldStart,
      int[] fieldIdx);

  /** As {@link #clientCall}, sent without waiting: the pending call's handle, or 0 (nothing sent). */
  static native long clientSend(long client, String method, int[] objs, int nobj, byte[] tags, long[] vals,
      int nvals, byte[] blob, int nblob, Object[] refs, long[] classes, int[] fieldStart, int[] fieldIdx);

  /** The graph reachable from a user object or list, flattened: {tags, vals, starts, blob, proxies}. */
  static native Object[] flatten(Handle root);

  /** Index in the class record of each named field, -1 where the version lacks it. */
  static native int[] fieldIndices(long cls, String[] names);

  /** A class version as the reader needs it: its name and its fields' names in record order. */
  static final class SharedClassInfo {
    final String name;
    final String[] fieldNames;

    SharedClassInfo(String name, String[] fieldNames) {
      this.name = name;
      this.fieldNames = fieldNames;
    }

    /** Index of {@code field} in {@link #fieldNames}, -1 if absent. */
    int indexOf(String field) {
      for (int i = 0; i < fieldNames.length; i++) if (fieldNames[i].equals(field)) return i;
      return -1;
    }
  }

  private static final ConcurrentHashMap<Long, SharedClassInfo> INFOS = new ConcurrentHashMap<>();
  private static volatile long infosGeneration = -1;

  /** The name and field names of a class version (cached per attachment; versions are immutable). */
  static SharedClassInfo info(long cls) {
    long gen = Direct.epoch;  // bumped at every attach and detach (no native call)
    if (infosGeneration != gen) {
      INFOS.clear();
      infosGeneration = gen;
    }
    SharedClassInfo i = INFOS.get(cls);
    if (i != null) return i;
    Object[] f = Native.classFields(cls);
    String[] names = new String[f.length / 4];
    for (int k = 0; k < names.length; k++) names[k] = (String) f[4 * k];
    i = new SharedClassInfo(Native.className(cls), names);
    INFOS.put(cls, i);
    return i;
  }
}
