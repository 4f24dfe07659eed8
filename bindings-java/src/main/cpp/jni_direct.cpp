// The direct view of the segment used by the Java field fast path (org.colors.Direct): the mapped
// range as direct ByteBuffers, the byte offsets of the layout the fast path reads (taken from the
// C++ structs here, so Java never hard-codes them), and the slow-path resolution of a field name
// to its slot in a class version. Everything else of a field access happens in Java, without JNI.
//
// These natives are resolved by their exported JNI names (not registered in jni_module.cpp).
#include <cstddef>
#include <string>
#include <vector>

#include "classes.hpp"
#include "containers.hpp"
#include "jni_class_record.hpp"
#include "jni_common.hpp"
#include "barrier.hpp"
#include "layout.hpp"
#include "objects.hpp"
#include "read_scope.hpp"
#include "roots.hpp"
#include "segment.hpp"
#include "transaction.hpp"

namespace cd = colors::detail;

namespace {

// The layout the Java fast path relies on (org.colors.Direct reads these at init and checks them
// against its own expectations; the static_asserts document what the bit tricks in Java assume).
static_assert(sizeof(cd::Word) == 8);
static_assert(sizeof(cd::BlockHeader) == 16);
static_assert(offsetof(cd::BlockHeader, word) == 0);
static_assert(sizeof(std::atomic<cd::Word>) == 8 && alignof(std::atomic<cd::Word>) == 8);
static_assert(sizeof(std::atomic<std::uint32_t>) == 4);
static_assert(sizeof(colors::TypeKind) == 1);
static_assert(offsetof(cd::UserObject, head) == 0);
static_assert(offsetof(cd::FloatObject, value) % 8 == 0);
static_assert(offsetof(cd::ArrayObject, slots) % 8 == 0);
static_assert(sizeof(cd::UserObject) % 8 == 0);
static_assert(offsetof(cd::StringObject, length) % 8 == 0);
static_assert(offsetof(cd::ListObject, version) % 8 == 0 && sizeof(cd::ListObject::version) == 8);
static_assert(offsetof(cd::ListObject, size) % 8 == 0 && offsetof(cd::ListObject, array) % 8 == 0);
static_assert(offsetof(cd::SortedMapObject, root) % 8 == 0);
static_assert(sizeof(std::atomic<cd::Word>*) == sizeof(jlong));

// Indices of the array returned by layout(); must match org.colors.Direct.
enum : int {
  kBase, kSize, kOffCls, kPendingBits, kOffExtension, kOffSlots, kOffFloatValue, kOffArrayCapacity,
  kOffArraySlots, kOffClassKind, kOffGcStarted, kOffGcDone, kWordSize, kGranuleSize, kFloatClass,
  kOffStringLength, kOffStringBytes, kStringClass, kObjectsBegin, kOffListSize, kOffListArray, kOffListVersion,
  kOffSortedRoot, kArrayClass, kLayoutCount
};

jlong slot_bits(std::atomic<cd::Word>* slot) { return static_cast<jlong>(reinterpret_cast<std::uintptr_t>(slot)); }
std::atomic<cd::Word>* slot_of(jlong bits) { return reinterpret_cast<std::atomic<cd::Word>*>(static_cast<std::uintptr_t>(bits)); }

constexpr jint kChunkShift = 30;  // ByteBuffers of 1 GiB (a Java buffer holds at most 2^31-1 bytes)

}  // namespace

extern "C" {

JNIEXPORT jlongArray JNICALL Java_org_colors_Direct_layout(JNIEnv* env, jclass) {
  using namespace colors_jni;
  return guarded<jlongArray>(env, nullptr, [&] {
    cd::Metadata* m = cd::current_meta();
    jlong v[kLayoutCount];
    v[kBase] = static_cast<jlong>(reinterpret_cast<std::uintptr_t>(m));
    v[kSize] = static_cast<jlong>(m->total_size);
    if (m->base != reinterpret_cast<std::uintptr_t>(m))
      throw colors::CorruptHeapError("segment metadata names base " + std::to_string(m->base) + ", mapped elsewhere");
    v[kOffCls] = offsetof(cd::ObjectHead, cls);
    // The write barrier sets bits of the pending set (pending_bits.hpp): its address and the
    // address its bit 0 stands for.
    v[kPendingBits] = static_cast<jlong>(m->pending_bits_begin);
    v[kObjectsBegin] = static_cast<jlong>(m->objects_begin);
    v[kOffExtension] = offsetof(cd::UserObject, extension);
    v[kOffSlots] = sizeof(cd::UserObject);  // slots[] starts right after the fixed part
    v[kOffFloatValue] = offsetof(cd::FloatObject, value);
    v[kOffArrayCapacity] = offsetof(cd::ArrayObject, capacity);
    v[kOffArraySlots] = offsetof(cd::ArrayObject, slots);
    v[kOffClassKind] = offsetof(cd::ClassRecord, kind);
    v[kOffGcStarted] = offsetof(cd::Metadata, gc_started_seq);
    v[kOffGcDone] = offsetof(cd::Metadata, gc_done_seq);
    v[kWordSize] = sizeof(cd::Word);
    v[kGranuleSize] = cd::kGranule;
    // Every boxed float has this class (new_float): one compare instead of reading the class's kind.
    v[kFloatClass] = static_cast<jlong>(reinterpret_cast<std::uintptr_t>(m->builtin[static_cast<int>(colors::TypeKind::kFloat)]));
    // Strings are read from Java under the collector's seqlock (org.colors.Direct.View.readString).
    v[kOffStringLength] = offsetof(cd::StringObject, length);
    v[kOffStringBytes] = offsetof(cd::StringObject, bytes);
    v[kStringClass] = static_cast<jlong>(reinterpret_cast<std::uintptr_t>(m->builtin[static_cast<int>(colors::TypeKind::kString)]));
    // Lists are read from Java through their seqlock (org.colors.ListReads, list_seqlock.hpp).
    v[kOffListSize] = offsetof(cd::ListObject, size);
    v[kOffListArray] = offsetof(cd::ListObject, array);
    v[kOffListVersion] = offsetof(cd::ListObject, version);
    // Sorted maps are read from Java without their lock word (org.colors.SortedReads): the root
    // node's slot, and the class every node has (kArray: one compare instead of reading the kind).
    v[kOffSortedRoot] = offsetof(cd::SortedMapObject, root);
    v[kArrayClass] = static_cast<jlong>(reinterpret_cast<std::uintptr_t>(m->builtin[static_cast<int>(colors::TypeKind::kArray)]));
    jlongArray a = env->NewLongArray(kLayoutCount);
    check_pending(env);
    env->SetLongArrayRegion(a, 0, kLayoutCount, v);
    return a;
  });
}

// The mapped segment as direct ByteBuffers of 1 << 30 bytes (the last one shorter).
JNIEXPORT jobjectArray JNICALL Java_org_colors_Direct_segment(JNIEnv* env, jclass) {
  using namespace colors_jni;
  return guarded<jobjectArray>(env, nullptr, [&] {
    cd::Metadata* m = cd::current_meta();
    auto* base = reinterpret_cast<char*>(m);
    std::uint64_t size = m->total_size;
    std::uint64_t chunk = std::uint64_t{1} << kChunkShift;
    auto n = static_cast<jsize>((size + chunk - 1) / chunk);
    jclass bb = env->FindClass("java/nio/ByteBuffer");
    check_pending(env);
    jobjectArray a = env->NewObjectArray(n, bb, nullptr);
    check_pending(env);
    for (jsize i = 0; i < n; ++i) {
      std::uint64_t off = static_cast<std::uint64_t>(i) * chunk;
      std::uint64_t len = size - off < chunk ? size - off : chunk;
      jobject b = env->NewDirectByteBuffer(base + off, static_cast<jlong>(len));
      if (b == nullptr) {
        check_pending(env);
        throw colors::Error(colors::ErrorCode::kGeneric, "this JVM does not support JNI direct buffers");
      }
      env->SetObjectArrayElement(a, i, b);
      env->DeleteLocalRef(b);
    }
    return a;
  });
}

// The field `name` of class version `cls`: {slot, TypeKind, 1 if typed with a class name}, or null
// when the version lacks it.
JNIEXPORT jlongArray JNICALL Java_org_colors_Direct_resolve(JNIEnv* env, jclass, jlong cls, jstring name) {
  using namespace colors_jni;
  return guarded<jlongArray>(env, nullptr, [&]() -> jlongArray {
    cd::current_meta();
    const cd::FieldInfo* f = cd::find_field(colors_jni::user_class_record(cls), java_to_utf8(env, name));
    if (f == nullptr) return nullptr;
    jlong v[3] = {static_cast<jlong>(f->slot), static_cast<jlong>(f->type), f->class_name.len != 0 ? 1 : 0};
    jlongArray a = env->NewLongArray(3);
    check_pending(env);
    env->SetLongArrayRegion(a, 0, 3, v);
    return a;
  });
}

// ---- root slots held by Java (org.colors.Roots) ----
//
// Java takes empty slots of this process's root table in batches and fills and empties them itself
// (a seq_cst store of the referenced word; store_ref(null), i.e. the deletion barrier, to empty);
// the slots stay part of the table libshared and the server know (ClientSlot::roots), so the
// collector scans them and the server drops them when the process dies.
// Invariants: a slot returned here is null and belongs to the current attachment; Java gives it
// back (giveRoots) only null, or releases it through a JValue that adopted it (jvalue_of).
// REQUIRES (Java): no detach concurrently (org.colors.Roots.LOCK excludes it).

// Fills `out` with empty root slots; returns how many.
JNIEXPORT jint JNICALL Java_org_colors_Direct_takeRoots(JNIEnv* env, jclass, jlongArray out) {
  using namespace colors_jni;
  return guarded<jint>(env, 0, [&] {
    cd::current_meta();
    const jsize n = env->GetArrayLength(out);
    std::vector<jlong> v(static_cast<std::size_t>(n));
    // Spare slots emptied on the heap-pressure path first (jni_module.cpp), then new ones.
    const std::size_t spares = take_spare_roots(v.data(), v.size());
    for (std::size_t i = spares; i < v.size(); ++i) v[i] = slot_bits(cd::root_acquire(cd::kNull));
    env->SetLongArrayRegion(out, 0, n, v.data());
    check_pending(env);
    return static_cast<jint>(n);
  });
}

// Returns the first `n` slots of `slots` to libshared (each emptied with the deletion barrier).
JNIEXPORT void JNICALL Java_org_colors_Direct_giveRoots(JNIEnv* env, jclass, jlongArray slots, jint n) {
  using namespace colors_jni;
  guarded_void(env, [&] {
    cd::current_meta();
    std::vector<jlong> v(static_cast<std::size_t>(n));
    env->GetLongArrayRegion(slots, 0, n, v.data());
    check_pending(env);
    for (jlong s : v) cd::root_release(slot_of(s));
  });
}

// A new user object of class version `cls` (fields null): the address of a root slot that holds it
// (taken before the object is published, as every allocation's root), which Java now owns.
JNIEXPORT jlong JNICALL Java_org_colors_Direct_newObject(JNIEnv* env, jclass, jlong cls) {
  using namespace colors_jni;
  return guarded<jlong>(env, 0, [&] {
    cd::Metadata* m = cd::current_meta();
    cd::Rooted r = cd::new_user_object(m, colors_jni::user_class_record(cls));
    return slot_bits(r.take());
  });
}

// A root for the object at `raw`, which this thread read inside its current read scope
// (org.colors.ReadScope): promote_borrowed (the root, then the collector's flag while it marks),
// the slot handed to Java as newObject's.
JNIEXPORT jlong JNICALL Java_org_colors_Direct_promote(JNIEnv* env, jclass, jlong raw) {
  using namespace colors_jni;
  return guarded<jlong>(env, 0, [&] {
    cd::current_meta();
    if (!cd::in_read_scope()) throw colors::InvalidArgumentError("promote: not inside a read scope");
    cd::Rooted r = cd::promote_borrowed(static_cast<cd::Word>(raw));
    return slot_bits(r.take());
  });
}

// A new user object of class version `cls` allocated in this thread's read scope
// (new_user_object_scoped: no root, the scope keeps it; fields null): its word. OutOfMemoryError
// when the heap is full (a scope cannot wait for the collector).
JNIEXPORT jlong JNICALL Java_org_colors_Direct_newObjectScoped(JNIEnv* env, jclass, jlong cls) {
  using namespace colors_jni;
  return guarded<jlong>(env, 0, [&] {
    cd::Metadata* m = cd::current_meta();
    if (!cd::in_read_scope()) throw colors::InvalidArgumentError("newObjectScoped: not inside a read scope");
    return static_cast<jlong>(cd::new_user_object_scoped(m, colors_jni::user_class_record(cls), nullptr, 0));
  });
}

// Stores the reference `w`, which this thread's read scope holds (borrowed or allocated in it;
// or rooted), into the field slot at `slot` (store_scope_reference: the write barrier, then the
// collector's flag while it marks). The caller keeps the slot's object alive and checked the
// field's type.
JNIEXPORT void JNICALL Java_org_colors_Direct_storeScoped(JNIEnv* env, jclass, jlong slot, jlong w) {
  using namespace colors_jni;
  guarded_void(env, [&] {
    cd::current_meta();
    if (!cd::in_read_scope()) throw colors::InvalidArgumentError("storeScoped: not inside a read scope");
    cd::store_scope_reference(slot_of(slot), static_cast<cd::Word>(w));
  });
}

// The elements of the list of handle `h` at one instant (list_snapshot: its lock-free read, or its
// lock, and inside a transaction its ownership record), as pairs {word, root slot}: a reference
// comes with the root slot holding it, which is the caller's from now on (org.colors.ListReads
// adopts it or drops it, as the slots of newObject); a scalar with 0. Java makes the proxies, so no
// element costs a JNI upcall.
JNIEXPORT jlongArray JNICALL Java_org_colors_Direct_listWords(JNIEnv* env, jclass, jobject h) {
  using namespace colors_jni;
  return guarded<jlongArray>(env, nullptr, [&] {
    colors::List& l = jvalue_of(env, h)->list();
    std::vector<cd::Rooted> items = cd::list_snapshot(l.raw());
    const std::size_t n = items.size();
    if (n > static_cast<std::size_t>(INT32_MAX / 2)) throw colors::OutOfMemoryError("list too long for a Java array");
    jlongArray a = env->NewLongArray(static_cast<jsize>(2 * n));
    check_pending(env);  // nothing handed over yet: the Rooteds release everything
    std::vector<jlong> v(2 * n);
    for (std::size_t i = 0; i < n; ++i) v[2 * i] = static_cast<jlong>(items[i].word());
    env->SetLongArrayRegion(a, 0, static_cast<jsize>(2 * n), v.data());
    check_pending(env);
    // Handed over only now that nothing can fail any more.
    for (std::size_t i = 0; i < n; ++i) {
      std::atomic<cd::Word>* slot = items[i].take();
      v[2 * i + 1] = slot == nullptr ? 0 : slot_bits(slot);
    }
    env->SetLongArrayRegion(a, 0, static_cast<jsize>(2 * n), v.data());
    return a;
  });
}

// Stores a new shared string with the characters of `s` into the field slot at `slot` of the
// object at `obj` (write_slot: store_ref, the overwritten reference flagged pending; logged under
// the object's orec inside a transaction). `keep` is the Java object whose proxy roots the object
// owning the slot: a parameter, so it stays reachable (and the object alive) for the call.
// REQUIRES: the caller checked that the field takes strings, and computed `slot` as field_slot.
JNIEXPORT void JNICALL Java_org_colors_Direct_storeString(JNIEnv* env, jclass, jobject keep, jlong obj, jlong slot,
                                                         jstring s) {
  using namespace colors_jni;
  guarded_void(env, [&] {
    (void)keep;
    cd::Metadata* m = cd::current_meta();
    std::string utf8 = java_to_utf8(env, s);
    cd::Rooted r = cd::new_string(m, utf8);  // rooted until stored
    cd::write_slot(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(obj)), slot_of(slot), r.word());
  });
}

// ---- the field fast path inside a transaction (org.colors.SharedField) ----
// Java computes the slot as outside one, and reads or writes its word through libshared's
// transactional slot functions (owner = the object: its orec), one JNI call each. Only scalar
// words cross (small integers, booleans, null, immediate floats): Java decodes a read word only
// if it is one, and takes the JNI path by name (read_slot_rooted) for references.
// `keep` is the proxy or bound instance rooting the object (a parameter: reachable for the call).

// read_slot_word(obj, slot): the word, read under the transaction's isolation.
JNIEXPORT jlong JNICALL Java_org_colors_Direct_txLoad(JNIEnv* env, jclass, jobject keep, jlong obj, jlong slot) {
  using namespace colors_jni;
  return guarded<jlong>(env, 0, [&] {
    (void)keep;
    return static_cast<jlong>(
        cd::read_slot_word(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(obj)), slot_of(slot)));
  });
}

// Inside a transaction: the value in `slot` of the object at `obj`, read through the transaction
// (read_slot_rooted: the object's orec checked, a reference rooted), in one jlong: 0 for null; a
// scalar word as it is (the low three bits of a scalar word are never 000); for a reference the
// address of the root slot holding it (8-aligned: low three bits 000), the caller's from now on
// (org.colors.SharedField adopts it or drops it, as the slots of newObject).
JNIEXPORT jlong JNICALL Java_org_colors_Direct_txLoadRooted(JNIEnv* env, jclass, jobject keep, jlong obj, jlong slot) {
  using namespace colors_jni;
  return guarded<jlong>(env, 0, [&] {
    (void)keep;
    cd::Rooted r = cd::read_slot_rooted(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(obj)), slot_of(slot));
    const cd::Word w = r.word();
    if (!cd::is_ref(w)) return static_cast<jlong>(w);
    std::atomic<cd::Word>* root = r.take();
    static_assert(alignof(std::atomic<cd::Word>) == 8, "a root slot's address has its low three bits clear");
    return slot_bits(root);
  });
}

// write_slot(obj, slot, word): the object's orec taken, the old word logged, then stored.
// REQUIRES: `word` is a scalar the field's type takes (checked in Java as for the fast path).
JNIEXPORT void JNICALL Java_org_colors_Direct_txStore(JNIEnv* env, jclass, jobject keep, jlong obj, jlong slot,
                                                     jlong word) {
  using namespace colors_jni;
  guarded_void(env, [&] {
    (void)keep;
    const auto w = static_cast<cd::Word>(word);
    if (cd::is_ref(w)) throw colors::InvalidArgumentError("txStore of a reference word (binding bug)");
    cd::write_slot(reinterpret_cast<const void*>(static_cast<std::uintptr_t>(obj)), slot_of(slot), w);
  });
}

// Whether field `name` of class version `cls` takes the user object `value` (check_field_type: a
// field typed with a class name takes only objects of that name). `keep` roots `value`.
JNIEXPORT jboolean JNICALL Java_org_colors_Direct_accepts(JNIEnv* env, jclass, jlong cls, jstring name, jobject keep,
                                                         jlong value) {
  using namespace colors_jni;
  return guarded<jboolean>(env, JNI_FALSE, [&]() -> jboolean {
    (void)keep;
    cd::current_meta();
    const cd::FieldInfo* f = cd::find_field(colors_jni::user_class_record(cls), java_to_utf8(env, name));
    if (f == nullptr) return JNI_FALSE;
    try {
      cd::check_field_type(*f, static_cast<cd::Word>(value));
    } catch (const colors::TypeMismatchError&) {
      return JNI_FALSE;
    }
    return JNI_TRUE;
  });
}

// Runs libshared's heap verifier (REQUIRES: no mutator running): null when the heap verifies,
// else the report. For tests.
JNIEXPORT jstring JNICALL Java_org_colors_Direct_verifyHeap(JNIEnv* env, jclass) {
  using namespace colors_jni;
  return guarded<jstring>(env, nullptr, [&]() -> jstring {
    colors::VerifyResult r = colors::verify_heap();
    if (r.ok) return nullptr;
    return utf8_to_java(env, r.report.empty() ? std::string("heap verification failed") : r.report);
  });
}

}  // extern "C"
