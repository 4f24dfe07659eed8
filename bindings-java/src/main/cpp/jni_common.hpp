// Shared declarations of libcolors_jni, the native half of the Java binding (package org.colors).
// One file per area: jni_module.cpp (load, attach, collector, handles), jni_values.cpp (value
// conversion both ways), jni_containers.cpp (list/map/set primitives), jni_sync.cpp (interrupts,
// repositories, channels, monitors), jni_objects.cpp (user objects and classes), jni_transaction.cpp
// (transactions; inside one, every native that reads or writes object slots or container internals
// goes through libshared's transactional functions: read_slot_*/write_slot, the container operations).
//
// Lifetime rule: every shared reference held by Java is one GC root of this process, owned by
// exactly one org.colors.Handle (through its org.colors.Root), which a proxy owns: either a
// colors::Value inside a JValue (Root.ptr), or a root-table slot Java filled itself (Root.slot; the
// field fast path, org.colors.Roots), which jvalue_of turns into a JValue adopting it when a native
// first needs one. The Handle's Cleaner releases the root (Native.release, or Roots.release in
// Java). Natives receive the Handle object itself (not its pointer as a long), so the Handle stays
// reachable, and its root alive, for the whole call.
//
// Values cross the boundary Java -> C++ as a triple (tag, bits, obj) built by org.colors.Codec:
// no allocation for scalars, one JNI call per operation. C++ -> Java they come back as null, Long,
// Double, Boolean, String, byte[] or a proxy (built by an upcall to Proxies.wrap, which keeps the
// identity cache).
#pragma once
#include <jni.h>

#include <atomic>
#include <colors/colors.hpp>
#include <cstdint>
#include <shared_mutex>
#include <string>
#include <utility>
#include <variant>

namespace colors_jni {

// ---- tags of the (tag, bits, obj) encoding; must match org.colors.Codec ----
enum Tag : jint {
  kTagNull = 0,
  kTagInt = 1,     // bits: the long value
  kTagFloat = 2,   // bits: Double.doubleToRawLongBits
  kTagBool = 3,    // bits: 0 or 1
  kTagString = 4,  // obj: java.lang.String
  kTagBinary = 5,  // obj: byte[]
  kTagRef = 6,     // obj: org.colors.Handle of a proxy
};

// ---- attachment (jni_module.cpp) ----
// Bumped at every attach and detach done through the binding: a JValue from an older generation
// refers to a mapping that is gone (NotAttachedError instead of a fault).
extern std::atomic<std::uint64_t> g_generation;

// A held shared reference. The variant holds the typed view so that container operations need no
// second root.
struct JValue {
  std::variant<colors::Value, colors::List, colors::Map, colors::Set, colors::Object> v;
  std::uint64_t gen;
  colors::TypeKind kind;

  explicit JValue(colors::Value&& val);
  ~JValue();
  JValue(const JValue&) = delete;
  JValue& operator=(const JValue&) = delete;
  const colors::Value& value() const;
  colors::Value& mutable_value();  // the heap-pressure release takes its root out (jni_module.cpp)
  void check() const;  // NotAttachedError when the proxy outlived its attachment
  colors::List& list();
  colors::Map& map();
  colors::Set& set();
  colors::Object& object();
};

// ---- errors ----
// Thrown inside natives when a Java exception is already pending (a failed JNI call or upcall):
// the guard returns at once and Java sees that exception.
struct JavaPending {};
// Thrown inside natives to raise a specific Java exception class (e.g. IndexOutOfBoundsException).
struct JavaThrow {
  jclass cls;  // global ref
  std::string message;
};
void throw_java(JNIEnv* env, const colors::Error& e);  // the org.colors exception for e.code()
void check_pending(JNIEnv* env);                          // throws JavaPending if an exception is pending

// Runs f() and converts every C++ exception into the matching pending Java exception, returning
// `fail` in that case. Every native goes through it: no C++ exception crosses into the JVM.
template <class R, class F>
R guarded(JNIEnv* env, R fail, F&& f) {
  try {
    return f();
  } catch (const colors::Error& e) {
    throw_java(env, e);
  } catch (const JavaPending&) {
  } catch (const JavaThrow& t) {
    env->ThrowNew(t.cls, t.message.c_str());
  } catch (const std::bad_alloc&) {
    env->ThrowNew(env->FindClass("java/lang/OutOfMemoryError"), "native allocation failed in libcolors_jni");
  } catch (const std::exception& e) {
    throw_java(env, colors::Error(colors::ErrorCode::kGeneric, e.what()));
  }
  return fail;
}
template <class F>
void guarded_void(JNIEnv* env, F&& f) {
  guarded<int>(env, 0, [&] {
    f();
    return 0;
  });
}

// ---- cached classes and members (jni_module.cpp, resolved in JNI_OnLoad) ----
struct Cache {
  jclass long_cls, double_cls, boolean_cls, string_cls, object_cls, ioobe_cls, proxies_cls, thread_cls;
  jmethodID long_value_of, double_value_of, wrap, wrap_transient, lookup, promote, thread_interrupted;
  jobject boolean_true, boolean_false;
  jfieldID handle_root, handle_raw, root_ptr, root_slot, root_gen;
};
extern Cache g;

JValue* jvalue_of(JNIEnv* env, jobject handle);  // the JValue of an org.colors.Handle (checked)

// Spare root slots (jni_module.cpp, "heap pressure"): null slots of the current attachment emptied
// on the heap-pressure path. Moves up to n of them into out (as slot addresses); returns how many.
// REQUIRES: no attach/detach concurrently (Java: org.colors.Roots.LOCK held).
std::size_t take_spare_roots(jlong* out, std::size_t n);

// ---- conversions (jni_values.cpp) ----
// A decoded argument: either a fresh Value (scalars, strings, binaries) or a borrowed reference to
// the Value of a Handle (no second root).
class Arg {
 public:
  Arg() = default;
  explicit Arg(colors::Value&& v) : owned_(std::move(v)) {}
  explicit Arg(const colors::Value* borrowed) : borrowed_(borrowed) {}
  const colors::Value& get() const { return borrowed_ ? *borrowed_ : owned_; }

 private:
  colors::Value owned_;
  const colors::Value* borrowed_ = nullptr;
};
Arg decode(JNIEnv* env, jint tag, jlong bits, jobject obj);
// Shared -> Java: null, Long, Double, Boolean, String, byte[], or a proxy (identity-cached).
jobject to_java(JNIEnv* env, colors::Value&& v);

// ---- one value handed to Java flat (jni_sorted_map.cpp) ----
// The tag of a shared object handed over with its root (org.colors.SortedNative.ROOTED): not one
// of the encoding's tags.
constexpr jint kTagRooted = 7;
// Writes `v` as (tag, bits, obj) into bits_out[0] / obj_out[0] and returns the tag: scalars as
// bits (no boxing upcall), strings and binaries as Java objects. With `hand_over`, a shared
// object Java proxies comes as kTagRooted with its word in bits_out[0] and its root slot in
// bits_out[1] (two elements), the caller's from then on (org.colors.Proxies.ofRooted adopts or
// drops it): no upcall to make its proxy. Without, its proxy in obj_out[0].
jint put_flat(JNIEnv* env, colors::Value&& v, jlongArray bits_out, jobjectArray obj_out, bool hand_over);
// A transient proxy of the container or user object v (Proxies.wrapTransient): not in the
// identity cache, its root released by its one user as soon as it is done (a server's argument
// converted to a private value; serverNext already passed on a live proxy of it if there was
// one). REQUIRES: v is a list, map, set or user object.
jobject to_java_transient(JNIEnv* env, colors::Value&& v);
jobjectArray to_java_array(JNIEnv* env, std::vector<colors::Value>&& items);
// UTF-16 (Java) <-> UTF-8 (shared). Lone surrogates are refused (InvalidArgumentError).
std::string java_to_utf8(JNIEnv* env, jstring s);
jstring utf8_to_java(JNIEnv* env, std::string_view s);

// ---- rpc (jni_rpc.cpp) ----
// Replies to the call the serving thread's worker `w` (an RpcNative.workerNew handle) holds, with
// `v`, as RpcNative.workerReply does; the call is forgotten even if that throws.
void worker_reply(jlong w, const colors::Value& v);

// ---- blocking calls (jni_sync.cpp) ----
// Held by a native for the duration of a blocking libshared call. Installs this thread's interrupt
// hook (once per thread): libshared's blocking waits then call it every 50 ms and throw
// InterruptedError when it returns true (Thread.interrupted(), or a detach() closing the
// attachment: then the native throws NotAttachedException).
// Invariants (the detach protocol): g_blocking_in_flight counts the threads between the
// constructor and the destructor; a Blocking is not made while a detach is closing (the
// constructor throws NotAttachedError: increment, then check, both seq_cst, against detach's
// store of `closing`, then its read of the count); while closing, every blocked thread's hook
// returns true at its next slice, so its wait throws and it leaves; detach unmaps only once the
// count is 0 (begin_closing_blocking_calls), so no thread is inside a blocking wait then.
class Blocking {
 public:
  explicit Blocking(JNIEnv* env);
  ~Blocking();
  Blocking(const Blocking&) = delete;
  Blocking& operator=(const Blocking&) = delete;
};
// Taken shared by natives that touch the segment without upcalls (monitor exit/notify/held, channel
// capacity, repository address), exclusively by attach and detach: such a native never runs while
// the segment is unmapped under it (e.g. a thread closing its SharedMonitor right after a detach
// woke its await()). Natives with upcalls into Java must not hold it (detach holds Java locks).
std::shared_mutex& attach_lock();
// detach: refuses new blocking calls, makes the blocked ones throw, and waits until none is left.
void begin_closing_blocking_calls();
void end_closing_blocking_calls();
// True (once) if this thread's last InterruptedError came from a detach closing the attachment.
bool take_detach_interrupt();

// ---- registration ----
void register_natives(JNIEnv* env, jclass native_cls);

}  // namespace colors_jni
