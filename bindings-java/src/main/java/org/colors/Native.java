package org.colors;

import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The natives of libcolors_jni (registered by its JNI_OnLoad) and the loading of the library.
 *
 * <p>The library is found through, in this order: the system property {@code colors.jni.library}
 * (an absolute path), the environment variable {@code COLORS_JNI_LIB} (set by {@code build/env.sh}),
 * then {@code System.loadLibrary("colors_jni")} ({@code java.library.path}).
 *
 * <p>Values are passed in as (tag, bits, obj) triples built by {@link Codec}; handles of shared
 * objects as the {@link Handle} object itself, which keeps it reachable during the call.
 */
final class Native {
  private Native() {}

  /** System property naming the JNI library file. */
  static final String LIBRARY_PROPERTY = "colors.jni.library";
  /** Environment variable naming the JNI library file. */
  static final String LIBRARY_ENV = "COLORS_JNI_LIB";

  static {
    load();
  }

  private static void load() {
    String path = System.getProperty(LIBRARY_PROPERTY);
    String from = "-D" + LIBRARY_PROPERTY;
    if (path == null || path.isEmpty()) {
      path = System.getenv(LIBRARY_ENV);
      from = "$" + LIBRARY_ENV;
    }
    if (path != null && !path.isEmpty()) {
      Path p = Path.of(path).toAbsolutePath();
      if (!Files.isRegularFile(p)) {
        throw new UnsatisfiedLinkError("colors: " + from + " names " + p + ", which does not exist: build it with"
            + " `make build` (it is <build>/bindings-java/libcolors_jni.so)");
      }
      System.load(p.toString());
      return;
    }
    try {
      System.loadLibrary("colors_jni");
    } catch (UnsatisfiedLinkError e) {
      UnsatisfiedLinkError u = new UnsatisfiedLinkError("colors: the JNI library libcolors_jni.so was not found: build"
          + " it with `make build` and source build/env.sh (sets $" + LIBRARY_ENV + "), or pass -D"
          + LIBRARY_PROPERTY + "=/path/to/libcolors_jni.so (" + e.getMessage() + ")");
      u.initCause(e);
      throw u;
    }
  }

  // ---- attachment, handles, collector (jni_module.cpp) ----
  /** True when a new attachment began (not when a successor took this one back). */
  static native boolean attach(String socket);
  static native void detach();
  /**
   * Refuses new natives that use the segment on other threads (they throw
   * {@link NotAttachedException}) and waits until the running ones finish, so that
   * {@link #detach} never swaps the mapping under a native that holds one of its locks.
   * REQUIRES: no Java lock held (a native in an upcall may wait for it); {@link #endDetach} after.
   */
  static native void beginDetach();
  /** Lets natives that use the segment run again (after {@link #beginDetach}). */
  static native void endDetach();
  /** Whether a segment is mapped (attached, even if its server died since). */
  static native boolean isAttached();
  /** Whether attached and the server's connection is still open. */
  static native boolean serverAlive();
  static native void ping();
  static native long generation();
  static native void release(long ptr);
  static native long liveHandles();
  /** Heap-pressure path: releases a JValue without root_release (its slot kept as a spare). */
  static native void releaseUnderPressure(long ptr);
  /** Heap-pressure path: keeps the first {@code n} emptied Java-held slots (attachment {@code gen}) as spares. */
  static native void spareRoots(long[] slots, int n, long gen);
  /** How many times libshared called this library's heap-pressure hook on a Java thread. */
  static native long pressureHookCalls();
  /**
   * Blocks until the segment's heap-pressure counter differs from {@code seen} (another process,
   * or this one, could not allocate after collector cycles) or {@code timeoutMs} passed; returns
   * the counter, or -1 when a detach is waiting.
   */
  static native int awaitHeapPressure(int seen, long timeoutMs);
  /** Counts this process's heap-pressure watcher in its client slot (until detach). */
  static native void registerPressureWatcher();
  /** The watcher finished a relief: wakes allocations waiting for one. */
  static native void heapRelieved();
  static native long[] collect(long timeoutMs);
  static native long checkpoint();
  static native long[] gcStats();
  static native long[] heapStats();

  // ---- values (jni_values.cpp) ----
  static native Object newContainer(int kind, int capacity);
  static native Object roundTrip(int tag, long bits, Object obj);
  static native int kind(Handle h);
  static native boolean valuesEqual(int t1, long b1, Object o1, int t2, long b2, Object o2);

  // ---- containers (jni_containers.cpp) ----
  static native int size(Handle h);
  static native void clear(Handle h);
  static native Object listGet(Handle h, int i);
  static native Object listSet(Handle h, int i, int tag, long bits, Object obj);
  static native void listAdd(Handle h, int tag, long bits, Object obj);
  static native void listInsert(Handle h, int i, int tag, long bits, Object obj);
  static native Object listRemove(Handle h, int i);
  static native boolean listRemoveIf(Handle h, int i, int tag, long bits, Object obj);
  static native Object[] listItems(Handle h);
  /** The elements, read once no transaction of another thread holds the list; version[0] gets the list's version. */
  static native Object[] listItemsForUpdate(Handle h, long[] version);
  static native long[] listLongs(Handle h);
  static native double[] listDoubles(Handle h);
  static native int listIndexOf(Handle h, int tag, long bits, Object obj, boolean last);
  /** Makes the content the given values if the list is still at {@code version}; returns whether it did. */
  static native boolean listReplaceIf(Handle h, long version, int[] tags, long[] bits, Object[] objs);
  /** Inserts the values before {@code index} (-1: appends them) in one operation, all or none. */
  static native void listAddAll(Handle h, int index, int[] tags, long[] bits, Object[] objs);
  /**
   * The value's tag (-1: absent), with its bits in bitsOut[0] (scalars) or the object in objOut[0];
   * with {@code handOver}, a shared object as {@link Codec#ROOTED} with its word and root
   * slot in bitsOut[0..1] ({@link SortedNative#flat}).
   */
  static native int mapGetFlat(Handle h, int tag, long bits, Object obj, long[] bitsOut, Object[] objOut,
      boolean handOver);
  static native boolean mapContains(Handle h, int tag, long bits, Object obj);
  static native Object mapPut(Handle h, int kt, long kb, Object ko, int vt, long vb, Object vo);
  static native Object mapRemove(Handle h, int tag, long bits, Object obj);
  static native Object[] mapItems(Handle h);
  static native boolean setContains(Handle h, int tag, long bits, Object obj);
  static native boolean setAdd(Handle h, int tag, long bits, Object obj);
  static native boolean setRemove(Handle h, int tag, long bits, Object obj);
  static native Object[] setItems(Handle h);
  static native Object[] setItemsForUpdate(Handle h);

  // ---- repositories, channels, monitors (jni_sync.cpp) ----
  static native long repoFind(String name);
  static native Object repoGet(long repo);
  static native void repoSet(long repo, int tag, long bits, Object obj);
  static native long repoAddress(long repo);
  static native long chanFind(String name, int capacity);
  static native boolean repoDeleted(long repo);
  static native boolean repoDelete(String name);
  static native boolean chanDeleted(long chan);
  static native boolean chanDelete(String name);
  static native int chanCapacity(long chan);
  static native boolean chanSend(long chan, int tag, long bits, Object obj, long timeoutMs);
  static native Object chanReceive(long chan, long timeoutMs);
  static native boolean monitorEnter(long address, long timeoutMs);
  static native void monitorExit(long address);
  static native boolean monitorWait(long address, long timeoutMs);
  static native void monitorNotifyAll(long address);
  static native boolean monitorHeld(long address);
  static native long raw(Handle h);

  // ---- user objects and classes (jni_objects.cpp) ----
  static native long classOf(Handle h);
  static native String className(long cls);
  static native int classVersion(long cls);
  static native int classKind(long cls);
  static native Object[] classFields(long cls);
  static native long[] classVersions(long cls);
  static native long[] classVersionsByName(String name);
  static native long defineClass(String name, String[] fieldNames, int[] kinds, String[] classNames);
  static native Object newObject(long cls);
  static native boolean objHas(Handle h, String field);
  static native Object objGet(Handle h, String field);
  static native void objSet(Handle h, String field, int tag, long bits, Object obj);
  /** Stores several fields, all or none, adding those the object lacks as {@code kinds} (jni_objects.cpp). */
  static native void objSetFields(Handle h, String[] fields, int[] tags, long[] bits, Object[] objs, int[] kinds);
  static native void objAddField(Handle h, String field, int kind, String className);
  static native void objRemoveField(Handle h, String field);

  // Transactions (jni_transaction.cpp; libshared transaction.hpp): this thread's transaction.
  /** Begins or joins this thread's transaction (timeout in ns, 0: none); the new depth. */
  static native int txBegin(long timeoutNs);
  /** Ends one level (the outermost commits); the depth left. */
  static native int txCommit();
  /** Ends one level without committing (the outermost rolls back); the depth left. */
  static native int txRollback();
  static native int txDepth();
  static native boolean txAttachmentGone();
  static native void txEscalate();
  static native void txBackoff(int attempt);
}
