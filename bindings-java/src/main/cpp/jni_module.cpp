// libcolors_jni: JNI_OnLoad (class cache, RegisterNatives), errors, handles, attachment and the
// collector.
#include <array>
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "jni_common.hpp"

namespace colors_jni {

std::atomic<std::uint64_t> g_generation{1};
Cache g{};

namespace {

constexpr int kCodes = static_cast<int>(colors::ErrorCode::kUnavailable) + 1;
std::array<jclass, kCodes> g_error_cls{};  // global refs, one per colors::ErrorCode
// org.colors.rpc.RemoteException(String message, String remoteType, String remoteMessage)
jmethodID g_remote_ctor = nullptr;

// Handles are released by the Cleaner thread at any time; detach must not run concurrently with a
// release (a root slot of an unmapped segment). Releases take it shared, attach/detach exclusive.
std::shared_mutex g_attach_rw;
std::atomic<std::int64_t> g_live_handles{0};

jclass global_class(JNIEnv* env, const char* name) {
  jclass c = env->FindClass(name);
  if (c == nullptr) return nullptr;
  auto gc = static_cast<jclass>(env->NewGlobalRef(c));
  env->DeleteLocalRef(c);
  return gc;
}

}  // namespace

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

JValue::~JValue() { g_live_handles.fetch_sub(1, std::memory_order_relaxed); }

const colors::Value& JValue::value() const {
  return std::visit([](const auto& x) -> const colors::Value& { return x; }, v);
}

void JValue::check() const {
  if (gen != g_generation.load(std::memory_order_acquire) || !colors::is_attached())
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
JValue* jvalue_of(JNIEnv* env, jobject handle) {
  if (handle == nullptr) throw colors::InvalidArgumentError("null handle");
  jobject root = env->GetObjectField(handle, g.handle_root);
  if (root == nullptr) throw colors::NotAttachedError("this shared object's handle was released");
  auto* r = reinterpret_cast<JValue*>(static_cast<std::intptr_t>(env->GetLongField(root, g.root_ptr)));
  if (r == nullptr) {
    std::lock_guard<std::mutex> lk(g_adopt_mu);
    r = reinterpret_cast<JValue*>(static_cast<std::intptr_t>(env->GetLongField(root, g.root_ptr)));
    if (r == nullptr) {
      const jlong slot = env->GetLongField(root, g.root_slot);
      const auto gen = static_cast<std::uint64_t>(env->GetLongField(root, g.root_gen));
      const auto raw = static_cast<std::uint64_t>(env->GetLongField(handle, g.handle_raw));
      if (slot == 0 || gen != g_generation.load(std::memory_order_acquire) || !colors::is_attached()) {
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

// ---- errors ----

void throw_java(JNIEnv* env, const colors::Error& e) {
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

void JNICALL n_attach(JNIEnv* env, jclass, jstring socket) {
  guarded_void(env, [&] {
    std::string path = socket == nullptr ? std::string() : java_to_utf8(env, socket);
    std::unique_lock<std::shared_mutex> lk(g_attach_rw);
    if (colors::is_attached()) return;
    colors::attach(path);
    g_generation.fetch_add(1, std::memory_order_acq_rel);
  });
}

void JNICALL n_detach(JNIEnv* env, jclass) {
  guarded_void(env, [&] {
    std::unique_lock<std::shared_mutex> lk(g_attach_rw);
    if (!colors::is_attached()) return;
    g_generation.fetch_add(1, std::memory_order_acq_rel);
    colors::detach();
  });
}

jboolean JNICALL n_is_attached(JNIEnv*, jclass) { return colors::is_attached() ? JNI_TRUE : JNI_FALSE; }

void JNICALL n_ping(JNIEnv* env, jclass) {
  guarded_void(env, [&] { colors::ping(); });
}

jlong JNICALL n_generation(JNIEnv*, jclass) {
  return static_cast<jlong>(g_generation.load(std::memory_order_acquire));
}

void JNICALL n_release(JNIEnv* env, jclass, jlong ptr) {
  guarded_void(env, [&] {
    auto* r = reinterpret_cast<JValue*>(static_cast<std::intptr_t>(ptr));
    if (r == nullptr) return;
    std::shared_lock<std::shared_mutex> lk(g_attach_rw);
    delete r;  // drops the root if its attachment is still the current one
  });
}

jlong JNICALL n_live_handles(JNIEnv*, jclass) { return g_live_handles.load(std::memory_order_relaxed); }

jlongArray gc_array(JNIEnv* env, const colors::GcStats& s) {
  const jlong f[] = {static_cast<jlong>(s.cycle),          static_cast<jlong>(s.walk_ns),
                     static_cast<jlong>(s.mark_ns),        static_cast<jlong>(s.remark_ns),
                     static_cast<jlong>(s.sweep_ns),       static_cast<jlong>(s.total_ns),
                     static_cast<jlong>(s.marking_passes), static_cast<jlong>(s.objects_marked),
                     static_cast<jlong>(s.bytes_marked),   static_cast<jlong>(s.objects_freed),
                     static_cast<jlong>(s.bytes_freed),    static_cast<jlong>(s.heap_used_before),
                     static_cast<jlong>(s.heap_used_after), static_cast<jlong>(s.largest_free),
                     static_cast<jlong>(s.threads)};
  constexpr jsize n = sizeof(f) / sizeof(f[0]);
  jlongArray a = env->NewLongArray(n);
  check_pending(env);
  env->SetLongArrayRegion(a, 0, n, f);
  return a;
}

jlongArray JNICALL n_collect(JNIEnv* env, jclass, jlong timeout_ms) {
  return guarded<jlongArray>(env, nullptr, [&] {
    prepare_blocking(env);
    colors::GcStats s = colors::collect(timeout_ms);
    return gc_array(env, s);
  });
}

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
  g.lookup = env->GetStaticMethodID(g.proxies_cls, "lookup", "(J)Ljava/lang/Object;");
  g.thread_interrupted = env->GetStaticMethodID(g.thread_cls, "interrupted", "()Z");
  if (!g.long_value_of || !g.double_value_of || !g.wrap || !g.lookup || !g.thread_interrupted) return false;
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
      {const_cast<char*>("attach"), const_cast<char*>("(Ljava/lang/String;)V"), reinterpret_cast<void*>(&n_attach)},
      {const_cast<char*>("detach"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_detach)},
      {const_cast<char*>("isAttached"), const_cast<char*>("()Z"), reinterpret_cast<void*>(&n_is_attached)},
      {const_cast<char*>("ping"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_ping)},
      {const_cast<char*>("generation"), const_cast<char*>("()J"), reinterpret_cast<void*>(&n_generation)},
      {const_cast<char*>("release"), const_cast<char*>("(J)V"), reinterpret_cast<void*>(&n_release)},
      {const_cast<char*>("liveHandles"), const_cast<char*>("()J"), reinterpret_cast<void*>(&n_live_handles)},
      {const_cast<char*>("collect"), const_cast<char*>("(J)[J"), reinterpret_cast<void*>(&n_collect)},
      {const_cast<char*>("gcStats"), const_cast<char*>("()[J"), reinterpret_cast<void*>(&n_gc_stats)},
      {const_cast<char*>("heapStats"), const_cast<char*>("()[J"), reinterpret_cast<void*>(&n_heap_stats)},
  });
}

void add_values_natives(std::vector<JNINativeMethod>& out);
void add_containers_natives(std::vector<JNINativeMethod>& out);
void add_sync_natives(std::vector<JNINativeMethod>& out);
void add_objects_natives(std::vector<JNINativeMethod>& out);
bool register_rpc_natives(JNIEnv* env);

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
  jclass native_cls = env->FindClass("org/colors/Native");
  if (!native_cls) return JNI_ERR;
  if (env->RegisterNatives(native_cls, methods.data(), static_cast<jint>(methods.size())) != 0) return JNI_ERR;
  if (!register_rpc_natives(env)) return JNI_ERR;
  return JNI_VERSION_10;
}
