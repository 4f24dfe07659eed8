// Blocking calls: the interrupt hook, repositories, channels and monitors.
#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <mutex>
#include <string>
#include <vector>

#include "jni_common.hpp"
#include "monitor.hpp"
#include "segment.hpp"
#include "session.hpp"

namespace colors_jni {

// ---- interrupts ----
//
// libshared's blocking waits wake every kInterruptSliceNs (50 ms) and call this thread's hook. The
// hook runs on the blocked Java thread itself, inside its native call, so the JNIEnv of that call is
// valid: it calls Thread.interrupted() (which clears the flag, as any Java method throwing
// InterruptedException does) and, if it was set, the wait throws InterruptedError, which becomes
// org.colors.SharedInterruptedException.

namespace {

thread_local JNIEnv* t_env = nullptr;
thread_local bool t_detach_interrupt = false;  // the hook stopped this thread's wait for a detach
std::atomic<int> g_blocking_in_flight{0};      // threads inside a Blocking (see jni_common.hpp)
std::atomic<int> g_closing{0};                 // detaches waiting for the count to drain
// Blocking sections of this thread. libshared also calls the hook from a plain container change
// waiting for a transaction (tx_wait_container_free, bounded by COLORS_TX_PLAIN_WAIT_MS); Java
// keeps that wait uninterruptible, as it is for threads that never made a blocking call.
thread_local int t_blocking = 0;

bool interrupt_hook() {
  if (t_blocking == 0) return false;
  if (g_closing.load(std::memory_order_seq_cst) > 0) {
    t_detach_interrupt = true;
    return true;
  }
  JNIEnv* env = t_env;
  if (env == nullptr || env->ExceptionCheck()) return false;
  jboolean r = env->CallStaticBooleanMethod(g.thread_cls, g.thread_interrupted);
  if (env->ExceptionCheck()) {
    env->ExceptionClear();
    return false;
  }
  return r == JNI_TRUE;
}

}  // namespace

Blocking::Blocking(JNIEnv* env) {
  g_blocking_in_flight.fetch_add(1, std::memory_order_seq_cst);
  if (g_closing.load(std::memory_order_seq_cst) > 0) {
    g_blocking_in_flight.fetch_sub(1, std::memory_order_seq_cst);
    throw colors::NotAttachedError("SharedMemory.detach() is closing the attachment; attach again to make blocking calls");
  }
  t_detach_interrupt = false;
  if (t_env != env) {
    // A JNIEnv belongs to one thread for as long as that thread is attached to the JVM.
    t_env = env;
    colors::detail::set_interrupt_hook(&interrupt_hook);
  }
  ++t_blocking;
}

Blocking::~Blocking() {
  --t_blocking;
  g_blocking_in_flight.fetch_sub(1, std::memory_order_seq_cst);
}

namespace {
// Every thread's record of its segment uses, for begin_detach's wait (jni_common.hpp, the detach
// protocol). A list rather than one shared count: natives of concurrent threads then write only
// their own cache line.
std::mutex g_uses_registry_mu;
ThreadSegmentUses* g_uses_registry = nullptr;  // GUARDED_BY(g_uses_registry_mu)

// This thread's record: a SegmentUse (every native) finds it with one lookup of the library's
// dynamic TLS and keeps its address for the destructor.
thread_local ThreadSegmentUses t_segment;

// The SegmentUses alive on threads other than the calling one.
long other_threads_segment_uses() {
  std::lock_guard<std::mutex> lk(g_uses_registry_mu);
  long n = 0;
  for (ThreadSegmentUses* r = g_uses_registry; r != nullptr; r = r->next) {
    if (r != &t_segment) n += r->uses.load(std::memory_order_seq_cst);
  }
  return n;
}
}  // namespace

ThreadSegmentUses::ThreadSegmentUses() {
  std::lock_guard<std::mutex> lk(g_uses_registry_mu);
  next = g_uses_registry;
  if (next != nullptr) next->prev = this;
  g_uses_registry = this;
}

ThreadSegmentUses::~ThreadSegmentUses() {
  std::lock_guard<std::mutex> lk(g_uses_registry_mu);
  if (prev != nullptr) prev->next = next;
  else g_uses_registry = next;
  if (next != nullptr) next->prev = prev;
}

SegmentUse::SegmentUse() : mine_(&t_segment) {
  ThreadSegmentUses& t = *mine_;
  if (t.detaching) {
    mine_ = nullptr;  // not counted
    return;
  }
  const long u = t.uses.load(std::memory_order_relaxed);  // this thread's own count
  t.uses.store(u + 1, std::memory_order_seq_cst);  // before the read of closing (seq_cst: store-load)
  if (g_closing.load(std::memory_order_seq_cst) > 0) {
    t.uses.store(u, std::memory_order_release);
    throw colors::NotAttachedError("SharedMemory.detach() is detaching this process from the heap; attach again to use it");
  }
}

SegmentUse::~SegmentUse() {
  if (mine_ == nullptr) return;
  // After every access to the segment of this use: a detach that reads the decrement unmaps after.
  mine_->uses.store(mine_->uses.load(std::memory_order_relaxed) - 1, std::memory_order_release);
}

void begin_detach() {
  // A monitor held across the detach stays held for every process (libshared monitor.hpp): this
  // thread's are refused at once (its own waiters could never re-acquire them otherwise).
  if (colors::detail::Metadata* m = colors::detail::current_meta_or_null()) {
    const colors::detail::MonitorHolds h = colors::detail::monitors_held_here(m);
    if (h.thread != 0)
      throw colors::InvalidArgumentError("SharedMemory.detach() while this thread holds " + std::to_string(h.thread) +
                                         " shared monitor(s): exit them first; a monitor held across a detach would "
                                         "stay held for every process");
  }
  t_segment.detaching = true;
  g_closing.fetch_add(1, std::memory_order_seq_cst);
  // Blocked natives leave within one interrupt slice (50 ms) of their wait (Blocking's hook); the
  // others finish what they do. A detach called from an upcall of this thread's own native (at a
  // point where libshared holds nothing) does not wait for that native.
  while (g_blocking_in_flight.load(std::memory_order_seq_cst) > 0 || other_threads_segment_uses() > 0)
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  // Other threads' monitors: natives are refused now, so each holder meets NotAttachedException
  // (a woken waiter holds its monitor again) and its finally block exits the monitor, which
  // n_monitor_exit still allows. What is still held after kMonitorReleaseWaitMs refuses the
  // detach, before SharedMemory drops anything.
  constexpr int kMonitorReleaseWaitMs = 2000;
  if (colors::detail::Metadata* m = colors::detail::current_meta_or_null()) {
    std::size_t held = 0;
    for (int i = 0; i < kMonitorReleaseWaitMs && (held = colors::detail::monitors_held_here(m).process) != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (held != 0) {
      end_detach();
      throw colors::InvalidArgumentError("SharedMemory.detach() while other threads of this process hold " +
                                         std::to_string(held) +
                                         " shared monitor(s) (for 2 s): exit them first; a monitor held across a "
                                         "detach would stay held for every process");
    }
  }
}

void end_detach() {
  g_closing.fetch_sub(1, std::memory_order_seq_cst);
  t_segment.detaching = false;
}

void begin_closing_blocking_calls() {
  g_closing.fetch_add(1, std::memory_order_seq_cst);
  // The blocked threads leave within one interrupt slice (50 ms) of their wait.
  while (g_blocking_in_flight.load(std::memory_order_seq_cst) > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

void end_closing_blocking_calls() { g_closing.fetch_sub(1, std::memory_order_seq_cst); }

bool take_detach_interrupt() {
  bool d = t_detach_interrupt;
  t_detach_interrupt = false;
  return d;
}

namespace {

#define N(name, sig, fn) \
  { const_cast<char*>(name), const_cast<char*>(sig), reinterpret_cast<void*>(&fn) }

// Repository and channel records live in the classes space. The native structs below are created
// by org.colors once per name and handle (it caches them by name, and replaces a cached one whose
// repository or channel was deleted: repoDeleted / chanDeleted) and never freed, since a Java
// handle may outlive any cache entry; they are re-resolved after a detach/attach. A handle whose
// repository or channel was deleted throws SharedKeyException from every operation.

// Re-resolution after a detach/attach happens under the struct's mutex; the fast path only loads
// the generation it was resolved in.
struct JRepo {
  std::string name;
  colors::Repository rec;
  std::atomic<std::uint64_t> gen{~0ULL};
  std::mutex mu;

  colors::Repository& get() {
    const std::uint64_t cur = g_generation.load(std::memory_order_acquire);
    if (gen.load(std::memory_order_acquire) != cur || !colors::has_segment()) {
      std::lock_guard<std::mutex> lk(mu);
      if (gen.load(std::memory_order_relaxed) != cur || !colors::has_segment()) {
        rec = colors::repository(name);
        gen.store(cur, std::memory_order_release);
      }
    }
    return rec;
  }
};

struct JChan {
  std::string name;
  std::uint32_t capacity = 64;
  colors::Channel ch;
  std::atomic<std::uint64_t> gen{~0ULL};
  std::mutex mu;

  colors::Channel& get() {
    const std::uint64_t cur = g_generation.load(std::memory_order_acquire);
    if (gen.load(std::memory_order_acquire) != cur || !colors::has_segment()) {
      std::lock_guard<std::mutex> lk(mu);
      if (gen.load(std::memory_order_relaxed) != cur || !colors::has_segment()) {
        ch = colors::channel(name, capacity);
        gen.store(cur, std::memory_order_release);
      }
    }
    return ch;
  }
};

template <class T>
T* from_ptr(jlong p) {
  return reinterpret_cast<T*>(static_cast<std::intptr_t>(p));
}
template <class T>
jlong to_ptr(T* p) {
  return static_cast<jlong>(reinterpret_cast<std::intptr_t>(p));
}

jlong JNICALL n_repo_find(JNIEnv* env, jclass, jstring name) {
  return guarded<jlong>(env, 0, [&] {
    auto r = std::make_unique<JRepo>();
    r->name = java_to_utf8(env, name);
    r->get();  // creates it, checks the name
    return to_ptr(r.release());
  });
}

jobject JNICALL n_repo_get(JNIEnv* env, jclass, jlong p) {
  return guarded<jobject>(env, nullptr, [&] { return to_java(env, from_ptr<JRepo>(p)->get().get()); });
}

void JNICALL n_repo_set(JNIEnv* env, jclass, jlong p, jint tag, jlong bits, jobject obj) {
  guarded_void(env, [&] {
    colors::Repository& r = from_ptr<JRepo>(p)->get();
    Arg v = decode(env, tag, bits, obj);
    r.set(v.get());
  });
}

jlong JNICALL n_repo_address(JNIEnv* env, jclass, jlong p) {
  return guarded<jlong>(env, 0, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    return static_cast<jlong>(reinterpret_cast<std::uintptr_t>(from_ptr<JRepo>(p)->get().address()));
  });
}

jboolean JNICALL n_repo_deleted(JNIEnv* env, jclass, jlong p) {
  return guarded<jboolean>(env, JNI_FALSE, [&] { return from_ptr<JRepo>(p)->get().deleted() ? JNI_TRUE : JNI_FALSE; });
}

jboolean JNICALL n_repo_delete(JNIEnv* env, jclass, jstring name) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    return colors::delete_repository(java_to_utf8(env, name)) ? JNI_TRUE : JNI_FALSE;
  });
}

jboolean JNICALL n_chan_deleted(JNIEnv* env, jclass, jlong p) {
  return guarded<jboolean>(env, JNI_FALSE, [&] { return from_ptr<JChan>(p)->get().deleted() ? JNI_TRUE : JNI_FALSE; });
}

jboolean JNICALL n_chan_delete(JNIEnv* env, jclass, jstring name) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    return colors::delete_channel(java_to_utf8(env, name)) ? JNI_TRUE : JNI_FALSE;
  });
}

jlong JNICALL n_chan_find(JNIEnv* env, jclass, jstring name, jint capacity) {
  return guarded<jlong>(env, 0, [&] {
    if (capacity < 1 || static_cast<std::uint32_t>(capacity) > colors::Channel::kMaxCapacity) {
      throw colors::InvalidArgumentError("channel capacity must be between 1 and " +
                                         std::to_string(colors::Channel::kMaxCapacity) + " (the maximum), got " +
                                         std::to_string(capacity));
    }
    auto c = std::make_unique<JChan>();
    c->name = java_to_utf8(env, name);
    c->capacity = static_cast<std::uint32_t>(capacity);
    c->get();
    return to_ptr(c.release());
  });
}

jint JNICALL n_chan_capacity(JNIEnv* env, jclass, jlong p) {
  return guarded<jint>(env, 0, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    return static_cast<jint>(from_ptr<JChan>(p)->get().capacity());
  });
}

jboolean JNICALL n_chan_send(JNIEnv* env, jclass, jlong p, jint tag, jlong bits, jobject obj, jlong timeout_ms) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    Blocking blocking(env);  // first: destroyed after `v`, whose root must go before a detach unmaps
    colors::Channel& ch = from_ptr<JChan>(p)->get();
    if (tag == kTagNull) throw colors::InvalidArgumentError("null cannot be sent through a channel (it marks an empty slot)");
    Arg v = decode(env, tag, bits, obj);
    return ch.send(v.get(), timeout_ms) ? JNI_TRUE : JNI_FALSE;
  });
}

// Returns the value, or null on timeout (null is never sent).
jobject JNICALL n_chan_receive(JNIEnv* env, jclass, jlong p, jlong timeout_ms) {
  return guarded<jobject>(env, nullptr, [&]() -> jobject {
    colors::Channel& ch = from_ptr<JChan>(p)->get();
    Blocking blocking(env);
    std::optional<colors::Value> v = ch.receive(timeout_ms);
    if (!v) return nullptr;
    return to_java(env, std::move(*v));
  });
}

// ---- monitors ----
// The monitor of a shared object is keyed by its address (the raw word, as in colors::Monitor and
// the Python binding); a repository's by its record's address. Java keeps the object reachable
// (hence rooted) while it holds the monitor.

colors::detail::Metadata* meta() {
  colors::detail::Metadata* m = colors::detail::current_meta();
  colors::detail::check_server_state(m);
  return m;
}

const void* addr(jlong a) {
  if (a == 0) throw colors::InvalidArgumentError("no monitor address");
  return reinterpret_cast<const void*>(static_cast<std::uintptr_t>(a));
}

std::int64_t to_ns(jlong ms) {
  if (ms < 0) return -1;
  if (ms > INT64_MAX / 1000000) return -1;
  return static_cast<std::int64_t>(ms) * 1000000;
}

jboolean JNICALL n_monitor_enter(JNIEnv* env, jclass, jlong a, jlong timeout_ms) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    colors::detail::Metadata* m = meta();
    Blocking blocking(env);
    return colors::detail::monitor_enter(m, addr(a), to_ns(timeout_ms)) ? JNI_TRUE : JNI_FALSE;
  });
}

// Not a SegmentUse: a detach waits for the monitors other threads hold to be exited (begin_detach);
// the attach lock keeps the segment mapped meanwhile.
void JNICALL n_monitor_exit(JNIEnv* env, jclass, jlong a) {
  guarded_attachment_void(env, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    colors::detail::monitor_exit(meta(), addr(a));
  });
}

jboolean JNICALL n_monitor_wait(JNIEnv* env, jclass, jlong a, jlong timeout_ms) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    colors::detail::Metadata* m = meta();
    Blocking blocking(env);
    return colors::detail::monitor_wait(m, addr(a), to_ns(timeout_ms)) ? JNI_TRUE : JNI_FALSE;
  });
}

void JNICALL n_monitor_notify_all(JNIEnv* env, jclass, jlong a) {
  guarded_void(env, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    colors::detail::monitor_notify_all(meta(), addr(a));
  });
}

jboolean JNICALL n_monitor_held(JNIEnv* env, jclass, jlong a) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    return colors::detail::monitor_held_by_me(meta(), addr(a)) ? JNI_TRUE : JNI_FALSE;
  });
}

jlong JNICALL n_raw(JNIEnv* env, jclass, jobject h) {
  return guarded<jlong>(env, 0, [&] { return static_cast<jlong>(jvalue_of(env, h)->value().raw()); });
}

}  // namespace

void add_sync_natives(std::vector<JNINativeMethod>& out) {
  out.insert(out.end(), {
      N("repoFind", "(Ljava/lang/String;)J", n_repo_find),
      N("repoGet", "(J)Ljava/lang/Object;", n_repo_get),
      N("repoSet", "(JIJLjava/lang/Object;)V", n_repo_set),
      N("repoAddress", "(J)J", n_repo_address),
      N("repoDeleted", "(J)Z", n_repo_deleted),
      N("repoDelete", "(Ljava/lang/String;)Z", n_repo_delete),
      N("chanDeleted", "(J)Z", n_chan_deleted),
      N("chanDelete", "(Ljava/lang/String;)Z", n_chan_delete),
      N("chanFind", "(Ljava/lang/String;I)J", n_chan_find),
      N("chanCapacity", "(J)I", n_chan_capacity),
      N("chanSend", "(JIJLjava/lang/Object;J)Z", n_chan_send),
      N("chanReceive", "(JJ)Ljava/lang/Object;", n_chan_receive),
      N("monitorEnter", "(JJ)Z", n_monitor_enter),
      N("monitorExit", "(J)V", n_monitor_exit),
      N("monitorWait", "(JJ)Z", n_monitor_wait),
      N("monitorNotifyAll", "(J)V", n_monitor_notify_all),
      N("monitorHeld", "(J)Z", n_monitor_held),
      N("raw", "(Lorg/colors/Handle;)J", n_raw),
  });
}

}  // namespace colors_jni
