// libcolors_jni: JNI_OnLoad (class cache, RegisterNatives), errors, handles, attachment and the
// collector.
#include <array>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "session.hpp"
#include "barrier.hpp"
#include "futex.hpp"
#include "heap.hpp"
#include "jni_common.hpp"
#include "roots.hpp"
#include "segment.hpp"

namespace cd = colors::detail;

namespace colors_jni {

std::atomic<std::uint64_t> g_generation{1};
Cache g{};

namespace {

constexpr int kCodes = static_cast<int>(colors::ErrorCode::kNotDurable) + 1;
std::array<jclass, kCodes> g_error_cls{};  // global refs, one per colors::ErrorCode
// org.colors.rpc.RemoteException(String message, String remoteType, String remoteMessage)
jmethodID g_remote_ctor = nullptr;

// Handles are released by the Cleaner thread at any time; detach must not run concurrently with a
// release (a root slot of an unmapped segment). Releases take it shared, attach/detach exclusive.
std::shared_mutex g_attach_rw;
// JValues holding a root of the current attachment (tests: SharedMemory.liveHandles). Invariant: a
// JValue counts from its construction until its deletion only while its generation is the current
// one: attach (a new attachment) and detach zero it with g_attach_rw held exclusively, after the
// generation changed, and a JValue of an older generation is deleted (under g_attach_rw shared)
// without counting down. So releases of an ended attachment's proxies, which the JVM collects
// whenever it likes, never count down the current one's roots (never below zero).
std::atomic<std::int64_t> g_live_handles{0};

jclass global_class(JNIEnv* env, const char* name) {
  jclass c = env->FindClass(name);
  if (c == nullptr) return nullptr;
  auto gc = static_cast<jclass>(env->NewGlobalRef(c));
  env->DeleteLocalRef(c);
  return gc;
}

}  // namespace

std::shared_mutex& attach_lock() { return g_attach_rw; }

// ---- JValue ----

JValue::JValue(colors::Value&& val) : gen(g_generation.load(std::memory_order_acquire)), kind(val.kind()) {
  switch (kind) {
    case colors::TypeKind::kList: v = colors::List(val); break;
    case colors::TypeKind::kMap: v = colors::Map(val); break;
    case colors::TypeKind::kSet: v = colors::Set(val); break;
    case colors::TypeKind::kObject: v = colors::Object(val); break;
    default: v = std::move(val);
  }
  g_live_handles.fetch_add(1, std::memory_order_relaxed);
}

// REQUIRES: g_attach_rw held (shared): n_release, n_release_under_pressure.
JValue::~JValue() {
  if (gen == g_generation.load(std::memory_order_acquire)) g_live_handles.fetch_sub(1, std::memory_order_relaxed);
}

const colors::Value& JValue::value() const {
  return std::visit([](const auto& x) -> const colors::Value& { return x; }, v);
}

colors::Value& JValue::mutable_value() {
  return std::visit([](auto& x) -> colors::Value& { return x; }, v);
}

void JValue::check() const {
  if (gen != g_generation.load(std::memory_order_acquire) || !colors::has_segment())
    throw colors::NotAttachedError(
        "this shared object belongs to an attachment that was closed by SharedMemory.detach(); "
        "get it again (e.g. from its repository) after attaching");
}

namespace {
[[noreturn]] void wrong_kind(const JValue& r, const char* want) {
  throw colors::TypeMismatchError(std::string("expected a shared ") + want + ", got a shared " +
                                  std::string(colors::type_name(r.kind)));
}
}  // namespace

colors::List& JValue::list() {
  check();
  if (auto* p = std::get_if<colors::List>(&v)) return *p;
  wrong_kind(*this, "list");
}
colors::Map& JValue::map() {
  check();
  if (auto* p = std::get_if<colors::Map>(&v)) return *p;
  wrong_kind(*this, "map");
}
colors::Set& JValue::set() {
  check();
  if (auto* p = std::get_if<colors::Set>(&v)) return *p;
  wrong_kind(*this, "set");
}
colors::Object& JValue::object() {
  check();
  if (auto* p = std::get_if<colors::Object>(&v)) return *p;
  wrong_kind(*this, "user object");
}

namespace {
// Serializes the adoption of Java-held root slots by JValues (jvalue_of).
std::mutex g_adopt_mu;
}  // namespace

// A Handle's root (org.colors.Root) holds either a JValue (`ptr`) or, for handles made by the Java
// fast path, a slot of this process's root table that Java filled itself (`slot`, ptr == 0). The
// first native that needs a JValue for such a handle makes one that adopts the slot (no second
// root) and publishes it in `ptr`; from then on the Root releases it through Native.release.
// Invariants: the Handle is reachable during this call (natives receive it), so its Root's Cleaner
// action cannot run concurrently; ptr goes 0 -> JValue once, under g_adopt_mu; a slot from an
// older attachment (gen) is never adopted.
// A handle borrowed in a read scope (org.colors.ReadScope) has no root: Proxies.promote gives it
// one first (on the scope's thread while the scope is open; else it throws, and so does this).
JValue* jvalue_of(JNIEnv* env, jobject handle) {
  if (handle == nullptr) throw colors::InvalidArgumentError("null handle");
  jobject root = env->GetObjectField(handle, g.handle_root);
  if (root == nullptr) {
    env->CallStaticVoidMethod(g.proxies_cls, g.promote, handle);
    check_pending(env);
    root = env->GetObjectField(handle, g.handle_root);
  }
  if (root == nullptr) throw colors::NotAttachedError("this shared object's handle was released");
  auto* r = reinterpret_cast<JValue*>(static_cast<std::intptr_t>(env->GetLongField(root, g.root_ptr)));
  if (r == nullptr) {
    std::lock_guard<std::mutex> lk(g_adopt_mu);
    r = reinterpret_cast<JValue*>(static_cast<std::intptr_t>(env->GetLongField(root, g.root_ptr)));
    if (r == nullptr) {
      const jlong slot = env->GetLongField(root, g.root_slot);
      const auto gen = static_cast<std::uint64_t>(env->GetLongField(root, g.root_gen));
      const auto raw = static_cast<std::uint64_t>(env->GetLongField(handle, g.handle_raw));
      if (slot == 0 || gen != g_generation.load(std::memory_order_acquire) || !colors::has_segment()) {
        env->DeleteLocalRef(root);
        throw colors::NotAttachedError(
            "this shared object belongs to an attachment that was closed by SharedMemory.detach(); "
            "get it again (e.g. from its repository) after attaching");
      }
      r = new JValue(colors::Value::adopt_root(raw, reinterpret_cast<void*>(static_cast<std::intptr_t>(slot))));
      env->SetLongField(root, g.root_ptr, static_cast<jlong>(reinterpret_cast<std::intptr_t>(r)));
      // Root.ptr is volatile; make the store visible before anything this thread does next.
      std::atomic_thread_fence(std::memory_order_seq_cst);
    }
  }
  env->DeleteLocalRef(root);
  r->check();
  return r;
}

// ---- heap pressure ----
//
// libshared calls the heap-pressure hook (heap.hpp) when an allocation still fails after two
// collector cycles, once per failing allocation, on the allocating thread, before two more cycles
// and its last retry. Here it lets the JVM find dead proxies and releases their roots, so that a
// thread making many short-lived proxies does not run the shared heap out of memory just because
// the JVM's own GC has not run yet (their roots otherwise go only when it does):
// Proxies.onHeapPressure runs System.gc(), waits (bounded) until the JVM has enqueued the
// references it found, and releases every enqueued Root (n_release_under_pressure, n_spare_roots).
//
// Invariants (the deadlock argument, details at Proxies.onHeapPressure):
//  * The hook only acts on Java threads (JavaVM::GetEnv succeeds): an allocating Java thread is
//    inside a native call of this library, so calling Java is legal there; other threads of the
//    process (C++, Python) return at once.
//  * It takes no lock of libshared and waits for nothing that a holder of one may wait for: roots
//    are emptied with store_ref directly and kept as spares (never root_release, which may need
//    roots.cpp's mutex that the allocating thread may hold while it allocates a root-table chunk);
//    g_attach_rw only with try_lock; g_spare_mu is a leaf lock (its holders only push or pop).
//  * A Java exception pending on the thread is kept (cleared for the call, thrown again after);
//    onHeapPressure catches everything it throws itself (and records it), anything escaping it
//    (a VM error before its handler) is cleared: the allocation then fails or succeeds on its own.

JavaVM* g_vm = nullptr;
jmethodID g_on_pressure = nullptr;  // static void org.colors.Proxies.onHeapPressure()
std::atomic<std::int64_t> g_pressure_calls{0};

void heap_pressure_hook() noexcept {
  JavaVM* vm = g_vm;
  if (vm == nullptr || g_on_pressure == nullptr) return;
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_10) != JNI_OK || env == nullptr) return;  // not a Java thread
  g_pressure_calls.fetch_add(1, std::memory_order_relaxed);
  jthrowable pending = env->ExceptionOccurred();
  if (pending != nullptr) env->ExceptionClear();
  env->CallStaticVoidMethod(g.proxies_cls, g_on_pressure);
  if (env->ExceptionCheck()) env->ExceptionClear();
  if (pending != nullptr) {
    env->Throw(pending);
    env->DeleteLocalRef(pending);
  }
}

// Spare root slots: slots of this process's root table emptied on the heap-pressure path (null),
// with the attachment generation they belong to. Java's Roots takes them first (takeRoots), and
// n_release gives the rest back to libshared (root_release, outside the pressure path).
// Invariants: every spare is null; spares of another generation are dropped, never used (their
// attachment and its table are gone); g_spare_mu is a leaf lock.
namespace {
struct Spare {
  std::atomic<cd::Word>* slot;
  std::uint64_t gen;
};
std::mutex g_spare_mu;
std::vector<Spare> g_spares;  // GUARDED_BY(g_spare_mu)
}  // namespace
std::atomic<std::size_t> g_spare_count{0};

void add_spare_root(std::atomic<cd::Word>* slot, std::uint64_t gen) {
  std::lock_guard<std::mutex> lk(g_spare_mu);
  g_spares.push_back({slot, gen});
  g_spare_count.store(g_spares.size(), std::memory_order_relaxed);
}

void add_spare_roots(const jlong* slots, std::size_t n, std::uint64_t gen) {
  std::lock_guard<std::mutex> lk(g_spare_mu);
  for (std::size_t i = 0; i < n; ++i) {
    if (slots[i] != 0) g_spares.push_back({reinterpret_cast<std::atomic<cd::Word>*>(static_cast<std::uintptr_t>(slots[i])), gen});
  }
  g_spare_count.store(g_spares.size(), std::memory_order_relaxed);
}

std::size_t take_spare_roots(jlong* out, std::size_t n) {
  if (g_spare_count.load(std::memory_order_relaxed) == 0) return 0;
  const std::uint64_t gen = g_generation.load(std::memory_order_acquire);
  std::size_t k = 0;
  std::lock_guard<std::mutex> lk(g_spare_mu);
  while (k < n && !g_spares.empty()) {
    Spare s = g_spares.back();
    g_spares.pop_back();
    if (s.gen == gen) out[k++] = static_cast<jlong>(reinterpret_cast<std::uintptr_t>(s.slot));
  }
  g_spare_count.store(g_spares.size(), std::memory_order_relaxed);
  return k;
}

// REQUIRES: g_attach_rw held (shared or exclusive); not on the pressure path.
void recycle_spare_roots() {
  std::vector<Spare> v;
  {
    std::lock_guard<std::mutex> lk(g_spare_mu);
    v.swap(g_spares);
    g_spare_count.store(0, std::memory_order_relaxed);
  }
  const std::uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (!colors::has_segment()) return;
  for (const Spare& s : v) {
    if (s.gen == gen) cd::root_release(s.slot);
  }
}

// REQUIRES: g_attach_rw held exclusively (attach, detach).
void forget_spare_roots() {
  std::lock_guard<std::mutex> lk(g_spare_mu);
  g_spares.clear();
  g_spare_count.store(0, std::memory_order_relaxed);
}

// ---- errors ----

void throw_java(JNIEnv* env, const colors::Error& e) {
  if (e.code() == colors::ErrorCode::kInterrupted && take_detach_interrupt()) {
    env->ThrowNew(g_error_cls[static_cast<int>(colors::ErrorCode::kNotAttached)],
                  "SharedMemory.detach() closed the attachment while this call was waiting");
    return;
  }
  int i = static_cast<int>(e.code());
  jclass c = (i >= 0 && i < kCodes && g_error_cls[i] != nullptr) ? g_error_cls[i] : g_error_cls[0];
  if (e.code() == colors::ErrorCode::kRemote && g_remote_ctor != nullptr) {
    if (const auto* re = dynamic_cast<const colors::RemoteError*>(&e)) {
      // The remote type and message as fields of the exception (they are valid UTF-8: they were
      // shared strings).
      try {
        jstring msg = utf8_to_java(env, e.what());
        jstring type = utf8_to_java(env, re->remote_type());
        jstring rmsg = utf8_to_java(env, re->remote_message());
        auto ex = static_cast<jthrowable>(env->NewObject(c, g_remote_ctor, msg, type, rmsg));
        if (ex != nullptr) env->Throw(ex);
        return;
      } catch (const JavaPending&) {
        return;  // OutOfMemoryError or the like is pending
      }
    }
  }
  env->ThrowNew(c, e.what());
}

void check_pending(JNIEnv* env) {
  if (env->ExceptionCheck()) throw JavaPending{};
}

namespace {

// ---- natives of org.colors.Native: attachment, handles, collector ----

// Set while an attach or a detach waits for the heap-pressure watcher (n_await_heap_pressure
// holds g_attach_rw shared while it waits): the watcher returns -1 at once, and its Java loop ends.
// Attach and detach are serialised by SharedMemory's lock, so one Reset clears what one set.
std::atomic<bool> g_watch_stop{false};

bool watch_stopped() { return g_watch_stop.load(std::memory_order_acquire); }

// True when this made a new attachment; false when already attached to a live server, or when
// the heap of a server that died was taken back by its successor (same attachment, same roots).
jboolean JNICALL n_attach(JNIEnv* env, jclass, jstring socket) {
  return guarded_attachment<jboolean>(env, JNI_FALSE, [&] {
    std::string path = socket == nullptr ? std::string() : java_to_utf8(env, socket);
    // The heap-pressure watcher waits holding g_attach_rw shared: end its wait, as detach does,
    // so this exclusive lock is not starved (SharedMemory.attach starts a new watcher after).
    g_watch_stop.store(true, std::memory_order_release);
    struct Reset {
      ~Reset() { g_watch_stop.store(false, std::memory_order_release); }
    } reset;
    if (cd::Metadata* m = cd::current_meta_or_null()) cd::futex_wake_all(&m->heap_pressure_seq);
    std::unique_lock<std::shared_mutex> lk(g_attach_rw);
    if (colors::is_attached()) return JNI_FALSE;
    const std::uint64_t before = colors::detail::attachment_epoch();
    colors::attach(path);
    if (colors::detail::attachment_epoch() == before) return JNI_FALSE;
    forget_spare_roots();
    g_generation.fetch_add(1, std::memory_order_acq_rel);
    g_live_handles.store(0, std::memory_order_relaxed);
    return JNI_TRUE;
  });
}


// Blocked calls of other threads are made to throw NotAttachedException first, and the segment
// is unmapped only when none is left inside a blocking wait (Blocking, jni_common.hpp).
// SharedMemory.detach's first and last steps (jni_common.hpp, "uses of the segment"): refuse new
// natives that use the segment and wait for the running ones; then let them run again.
void JNICALL n_begin_detach(JNIEnv* env, jclass) { guarded_attachment_void(env, [&] { begin_detach(); }); }
void JNICALL n_end_detach(JNIEnv* env, jclass) { guarded_attachment_void(env, [&] { end_detach(); }); }

void JNICALL n_detach(JNIEnv* env, jclass) {
  guarded_attachment_void(env, [&] {
    g_watch_stop.store(true, std::memory_order_release);
    struct Reset {
      ~Reset() {
        end_closing_blocking_calls();
        g_watch_stop.store(false, std::memory_order_release);
      }
    } reset;
    begin_closing_blocking_calls();
    if (cd::Metadata* m = cd::current_meta_or_null()) cd::futex_wake_all(&m->heap_pressure_seq);
    std::unique_lock<std::shared_mutex> lk(g_attach_rw);
    if (!colors::has_segment()) return;
    g_generation.fetch_add(1, std::memory_order_acq_rel);
    g_live_handles.store(0, std::memory_order_relaxed);
    forget_spare_roots();
    colors::detach();
  });
}

// The heap-pressure watcher's wait (Proxies.watchHeapPressure; libshared heap.hpp): the current
// value of the segment's heap_pressure_seq once it differs from `seen`, or after timeout_ms; -1
// when a detach is waiting. Holds g_attach_rw shared while it waits, so the segment stays mapped.
jint JNICALL n_await_heap_pressure(JNIEnv* env, jclass, jint seen, jlong timeout_ms) {
  return guarded_attachment<jint>(env, -1, [&]() -> jint {
    if (watch_stopped()) return -1;
    std::shared_lock<std::shared_mutex> lk(g_attach_rw);
    if (watch_stopped()) return -1;
    cd::Metadata* m = cd::current_meta();  // NotAttachedException when detached
    std::uint32_t cur = cd::await_heap_pressure(m, static_cast<std::uint32_t>(seen), timeout_ms * 1'000'000, &watch_stopped);
    return watch_stopped() ? -1 : static_cast<jint>(cur);
  });
}

// The watcher's start (counted in this client's slot, so allocations under pressure wait for its
// relief) and the end of each of its reliefs.
void JNICALL n_register_pressure_watcher(JNIEnv* env, jclass) {
  guarded_attachment_void(env, [&] {
    std::shared_lock<std::shared_mutex> lk(g_attach_rw);
    cd::register_pressure_watcher(cd::current_meta());
  });
}

void JNICALL n_heap_relieved(JNIEnv* env, jclass) {
  guarded_attachment_void(env, [&] {
    std::shared_lock<std::shared_mutex> lk(g_attach_rw);
    cd::note_heap_relief(cd::current_meta());
  });
}

jboolean JNICALL n_is_attached(JNIEnv*, jclass) { return colors::has_segment() ? JNI_TRUE : JNI_FALSE; }
jboolean JNICALL n_server_alive(JNIEnv*, jclass) { return colors::is_attached() ? JNI_TRUE : JNI_FALSE; }

void JNICALL n_ping(JNIEnv* env, jclass) {
  guarded_attachment_void(env, [&] { colors::ping(); });
}

jlong JNICALL n_generation(JNIEnv*, jclass) {
  return static_cast<jlong>(g_generation.load(std::memory_order_acquire));
}

void JNICALL n_release(JNIEnv* env, jclass, jlong ptr) {
  guarded_attachment_void(env, [&] {
    auto* r = reinterpret_cast<JValue*>(static_cast<std::intptr_t>(ptr));
    if (r == nullptr) return;
    std::shared_lock<std::shared_mutex> lk(g_attach_rw);
    delete r;  // drops the root if its attachment is still the current one
    // Not on the pressure path: spare slots can go back to libshared now.
    if (g_spare_count.load(std::memory_order_relaxed) != 0) recycle_spare_roots();
  });
}

jlong JNICALL n_live_handles(JNIEnv*, jclass) { return g_live_handles.load(std::memory_order_relaxed); }

// Releases a proxy's JValue on the heap-pressure path (Proxies.onHeapPressure, run by the hook
// below inside an allocation): like n_release, but without root_release, which may need roots.cpp's
// process mutex, which the allocating thread may hold (heap.hpp, REQUIRES of the hook). The root
// slot is taken out of the Value, emptied here with the deletion barrier (store_ref(null), as
// root_release does) and kept as a spare root slot (above); the JValue is deleted holding nothing.
// g_attach_rw is only tried: if an attach or detach holds it (unsupported while threads use shared
// objects), the JValue is left alone (leaked; its root goes with that attachment).
void JNICALL n_release_under_pressure(JNIEnv* env, jclass, jlong ptr) {
  guarded_attachment_void(env, [&] {
    auto* r = reinterpret_cast<JValue*>(static_cast<std::intptr_t>(ptr));
    if (r == nullptr) return;
    std::shared_lock<std::shared_mutex> lk(g_attach_rw, std::try_to_lock);
    if (!lk.owns_lock()) return;
    if (r->gen == g_generation.load(std::memory_order_acquire) && colors::has_segment()) {
      if (auto* slot = static_cast<std::atomic<cd::Word>*>(r->mutable_value().take_root_slot())) {
        cd::store_ref(slot, cd::kNull);
        add_spare_root(slot, r->gen);
      }
    }
    delete r;  // no root left (or one of a closed attachment, which ~Value does not touch)
  });
}

// Java-held root slots (org.colors.Roots) emptied by Java on the heap-pressure path: kept as spares
// instead of going back to Roots' pool (whose lock the allocating thread may hold or wait for).
void JNICALL n_spare_roots(JNIEnv* env, jclass, jlongArray slots, jint n, jlong gen) {
  guarded_attachment_void(env, [&] {
    if (n <= 0) return;
    std::vector<jlong> v(static_cast<std::size_t>(n));
    env->GetLongArrayRegion(slots, 0, n, v.data());
    check_pending(env);
    std::shared_lock<std::shared_mutex> lk(g_attach_rw, std::try_to_lock);
    if (!lk.owns_lock()) return;
    add_spare_roots(v.data(), v.size(), static_cast<std::uint64_t>(gen));
  });
}

jlong JNICALL n_pressure_hook_calls(JNIEnv*, jclass) { return g_pressure_calls.load(std::memory_order_relaxed); }

jlongArray gc_array(JNIEnv* env, const colors::GcStats& s) {
  const jlong f[] = {static_cast<jlong>(s.cycle),          static_cast<jlong>(s.walk_ns),
                     static_cast<jlong>(s.mark_ns),        static_cast<jlong>(s.remark_ns),
                     static_cast<jlong>(s.sweep_ns),       static_cast<jlong>(s.total_ns),
                     static_cast<jlong>(s.marking_passes), static_cast<jlong>(s.objects_marked),
                     static_cast<jlong>(s.bytes_marked),   static_cast<jlong>(s.objects_freed),
                     static_cast<jlong>(s.bytes_freed),    static_cast<jlong>(s.heap_used_before),
                     static_cast<jlong>(s.heap_used_after), static_cast<jlong>(s.largest_free),
                     static_cast<jlong>(s.threads),        static_cast<jlong>(s.pending_objects)};
  constexpr jsize n = sizeof(f) / sizeof(f[0]);
  jlongArray a = env->NewLongArray(n);
  check_pending(env);
  env->SetLongArrayRegion(a, 0, n, f);
  return a;
}

jlongArray JNICALL n_collect(JNIEnv* env, jclass, jlong timeout_ms) {
  return guarded_attachment<jlongArray>(env, nullptr, [&] {
    Blocking blocking(env);
    colors::GcStats s = colors::collect(timeout_ms);
    return gc_array(env, s);
  });
}

jlong JNICALL n_checkpoint(JNIEnv* env, jclass) {
  return guarded_attachment<jlong>(env, 0, [&] {
    Blocking blocking(env);
    return static_cast<jlong>(colors::checkpoint());
  });
}

// Both read the segment, and heap_stats holds the heap lock while it walks the free list: each is a
// use of the segment (guarded), which a detach waits for. Without that, a detach that unmapped
// the heap under a heap_stats left the unlock to the private copy it maps in its place, and the
// heap lock held for good by a thread id (every process's allocations and the server waited).
jlongArray JNICALL n_gc_stats(JNIEnv* env, jclass) {
  return guarded<jlongArray>(env, nullptr, [&] { return gc_array(env, colors::gc_stats()); });
}

jlongArray JNICALL n_heap_stats(JNIEnv* env, jclass) {
  return guarded<jlongArray>(env, nullptr, [&] {
    colors::HeapStats s = colors::heap_stats();
    const jlong f[] = {static_cast<jlong>(s.capacity), static_cast<jlong>(s.free_bytes),
                       static_cast<jlong>(s.free_chunks), static_cast<jlong>(s.largest_free),
                       static_cast<jlong>(s.allocated_bytes_total)};
    jlongArray a = env->NewLongArray(5);
    check_pending(env);
    env->SetLongArrayRegion(a, 0, 5, f);
    return a;
  });
}

bool init_cache(JNIEnv* env) {
  g.long_cls = global_class(env, "java/lang/Long");
  g.double_cls = global_class(env, "java/lang/Double");
  g.boolean_cls = global_class(env, "java/lang/Boolean");
  g.string_cls = global_class(env, "java/lang/String");
  g.object_cls = global_class(env, "java/lang/Object");
  g.ioobe_cls = global_class(env, "java/lang/IndexOutOfBoundsException");
  g.thread_cls = global_class(env, "java/lang/Thread");
  g.proxies_cls = global_class(env, "org/colors/Proxies");
  if (!g.long_cls || !g.double_cls || !g.boolean_cls || !g.string_cls || !g.object_cls || !g.ioobe_cls ||
      !g.thread_cls || !g.proxies_cls)
    return false;
  g.long_value_of = env->GetStaticMethodID(g.long_cls, "valueOf", "(J)Ljava/lang/Long;");
  g.double_value_of = env->GetStaticMethodID(g.double_cls, "valueOf", "(D)Ljava/lang/Double;");
  g.wrap = env->GetStaticMethodID(g.proxies_cls, "wrap", "(JJI)Ljava/lang/Object;");
  g.wrap_transient = env->GetStaticMethodID(g.proxies_cls, "wrapTransient", "(JJI)Ljava/lang/Object;");
  g.lookup = env->GetStaticMethodID(g.proxies_cls, "lookup", "(J)Ljava/lang/Object;");
  g.promote = env->GetStaticMethodID(g.proxies_cls, "promote", "(Lorg/colors/Handle;)V");
  g.thread_interrupted = env->GetStaticMethodID(g.thread_cls, "interrupted", "()Z");
  if (!g.long_value_of || !g.double_value_of || !g.wrap || !g.wrap_transient || !g.lookup || !g.promote || !g.thread_interrupted)
    return false;
  jfieldID t = env->GetStaticFieldID(g.boolean_cls, "TRUE", "Ljava/lang/Boolean;");
  jfieldID f = env->GetStaticFieldID(g.boolean_cls, "FALSE", "Ljava/lang/Boolean;");
  if (!t || !f) return false;
  g.boolean_true = env->NewGlobalRef(env->GetStaticObjectField(g.boolean_cls, t));
  g.boolean_false = env->NewGlobalRef(env->GetStaticObjectField(g.boolean_cls, f));
  jclass handle = env->FindClass("org/colors/Handle");
  if (!handle) return false;
  g.handle_root = env->GetFieldID(handle, "root", "Lorg/colors/Root;");
  g.handle_raw = env->GetFieldID(handle, "raw", "J");
  jclass root = env->FindClass("org/colors/Root");
  if (!g.handle_root || !g.handle_raw || !root) return false;
  g.root_ptr = env->GetFieldID(root, "ptr", "J");
  g.root_slot = env->GetFieldID(root, "slot", "J");
  g.root_gen = env->GetFieldID(root, "gen", "J");
  if (!g.root_ptr || !g.root_slot || !g.root_gen) return false;

  using C = colors::ErrorCode;
  const std::pair<C, const char*> errors[] = {
      {C::kGeneric, "org/colors/SharedMemoryException"},
      {C::kNotAttached, "org/colors/NotAttachedException"},
      {C::kServerGone, "org/colors/ServerGoneException"},
      {C::kVersionMismatch, "org/colors/VersionMismatchException"},
      {C::kAddressInUse, "org/colors/AddressInUseException"},
      {C::kRefused, "org/colors/RefusedException"},
      {C::kOutOfMemory, "org/colors/SharedOutOfMemoryException"},
      {C::kTypeMismatch, "org/colors/TypeMismatchException"},
      {C::kOverflow, "org/colors/SharedOverflowException"},
      {C::kOwnerDied, "org/colors/OwnerDiedException"},
      {C::kNotOwner, "org/colors/NotOwnerException"},
      {C::kIndex, "org/colors/SharedIndexException"},
      {C::kKey, "org/colors/SharedKeyException"},
      {C::kInvalidArgument, "org/colors/InvalidArgumentException"},
      {C::kInterrupted, "org/colors/SharedInterruptedException"},
      {C::kCorrupt, "org/colors/CorruptHeapException"},
      {C::kTimeout, "org/colors/rpc/RpcTimeoutException"},
      {C::kRemote, "org/colors/rpc/RemoteException"},
      {C::kUnavailable, "org/colors/rpc/UnavailableException"},
      {C::kTransactionConflict, "org/colors/TransactionConflictException"},
      {C::kTransactionAborted, "org/colors/TransactionAbortedException"},
      {C::kNotDurable, "org/colors/DurabilityException"},
  };
  for (const auto& [code, name] : errors) {
    jclass c = global_class(env, name);
    if (!c) return false;
    g_error_cls[static_cast<int>(code)] = c;
  }
  g_remote_ctor = env->GetMethodID(g_error_cls[static_cast<int>(C::kRemote)], "<init>",
                                   "(Ljava/lang/String;Ljava/lang/String;Ljava/lang/String;)V");
  if (!g_remote_ctor) return false;
  return true;
}

}  // namespace

void add_module_natives(std::vector<JNINativeMethod>& out) {
  out.insert(out.end(), {
      {const_cast<char*>("attach"), const_cast<char*>("(Ljava/lang/String;)Z"), reinterpret_cast<void*>(&n_attach)},
      {const_cast<char*>("detach"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_detach)},
      {const_cast<char*>("beginDetach"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_begin_detach)},
      {const_cast<char*>("endDetach"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_end_detach)},
      {const_cast<char*>("isAttached"), const_cast<char*>("()Z"), reinterpret_cast<void*>(&n_is_attached)},
      {const_cast<char*>("serverAlive"), const_cast<char*>("()Z"), reinterpret_cast<void*>(&n_server_alive)},
      {const_cast<char*>("ping"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_ping)},
      {const_cast<char*>("generation"), const_cast<char*>("()J"), reinterpret_cast<void*>(&n_generation)},
      {const_cast<char*>("release"), const_cast<char*>("(J)V"), reinterpret_cast<void*>(&n_release)},
      {const_cast<char*>("liveHandles"), const_cast<char*>("()J"), reinterpret_cast<void*>(&n_live_handles)},
      {const_cast<char*>("releaseUnderPressure"), const_cast<char*>("(J)V"), reinterpret_cast<void*>(&n_release_under_pressure)},
      {const_cast<char*>("spareRoots"), const_cast<char*>("([JIJ)V"), reinterpret_cast<void*>(&n_spare_roots)},
      {const_cast<char*>("pressureHookCalls"), const_cast<char*>("()J"), reinterpret_cast<void*>(&n_pressure_hook_calls)},
      {const_cast<char*>("collect"), const_cast<char*>("(J)[J"), reinterpret_cast<void*>(&n_collect)},
      {const_cast<char*>("checkpoint"), const_cast<char*>("()J"), reinterpret_cast<void*>(&n_checkpoint)},
      {const_cast<char*>("gcStats"), const_cast<char*>("()[J"), reinterpret_cast<void*>(&n_gc_stats)},
      {const_cast<char*>("heapStats"), const_cast<char*>("()[J"), reinterpret_cast<void*>(&n_heap_stats)},
      {const_cast<char*>("awaitHeapPressure"), const_cast<char*>("(IJ)I"), reinterpret_cast<void*>(&n_await_heap_pressure)},
      {const_cast<char*>("registerPressureWatcher"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_register_pressure_watcher)},
      {const_cast<char*>("heapRelieved"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_heap_relieved)},
  });
}

void add_values_natives(std::vector<JNINativeMethod>& out);
void add_containers_natives(std::vector<JNINativeMethod>& out);
void add_sync_natives(std::vector<JNINativeMethod>& out);
void add_objects_natives(std::vector<JNINativeMethod>& out);
void add_transaction_natives(std::vector<JNINativeMethod>& out);
bool register_rpc_natives(JNIEnv* env);
bool register_sorted_map_natives(JNIEnv* env);

}  // namespace colors_jni

extern "C" JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  using namespace colors_jni;
  JNIEnv* env = nullptr;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_10) != JNI_OK) return JNI_ERR;
  if (!init_cache(env)) return JNI_ERR;
  std::vector<JNINativeMethod> methods;
  add_module_natives(methods);
  add_values_natives(methods);
  add_containers_natives(methods);
  add_sync_natives(methods);
  add_objects_natives(methods);
  add_transaction_natives(methods);
  jclass native_cls = env->FindClass("org/colors/Native");
  if (!native_cls) return JNI_ERR;
  if (env->RegisterNatives(native_cls, methods.data(), static_cast<jint>(methods.size())) != 0) return JNI_ERR;
  if (!register_rpc_natives(env)) return JNI_ERR;
  if (!register_sorted_map_natives(env)) return JNI_ERR;
  g_on_pressure = env->GetStaticMethodID(g.proxies_cls, "onHeapPressure", "()V");
  if (!g_on_pressure) return JNI_ERR;
  g_vm = vm;
  colors::detail::set_heap_pressure_hook(&heap_pressure_hook);
  return JNI_VERSION_10;
}

extern "C" JNIEXPORT void JNICALL JNI_OnUnload(JavaVM*, void*) {
  colors::detail::set_heap_pressure_hook(nullptr);
  colors_jni::g_vm = nullptr;
}
