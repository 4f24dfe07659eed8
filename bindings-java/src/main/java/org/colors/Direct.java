package org.colors;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A direct view of the mapped segment: the field fast path reads and writes tagged words from Java
 * without crossing JNI.
 *
 * <p>The segment (mapped at the same address in every process) is seen through direct
 * {@link ByteBuffer}s of 1 GiB made by JNI's {@code NewDirectByteBuffer} (several when the segment
 * is larger); words are accessed through a {@code byteBufferViewVarHandle(long[].class)}, which
 * gives atomic 8-byte acquire loads and compare-and-set, the memory orders of libshared's
 * {@code std::atomic<Word>} slots. Every byte offset used here comes from the C++ structs at run
 * time ({@code Java_org_colors_Direct_layout} in jni_direct.cpp), none is hard-coded.
 *
 * <p>A view belongs to one attachment: {@link #epoch} is bumped at every attach and detach, each
 * {@link Handle} records the epoch it was made in, and the fast path only runs when both agree
 * (otherwise the slow JNI path reports {@link NotAttachedException}).
 */
final class Direct {
  private Direct() {}

  static final VarHandle LONGS = MethodHandles.byteBufferViewVarHandle(long[].class, ByteOrder.LITTLE_ENDIAN);
  static final VarHandle INTS = MethodHandles.byteBufferViewVarHandle(int[].class, ByteOrder.LITTLE_ENDIAN);

  /** Bumped at every attach and detach (under SharedMemory's lock). */
  static volatile long epoch = 1;
  /** The view of the current attachment, made on first use; null when none. */
  private static volatile View view;

  static final int CHUNK_SHIFT = 30;
  static final long CHUNK_MASK = (1L << CHUNK_SHIFT) - 1;

  /**
   * sun.misc.Unsafe for the accesses of the fast path, unless {@code -Dcolors.direct=varhandle}
   * (or Unsafe is unavailable): the same acquire loads, CAS and byte store on the same addresses,
   * without the ByteBuffer's per-access checks (bounds, alignment, buffer state), which cost about
   * half of a shared int read.
   */
  @SuppressWarnings("removal")
  static final sun.misc.Unsafe UNSAFE = findUnsafe();

  @SuppressWarnings("removal")
  private static sun.misc.Unsafe findUnsafe() {
    if ("varhandle".equals(System.getProperty("colors.direct"))) return null;
    try {
      java.lang.reflect.Field f = sun.misc.Unsafe.class.getDeclaredField("theUnsafe");
      f.setAccessible(true);
      return (sun.misc.Unsafe) f.get(null);
    } catch (ReflectiveOperationException | RuntimeException e) {
      return null;
    }
  }

  // Indices of layout(); jni_direct.cpp static_asserts its own against these (javac -h). Package-
  // private for DirectWindowTest, which builds a View over memory of its own.
  static final int L_BASE = 0, L_SIZE = 1, L_OFF_CLS = 2, L_PENDING_BITS = 3, L_OFF_EXTENSION = 4,
      L_OFF_SLOTS = 5, L_OFF_FLOAT_VALUE = 6, L_OFF_ARRAY_CAPACITY = 7, L_OFF_ARRAY_SLOTS = 8, L_OFF_CLASS_KIND = 9,
      L_OFF_GC_STARTED = 10, L_OFF_GC_DONE = 11, L_WORD = 12, L_GRANULE = 13, L_FLOAT_CLASS = 14,
      L_OFF_STRING_LENGTH = 15, L_OFF_STRING_BYTES = 16, L_STRING_CLASS = 17, L_OBJECTS_BEGIN = 18,
      L_OFF_LIST_SIZE = 19, L_OFF_LIST_ARRAY = 20, L_OFF_LIST_VERSION = 21, L_OFF_SORTED_ROOT = 22,
      L_ARRAY_CLASS = 23, L_OFF_GC_PHASE = 24, L_GC_MARKING = 25;

  static native long[] layout();
  static native ByteBuffer[] segment();
  /**
   * {slot, TypeKind, 1 if the field is typed with a class name} of field {@code name} in class
   * version {@code cls}, or null if it lacks it.
   */
  static native long[] resolve(long cls, String name);

  /** Fills {@code out} with empty slots of this process's root table ({@link Roots}); returns how many. */
  static native int takeRoots(long[] out);

  /** Gives the first {@code n} (null) slots of {@code slots} back to libshared. */
  static native void giveRoots(long[] slots, int n);

  /**
   * The elements of list {@code h} at one instant through libshared (transactional inside a
   * transaction), as pairs {word, root slot}: each reference with the root slot holding it, now
   * the caller's ({@link ListReads#itemsRooted}); scalars with 0.
   */
  static native long[] listWords(Handle h);

  /** A new user object of class version {@code cls}: the address of the root slot holding it (now the caller's). */
  static native long newObject(long cls);

  /**
   * A root for the object at {@code raw}, borrowed in this thread's read scope (libshared's
   * promote_borrowed): the address of the root slot holding it, now the caller's.
   * REQUIRES: inside the read scope that read {@code raw}.
   */
  static native long promote(long raw);

  /**
   * A new user object of class version {@code cls} allocated in this thread's read scope: its
   * address (no root: the scope keeps it; fields null). REQUIRES: inside a read scope.
   */
  static native long newObjectScoped(long cls);

  /**
   * Stores the reference {@code w}, held by this thread's read scope (or rooted), into the field
   * slot at {@code slot}: the write barrier, then the collector's flag while it marks
   * (store_scope_reference). REQUIRES: inside a read scope; the slot's object kept alive; the
   * field's type checked.
   */
  static native void storeScoped(long slot, long w);

  /**
   * Stores a new shared string of the first {@code n} bytes of {@code utf8} (UTF-8, as
   * {@link BulkWriter#utf8} encodes) into the field slot at {@code slot} of the object at
   * {@code obj} (write_slot). {@code keep} is the proxy rooting the object that owns the slot
   * (kept reachable by being an argument). Invalid UTF-8 is refused (InvalidArgumentException).
   */
  static native void storeUtf8(Object keep, long obj, long slot, byte[] utf8, int n);

  /**
   * As {@link #storeUtf8}, the bytes read from {@code n} bytes of memory at {@code bytes} (this
   * thread's {@link Utf8Buffer}, which the thread's ThreadLocal keeps allocated): no JNI array
   * call.
   */
  static native void storeUtf8At(Object keep, long obj, long slot, long bytes, int n);

  /**
   * As {@link #storeUtf8At}, and the new string is also stored into the Java-held root slot
   * {@code root} (seq_cst, as every root) before it is stored into the field, so that it stays alive
   * for as long as Java keeps that root ({@link StringWrites}). REQUIRES: as storeUtf8At;
   * {@code root} an empty slot this thread took ({@link Roots#take}).
   */
  static native void storeUtf8Rooted(Object keep, long obj, long slot, long bytes, int n, long root);

  /** The address of the memory of the direct buffer {@code b} (JNI's GetDirectBufferAddress). */
  static native long directAddress(ByteBuffer b);

  /**
   * A thread's buffer for the UTF-8 of a string it stores into a field ({@link #storeUtf8At}):
   * encoded into {@link #bytes}, copied to the direct buffer's memory, read there by the native.
   * It stays reachable through its thread's {@link StringWrites} (a ThreadLocal) for as long as
   * the thread lives (so a native reading its memory needs no fence); the JDK frees that memory
   * once both are gone.
   * Invariant: a thread stores one string through it at a time; nothing the native calls back into
   * (the heap-pressure hook) stores a string.
   */
  static final class Utf8Buffer {
    /** Longer strings take the {@code byte[]} native. */
    static final int MAX_CHARS = 1024;
    /** At most 3 bytes per char (a surrogate pair, two chars, takes 4). */
    final byte[] bytes = new byte[3 * MAX_CHARS];
    final ByteBuffer memory = ByteBuffer.allocateDirect(3 * MAX_CHARS);
    final long address = directAddress(memory);

    /** Copies the first {@code n} bytes of {@link #bytes} to the direct memory. REQUIRES: UNSAFE. */
    void copyToMemory(int n) {
      UNSAFE.copyMemory(bytes, BYTE_BASE, null, address, n);
    }
  }

  /**
   * Inside a transaction: the word in {@code slot} of the object at {@code obj}, read through the
   * transaction (read_slot_word: the object's orec checked). {@code keep} roots the object.
   */
  static native long txLoad(Object keep, long obj, long slot);

  /**
   * Inside a transaction: the value in {@code slot} of the object at {@code obj} read through the
   * transaction (read_slot_rooted), in one long: 0 for null, a scalar word as it is (low three bits
   * never 000), or for a reference the address of the root slot holding it (8-aligned), now the
   * caller's. {@code keep} roots the object.
   */
  static native long txLoadRooted(Object keep, long obj, long slot);

  /**
   * Inside a transaction: stores the scalar word {@code word} into {@code slot} of the object at
   * {@code obj} through the transaction (write_slot: the object's orec taken, the old word logged).
   */
  static native void txStore(Object keep, long obj, long slot, long word);

  /** Whether field {@code name} of {@code cls} takes the user object {@code value} (rooted by {@code keep}). */
  static native boolean accepts(long cls, String name, Object keep, long value);

  /**
   * The view of the current attachment for the accessors of bound instances (whose addresses are
   * zeroed at detach, so a non-zero address belongs to the current attachment), or null.
   */
  static View current() {
    return view;
  }

  /** The view of the current attachment, made if needed; null when not attached. */
  static View currentOrMake() {
    View v = view;
    return v != null ? v : makeView();
  }

  /** libshared's heap verifier (no mutator may run): null when the heap verifies, else the report. For tests. */
  static native String verifyHeap();

  /** Called under SharedMemory's lock when attaching or detaching. */
  static void invalidate() {
    view = null;
    epoch++;
  }

  /** The view for a handle of the current attachment, or null (then take the slow path). */
  static View viewFor(Handle h) {
    if (h.borrowedElsewhere()) return null;  // the JNI path then says why
    View v = view;
    if (v != null && v.epoch == h.epoch) return v;
    return h.epoch == epoch ? makeView() : null;
  }

  private static synchronized View makeView() {
    View v = view;
    long e = epoch;
    if (v != null && v.epoch == e) return v;
    if (!Native.isAttached()) return null;
    Native.class.getName();  // the library is loaded by Native's initializer
    v = new View(e, Native.generation(), layout(), segment());
    view = v;
    return v;
  }

  /**
   * What {@link View#readDoubleBits} returns when it cannot read: a NaN payload no binding writes; a
   * float really holding these bits merely takes the slow path, which reads it correctly.
   */
  static final long NO_FLOAT = 0x7ff8_dead_beef_cafeL;

  /** Longer strings are read through JNI. */
  static final int MAX_DIRECT_STRING = 4096;
  @SuppressWarnings("removal")
  private static final long BYTE_BASE = UNSAFE != null ? UNSAFE.arrayBaseOffset(byte[].class) : 0;

  /** The segment of one attachment. */
  static final class View {
    final long epoch;
    /** The native attachment generation (Native.generation()) of this view. */
    final long gen;
    final long base, size;
    final ByteBuffer[] chunks;
    final long offCls, offExtension, offSlots, offFloatValue, offArrayCapacity, offArraySlots,
        offClassKind, offGcStarted, offGcDone, offStringLength, offStringBytes;
    /** ListObject's size, array and seqlock version ({@link ListReads}). */
    final long offListSize, offListArray, offListVersion;
    /** SortedMapObject's root slot, and the class of every slot array (its nodes; {@link SortedReads}). */
    final long offSortedRoot, arrayClass;
    /** The class record of every boxed float, of every string. */
    final long floatClass, stringClass;
    /** Addresses of Metadata::gc_started_seq / gc_done_seq / gc_phase (the collector's seqlock). */
    final long gcStartedAt, gcDoneAt, gcPhaseAt;
    /** GcPhase::kMarking, the phase of a cycle that frees nothing yet. */
    final byte gcMarking;
    /** The pending set (pending_bits.hpp): its first word, and the address its bit 0 stands for. */
    final long pendingBits, objectsBegin;
    /** The fast path's address check: objects lie in [objectsBegin, objectsBegin + objectsSpan). */
    final long objectsSpan;

    View(long epoch, long gen, long[] l, ByteBuffer[] chunks) {
      this.epoch = epoch;
      this.gen = gen;
      if (l[L_WORD] != 8 || l[L_GRANULE] != 1L << Words.GRANULE_SHIFT) {
        throw new CorruptHeapException("colors: unexpected word/granule size " + l[L_WORD] + "/" + l[L_GRANULE]);
      }
      base = l[L_BASE];
      size = l[L_SIZE];
      offCls = l[L_OFF_CLS];
      pendingBits = l[L_PENDING_BITS];
      objectsBegin = l[L_OBJECTS_BEGIN];
      objectsSpan = base + size - 64 - objectsBegin;
      offExtension = l[L_OFF_EXTENSION];
      offSlots = l[L_OFF_SLOTS];
      offFloatValue = l[L_OFF_FLOAT_VALUE];
      offArrayCapacity = l[L_OFF_ARRAY_CAPACITY];
      offArraySlots = l[L_OFF_ARRAY_SLOTS];
      offClassKind = l[L_OFF_CLASS_KIND];
      offGcStarted = l[L_OFF_GC_STARTED];
      offGcDone = l[L_OFF_GC_DONE];
      floatClass = l[L_FLOAT_CLASS];
      offStringLength = l[L_OFF_STRING_LENGTH];
      offStringBytes = l[L_OFF_STRING_BYTES];
      stringClass = l[L_STRING_CLASS];
      offListSize = l[L_OFF_LIST_SIZE];
      offListArray = l[L_OFF_LIST_ARRAY];
      offListVersion = l[L_OFF_LIST_VERSION];
      offSortedRoot = l[L_OFF_SORTED_ROOT];
      arrayClass = l[L_ARRAY_CLASS];
      gcStartedAt = base + offGcStarted;
      gcDoneAt = base + offGcDone;
      gcPhaseAt = base + l[L_OFF_GC_PHASE];
      gcMarking = (byte) l[L_GC_MARKING];
      if (((base | offCls | offExtension | offSlots | offFloatValue | offArraySlots | offGcStarted) & 3) != 0
          || ((offListSize | offListArray | offListVersion | offArrayCapacity | offSortedRoot) & 7) != 0) {
        throw new CorruptHeapException("colors: misaligned segment layout");
      }
      for (ByteBuffer b : chunks) b.order(ByteOrder.LITTLE_ENDIAN);
      this.chunks = chunks;
    }

    boolean contains(long addr, int bytes) {
      long off = addr - base;
      return off >= 0 && off <= size - bytes;
    }

    /** Acquire load of the 8-byte word at {@code addr} (8-aligned, inside the segment). */
    long load(long addr) {
      if (UNSAFE != null) return UNSAFE.getLongVolatile(null, addr);
      long off = addr - base;
      return (long) LONGS.getAcquire(chunks[(int) (off >>> CHUNK_SHIFT)], (int) (off & CHUNK_MASK));
    }

    /** Opaque (relaxed) load, as libshared's load_payload_word. */
    long loadRelaxed(long addr) {
      if (UNSAFE != null) return UNSAFE.getLongVolatile(null, addr);
      long off = addr - base;
      return (long) LONGS.getOpaque(chunks[(int) (off >>> CHUNK_SHIFT)], (int) (off & CHUNK_MASK));
    }

    int loadInt(long addr) {
      if (UNSAFE != null) return UNSAFE.getIntVolatile(null, addr);
      long off = addr - base;
      return (int) INTS.getAcquire(chunks[(int) (off >>> CHUNK_SHIFT)], (int) (off & CHUNK_MASK));
    }

    byte loadByte(long addr) {
      if (UNSAFE != null) return UNSAFE.getByteVolatile(null, addr);
      long off = addr - base;
      return chunks[(int) (off >>> CHUNK_SHIFT)].get((int) (off & CHUNK_MASK));
    }

    /** compare_exchange (acq_rel): the witness value. */
    long cas(long addr, long expect, long value) {
      if (UNSAFE != null) {
        // sun.misc.Unsafe has no compareAndExchange: a failed CAS re-reads the witness (acquire).
        return UNSAFE.compareAndSwapLong(null, addr, expect, value) ? expect : UNSAFE.getLongVolatile(null, addr);
      }
      long off = addr - base;
      return (long) LONGS.compareAndExchange(chunks[(int) (off >>> CHUNK_SHIFT)], (int) (off & CHUNK_MASK), expect,
          value);
    }

    /**
     * mark_pending (barrier.hpp): puts the object a reference word points to in the pending set
     * (set_pending_bit, pending_bits.hpp): its bit, set by an atomic OR (release) unless set.
     */
    void markPending(long ref) {
      // A word outside the objects space is no object (a buggy or hostile client wrote it where a
      // reference goes): nothing to flag, and its bit would lie outside the bitmap.
      // (The bitmap begins where the objects space ends: layout.hpp, segment.cpp.)
      if (Long.compareUnsigned(ref - objectsBegin, pendingBits - objectsBegin) >= 0) return;
      long i = Words.pendingIndex(objectsBegin, ref);
      long addr = pendingBits + ((i >>> 6) << 3);
      long bit = 1L << (i & 63);
      if (UNSAFE != null) {
        // sun.misc.Unsafe has no atomic OR: a CAS loop (a volatile CAS, which is also a release).
        for (long old = UNSAFE.getLongVolatile(null, addr); (old & bit) == 0; old = UNSAFE.getLongVolatile(null, addr)) {
          if (UNSAFE.compareAndSwapLong(null, addr, old, old | bit)) return;
        }
        return;
      }
      long off = addr - base;
      ByteBuffer b = chunks[(int) (off >>> CHUNK_SHIFT)];
      int at = (int) (off & CHUNK_MASK);
      if (((long) LONGS.getAcquire(b, at) & bit) == 0) LONGS.getAndBitwiseOrRelease(b, at, bit);
    }

    /** Whether the object at {@code ref} is in the pending set (tests). */
    boolean isPending(long ref) {
      long i = Words.pendingIndex(objectsBegin, ref);
      return (load(pendingBits + ((i >>> 6) << 3)) >>> (i & 63) & 1) != 0;
    }

    /**
     * store_ref (barrier.hpp): the old value, if a reference, is flagged pending before a CAS
     * against exactly that value replaces it.
     */
    void storeWord(long slot, long value) {
      long old = load(slot);
      for (;;) {
        if (Words.isRef(old)) markPending(old);
        long w = cas(slot, old, value);
        if (w == old) return;
        old = w;
      }
    }

    /**
     * field_slot (objects.hpp): the address of slot {@code slot} of user object {@code obj}, or 0
     * if its storage lacks it.
     */
    long slotAddress(long obj, int slot) {
      return slotAddress(obj, slot, inlineSlots(obj));
    }

    /** inline_slots (objects.hpp): the slots a user object was allocated with. */
    int inlineSlots(long obj) {
      long header = load(obj);
      return (int) (((header >>> 8) - offSlots) >>> 3);
    }

    /** {@link #slotAddress(long, int)} for an object of {@code inline} inline slots. */
    long slotAddress(long obj, int slot, int inline) {
      // Every address is checked against the segment before it is returned or read: the
      // accessors' entry points are public, so obj may be forged or not an object, and its header
      // and extension links garbage. What fails takes the JNI path (0).
      if (slot < inline) {
        long s = obj + offSlots + 8L * slot;
        return s - base <= size - 8 ? s : 0;  // s > obj >= base: no wrap below
      }
      // extension_slot (objects.hpp): a chain of arrays whose last slot links the next.
      long i = slot - inline;
      for (long ext = load(obj + offExtension); ext != 0; ) {
        if ((ext & 15) != 0 || !contains(ext + offArrayCapacity, 8)) return 0;
        long fields = load(ext + offArrayCapacity) - 1;
        long room = (base + size - (ext + offArraySlots)) / 8;  // slots before the segment's end
        if (fields < 0 || fields >= room) return 0;  // its fields and the link after them must fit
        if (i < fields) return ext + offArraySlots + 8L * i;
        i -= fields;
        ext = load(ext + offArraySlots + 8L * fields);
      }
      return 0;
    }

    /**
     * Whether {@code a} can be the address of an object here: inside the objects space with room
     * for a header (one compare; a misaligned one reads garbage there, which the class check of
     * the JNI resolution refuses). The field fast path checks the address it is given with it.
     */
    boolean mayHoldObjectAt(long a) {
      return Long.compareUnsigned(a - objectsBegin, objectsSpan) < 0;
    }

    /**
     * Opens a window of the collector's seqlock in which nothing is freed (libshared's
     * no_sweep_window_begin, objects.hpp; gc/README.md, "Reads without a root"): no cycle running,
     * or the running one still marking. Returns the window's token for {@link #windowOpen}, or 0
     * while a sweep may run (take the rooted path). A copy of the C++ function, which
     * WindowConformanceTest pins it to bit for bit (as {@link #windowOpen}).
     */
    long windowBegin() {
      int started = loadInt(gcStartedAt);
      if (loadInt(gcDoneAt) == started) return ((started & 0xffffffffL) << 2) | 1;  // idle
      if (loadByte(gcPhaseAt) != gcMarking) return 0;
      VarHandle.acquireFence();
      return ((started & 0xffffffffL) << 2) | 3;  // marking
    }

    /**
     * Whether the window {@code token} (non-zero, from {@link #windowBegin}) is still open, i.e.
     * the loads before this call saw no freed memory (no_sweep_window_end): an acquire fence, then
     * the phase (acquire) and gc_started_seq.
     */
    boolean windowOpen(long token) {
      VarHandle.acquireFence();
      byte phase = loadByte(gcPhaseAt);
      VarHandle.acquireFence();  // the phase load before gc_started_seq's (an acquire load)
      if (loadInt(gcStartedAt) != (int) (token >>> 2)) return false;
      return (token & 2) == 0 || phase == gcMarking;
    }

    /**
     * The value in {@code slot} as the raw bits of a double: an immediate float, a small integer
     * that a double represents exactly, or a boxed float read in a window in which nothing is
     * freed ({@link #windowBegin}); {@link #NO_FLOAT} for anything else, or when the window
     * closed: take the slow path.
     */
    long readDoubleBits(long slot) {
      long w = load(slot);
      if (Words.isSmallFloat(w)) return Words.smallFloatBits(w);
      return readDoubleBitsSlow(slot);
    }

    private long readDoubleBitsSlow(long slot) {
      long window = windowBegin();
      long w = load(slot);
      if (Words.isSmallFloat(w)) return Words.smallFloatBits(w);
      if (Words.isSmallInt(w)) {
        long x = Words.smallValue(w);
        double d = (double) x;
        return (long) d == x ? Double.doubleToRawLongBits(d) : NO_FLOAT;
      }
      // A reference inside the segment (one unsigned compare; w == 0 fails it too).
      if (window == 0 || (w & Words.TAG_MASK) != 0 || Long.compareUnsigned(w - base - 1, size - 33) > 0) return NO_FLOAT;
      if (loadRelaxed(w + offCls) != floatClass) return NO_FLOAT;
      long bits = loadRelaxed(w + offFloatValue);
      return windowOpen(window) ? bits : NO_FLOAT;
    }

    /** Sequentially consistent store (Java volatile; a full barrier follows on x86). REQUIRES: UNSAFE. */
    void storeSeqCst(long addr, long value) {
      UNSAFE.putLongVolatile(null, addr, value);
    }

    /** Sequentially consistent load (Java volatile: ordered after every earlier volatile store). */
    long loadSeqCst(long addr) {
      if (UNSAFE != null) return UNSAFE.getLongVolatile(null, addr);
      long off = addr - base;
      return (long) LONGS.getVolatile(chunks[(int) (off >>> CHUNK_SHIFT)], (int) (off & CHUNK_MASK));
    }

    /** Stores a word with release order (REQUIRES: UNSAFE; a slot nobody else writes). */
    void storeRelease(long addr, long value) {
      UNSAFE.putOrderedLong(null, addr, value);
    }

    /** The TypeKind of the (live) object at {@code obj}. */
    int kindOf(long obj) {
      return loadByte(load(obj + offCls) + offClassKind);
    }

    /** A string {@link #readString} made: the shared string's address and the window it was read in. */
    private static final class ReadStr {
      final long word, window;
      final String str;

      ReadStr(long word, long window, String str) {
        this.word = word;
        this.window = window;
        this.str = str;
      }
    }

    /**
     * The strings made last, by the shared string's address (direct-mapped): Python's str cache
     * (read_string_direct). Invariant: an entry names the string at {@code word} as of a read in
     * the window {@code window} of this view's attachment. A string is immutable and stays at its
     * address until a sweep frees it, and two reads with the same window token have no sweep
     * between them, so in that window the same address is the same string. Races between threads
     * are benign: entries are immutable (final fields) and replaced whole.
     */
    private final ReadStr[] strings = new ReadStr[STRING_CACHE];

    private static final int STRING_CACHE_BITS = 10, STRING_CACHE = 1 << STRING_CACHE_BITS;

    /**
     * The string in {@code slot} read straight from the segment, or null when it holds no string
     * of at most {@link #MAX_DIRECT_STRING} bytes or the window closed (take the slow path). As
     * {@link #readDoubleBitsSlow}: in a window in which nothing is freed ({@link #windowBegin})
     * — the string was not free when the slot was read and nothing freed it before the window's
     * check, and strings are immutable, so the copied bytes are the string's. The String made
     * last for the same address in the same window is handed out again. Nothing is rooted.
     * REQUIRES: UNSAFE, and the object owning {@code slot} kept alive by the caller.
     */
    String readString(long slot) {
      long window = windowBegin();
      if (window == 0) return null;  // a sweep may be running
      long w = load(slot);
      // Fibonacci hashing: strings allocated at a fixed stride (one per node) spread over the table.
      int at = (int) ((w * 0x9E3779B97F4A7C15L) >>> (64 - STRING_CACHE_BITS));
      ReadStr kept = strings[at];
      if (kept != null && kept.word == w && kept.window == window) {
        return windowOpen(window) ? kept.str : null;  // the slot's load happened in the window
      }
      // A reference inside the segment (one unsigned compare; w == 0 fails it too).
      if ((w & Words.TAG_MASK) != 0 || Long.compareUnsigned(w - base - 1, size - 64) > 0) return null;
      if (loadRelaxed(w + offCls) != stringClass) return null;
      long n = loadRelaxed(w + offStringLength);
      if (n < 0 || n > MAX_DIRECT_STRING || !contains(w + offStringBytes, (int) n)) return null;
      byte[] b = new byte[(int) n];
      UNSAFE.copyMemory(null, w + offStringBytes, b, BYTE_BASE, n);
      if (!windowOpen(window)) return null;  // the copy happens before its checks
      boolean ascii = true;
      for (byte x : b) {
        if (x < 0) {
          ascii = false;  // valid UTF-8: created so by libshared
          break;
        }
      }
      String str = new String(b, ascii ? StandardCharsets.ISO_8859_1 : StandardCharsets.UTF_8);
      strings[at] = new ReadStr(w, window, str);
      return str;
    }

    /** The class version (ClassRecord address) of the object at {@code obj}. */
    long classOf(long obj) {
      return load(obj + offCls);
    }

    /**
     * Starts loading the header of the object at {@code obj} (an acquire load, which the compiler
     * keeps although its value is unused, of the word the next field access through its proxy
     * checks first), so that its cache miss overlaps with what the caller does before that access.
     * Nothing is read for an address outside the objects space.
     */
    void touch(long obj) {
      if (mayHoldObjectAt(obj)) load(obj + offCls);
    }
  }
}
