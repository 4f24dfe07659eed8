// The direct view of the segment used by the Java field fast path (org.colors.Direct): the mapped
// range as direct ByteBuffers, the byte offsets of the layout the fast path reads (taken from the
// C++ structs here, so Java never hard-codes them), and the slow-path resolution of a field name
// to its slot in a class version. Everything else of a field access happens in Java, without JNI.
//
// These natives are resolved by their exported JNI names (not registered in jni_module.cpp).
#include <cstddef>
#include <string>

#include "classes.hpp"
#include "jni_common.hpp"
#include "layout.hpp"
#include "objects.hpp"
#include "segment.hpp"

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

// Indices of the array returned by layout(); must match org.colors.Direct.
enum : int {
  kBase, kSize, kOffCls, kOffPending, kOffExtension, kOffSlots, kOffFloatValue, kOffArrayCapacity,
  kOffArraySlots, kOffClassKind, kOffGcStarted, kOffGcDone, kWordSize, kGranuleSize, kFloatClass, kLayoutCount
};

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
    v[kOffPending] = offsetof(cd::BlockHeader, pending);
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

// The field `name` of class version `cls`: {slot, TypeKind}, or null when the version lacks it.
JNIEXPORT jlongArray JNICALL Java_org_colors_Direct_resolve(JNIEnv* env, jclass, jlong cls, jstring name) {
  using namespace colors_jni;
  return guarded<jlongArray>(env, nullptr, [&]() -> jlongArray {
    cd::current_meta();
    auto* c = reinterpret_cast<const cd::ClassRecord*>(static_cast<std::uintptr_t>(cls));
    if (c == nullptr || c->magic != cd::kClassMagic) throw colors::InvalidArgumentError("not a class record");
    const cd::FieldInfo* f = cd::find_field(c, java_to_utf8(env, name));
    if (f == nullptr) return nullptr;
    jlong v[2] = {static_cast<jlong>(f->slot), static_cast<jlong>(f->type)};
    jlongArray a = env->NewLongArray(2);
    check_pending(env);
    env->SetLongArrayRegion(a, 0, 2, v);
    return a;
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
