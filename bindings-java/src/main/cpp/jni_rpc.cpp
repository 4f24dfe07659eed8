// Remote calls (org.colors.rpc): the natives of org.colors.rpc.RpcNative over colors::rpc
// (libshared/include/colors/rpc.hpp).
//
// Native objects, owned by their Java counterparts (pointers as longs):
//  * JServer: a colors::rpc::Server plus a `closing` flag. Serving threads call next() in slices of
//    kSliceMs, so close() stops idle threads within one slice; the Server's destructor
//    (serverFree, after the threads ended) unregisters the endpoint and fails queued calls.
//  * JWorker: one per serving thread, holding the call it took until it replies or fails: the
//    call's request stays rooted for as long as the handler runs, and no allocation per call.
//  * colors::rpc::Client (one per RpcClient), colors::rpc::Pending (one per asynchronous call or
//    batch, freed by its Java owner).
// Waiting is libshared's: spin (polls that yield the core, COLORS_SPIN_YIELD) for the spin budget,
// then futex waits in slices.
// Blocking natives hold a Blocking (the interrupt hook, and counted for detach): Thread.interrupt() of a thread
// blocked in next() or in a wait for a result throws SharedInterruptedException.
#include <colors/rpc.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jni_common.hpp"
#include "layout.hpp"
#include "segment.hpp"

namespace colors_jni {

namespace {

constexpr std::int64_t kSliceMs = 50;  // serving threads re-check `closing` at least this often

// A call its server stopped or died before running reaches the caller as UnavailableError
// (libshared's kRejected state), so no conversion is needed here.

struct JClient {
  colors::rpc::Client c;
  JClient(const std::string& name, std::int64_t spin_ns) : c(name) { c.set_spin_ns(spin_ns); }
};

struct JServer {
  colors::rpc::Server srv;
  std::atomic<bool> closing{false};
  JServer(const std::string& name, std::uint32_t cap) : srv(name, cap) {}
};

struct JWorker {
  std::optional<colors::rpc::Call> call;
  // Method names seen by this serving thread, as global references: names repeat on every call,
  // and a fresh Java String per call (UTF-8 decode, an allocation in C++ and one in Java) was a
  // visible part of a small call. Only its own thread uses a worker.
  std::vector<std::pair<std::string, jstring>> names;

  jstring method_name(JNIEnv* env, const std::string& m) {
    for (const auto& [n, js] : names)
      if (n == m) return js;
    if (names.size() >= kMaxNames) forget_names(env);
    jstring local = utf8_to_java(env, m);
    auto global = static_cast<jstring>(env->NewGlobalRef(local));
    env->DeleteLocalRef(local);
    if (global == nullptr) throw std::bad_alloc();
    names.emplace_back(m, global);
    return global;
  }
  void forget_names(JNIEnv* env) {
    for (auto& e : names) env->DeleteGlobalRef(e.second);
    names.clear();
  }
  static constexpr std::size_t kMaxNames = 64;

  // The reference arguments of the last calls (a ring): whether `raw` is among them, recording
  // it. The ring is emptied when a collector cycle starts: only a sweep frees memory, and an
  // argument recorded since the current cycle started is not freed by it (reachable when it was
  // recorded, so at that cycle's snapshot, or recent), so an address found in the ring is still
  // the object recorded, never another object at a reused address.
  bool seen_recently(std::uint64_t raw) {
    const std::uint32_t seq = colors::detail::current_meta()->gc_started_seq.load(std::memory_order_acquire);
    if (seq != recent_seq) {
      recent.fill(0);
      recent_seq = seq;
    }
    bool seen = std::find(recent.begin(), recent.end(), raw) != recent.end();
    if (!seen) {
      recent[next_recent] = raw;
      next_recent = (next_recent + 1) % recent.size();
    }
    return seen;
  }
  std::array<std::uint64_t, 8> recent{};
  std::size_t next_recent = 0;
  std::uint32_t recent_seq = 0;
};

template <class T>
T* from_ptr(jlong p) {
  auto* r = reinterpret_cast<T*>(static_cast<std::intptr_t>(p));
  if (r == nullptr) throw colors::InvalidArgumentError("this rpc object is closed");
  return r;
}
template <class T>
jlong to_ptr(T* p) {
  return static_cast<jlong>(reinterpret_cast<std::intptr_t>(p));
}

colors::List list_of(JNIEnv* env, jobject handle) {
  if (handle == nullptr) return colors::new_list(0);
  return jvalue_of(env, handle)->list();
}


// ---- server ----

jlong JNICALL n_server_new(JNIEnv* env, jclass, jstring name, jint capacity) {
  return guarded<jlong>(env, 0, [&] {
    if (capacity <= 0) throw colors::InvalidArgumentError("queue capacity must be > 0, got " + std::to_string(capacity));
    auto s = std::make_unique<JServer>(java_to_utf8(env, name), static_cast<std::uint32_t>(capacity));
    return to_ptr(s.release());
  });
}

void JNICALL n_server_close(JNIEnv* env, jclass, jlong p) {
  guarded_void(env, [&] { from_ptr<JServer>(p)->closing.store(true, std::memory_order_release); });
}

void JNICALL n_server_free(JNIEnv* env, jclass, jlong p) {
  guarded_void(env, [&] { delete reinterpret_cast<JServer*>(static_cast<std::intptr_t>(p)); });
}

// The live workers and the thread each serves (check_own_worker). Workers are made and freed once
// per serving thread, so one mutex is enough.
std::mutex g_workers_mu;
std::unordered_map<const JWorker*, std::thread::id> g_workers;

jlong JNICALL n_worker_new(JNIEnv* env, jclass) {
  return guarded<jlong>(env, 0, [&] {
    auto wk = std::make_unique<JWorker>();
    std::lock_guard<std::mutex> g(g_workers_mu);
    g_workers.emplace(wk.get(), std::this_thread::get_id());
    return to_ptr(wk.release());
  });
}

void JNICALL n_worker_free(JNIEnv* env, jclass, jlong w) {
  guarded_void(env, [&] {
    auto* wk = reinterpret_cast<JWorker*>(static_cast<std::intptr_t>(w));
    if (wk == nullptr) return;
    {
      std::lock_guard<std::mutex> g(g_workers_mu);
      g_workers.erase(wk);
    }
    if (wk->call) wk->call->reject("the serving thread ended before replying");
    wk->forget_names(env);
    delete wk;
  });
}

// Stores `args` as Java values into out[1..]. A container or user object that has no live proxy
// and was not an argument of the last few calls is `lazy` (see serverNext); an object sent again
// is one its client keeps: its proxy is made now and cached, so that the next calls find it alive
// and pass it on at no cost, and pinning it pins nothing its client does not hold.
void put_args(JNIEnv* env, JWorker* wk, const colors::List& args, jobjectArray out, jobject lazy) {
  const std::size_t n = args.size();
  for (std::size_t i = 0; i < n; ++i) {
    colors::Value a = args.get(i);
    const colors::TypeKind k = a.kind();
    if ((k == colors::TypeKind::kList || k == colors::TypeKind::kMap || k == colors::TypeKind::kSet ||
         k == colors::TypeKind::kObject) &&
        !wk->seen_recently(a.raw())) {
      jobject cached = env->CallStaticObjectMethod(g.proxies_cls, g.lookup, static_cast<jlong>(a.raw()));
      check_pending(env);
      env->SetObjectArrayElement(out, static_cast<jsize>(i + 1), cached != nullptr ? cached : lazy);
      if (cached != nullptr) env->DeleteLocalRef(cached);
      continue;
    }
    jobject o = to_java(env, std::move(a));
    env->SetObjectArrayElement(out, static_cast<jsize>(i + 1), o);
    if (o != nullptr) env->DeleteLocalRef(o);
  }
}

// The [method, args] list of item `item` of the worker's current batch call.
colors::List batch_item(JWorker* wk, jint item) {
  colors::List items = wk->call->args();
  if (item < 0 || static_cast<std::size_t>(item) >= items.size())
    throw colors::InvalidArgumentError("batch item " + std::to_string(item) + " out of range (binding bug)");
  colors::Value v = items.get(static_cast<std::size_t>(item));
  if (v.kind() != colors::TypeKind::kList) throw colors::InvalidArgumentError("a batch item is not a [method, args] list");
  colors::List it(v);
  if (it.size() != 2 || it.get(0).kind() != colors::TypeKind::kString)
    throw colors::InvalidArgumentError("a batch item is not a [method, args] list");
  return it;
}

// The arguments of a batch item (a null list for an item without arguments).
colors::List item_args(const colors::List& it) {
  colors::Value a = it.get(1);
  if (a.kind() == colors::TypeKind::kNull) return colors::List();
  if (a.kind() != colors::TypeKind::kList) throw colors::InvalidArgumentError("a batch item's arguments are not a list");
  return colors::List(a);
}

// The arguments of the worker's current call (item < 0) or of item `item` of its batch.
colors::List call_args(JWorker* wk, jint item) {
  if (!wk->call) throw colors::InvalidArgumentError("no call to read an argument of");
  return item < 0 ? wk->call->args() : item_args(batch_item(wk, item));
}

// The next call for worker `w`: {method, arg0, arg1, ...} (for a batch, one null per item), or
// null once the server is closing. An argument that is a container or
// a user object, has no live proxy, and was not an argument of the last few calls is `lazy`
// (RpcServer.LAZY) here, and made by workerArg when the handler's parameter asks for it: a proxy
// made here would keep the argument's root until the JVM's next collection, also when the
// parameter is converted to a private value (a @ByValue graph, a long[]) and the proxy is dropped
// at once; a client sending a fresh list per call kept every one of them alive until then. The
// call's request roots every argument until the call is answered.
jobjectArray JNICALL n_server_next(JNIEnv* env, jclass, jlong p, jlong w, jlong spin_ns, jobject lazy) {
  return guarded<jobjectArray>(env, nullptr, [&]() -> jobjectArray {
    JServer* s = from_ptr<JServer>(p);
    JWorker* wk = from_ptr<JWorker>(w);
    Blocking blocking(env);
    if (wk->call) {  // a call the handler never answered (binding bug): do not leave its caller waiting
      wk->call->fail("colors::Error", "the Java server did not reply");
      wk->call.reset();
    }
    while (!s->closing.load(std::memory_order_acquire)) {
      std::optional<colors::rpc::Call> c = s->srv.next(kSliceMs, spin_ns);
      if (!c) continue;
      wk->call.emplace(std::move(*c));
      colors::List args = wk->call->args();
      const std::size_t n = args.size();
      jobjectArray out = env->NewObjectArray(static_cast<jsize>(n + 1), g.object_cls, nullptr);
      check_pending(env);
      env->SetObjectArrayElement(out, 0, wk->method_name(env, wk->call->method()));
      // A batch's items stay null: RpcServer.runBatch reads each through workerBatchItem.
      if (!wk->call->is_batch()) put_args(env, wk, args, out, lazy);
      return out;
    }
    return nullptr;
  });
}

// Argument `i` of the worker's current call (item < 0) or of item `item` of its batch: its proxy
// (identity-cached), or with `transient` a proxy outside the cache whose root its caller releases
// when done (Proxies.releaseTransient).
jobject JNICALL n_worker_arg(JNIEnv* env, jclass, jlong w, jint item, jint i, jboolean transient_proxy) {
  return guarded<jobject>(env, nullptr, [&]() -> jobject {
    JWorker* wk = from_ptr<JWorker>(w);
    colors::List args = call_args(wk, item);
    const std::size_t n = args.is_null() ? 0 : args.size();
    if (i < 0 || static_cast<std::size_t>(i) >= n)
      throw colors::InvalidArgumentError("argument index " + std::to_string(i) + " out of range (binding bug)");
    colors::Value a = args.get(static_cast<std::size_t>(i));
    return transient_proxy ? to_java_transient(env, std::move(a)) : to_java(env, std::move(a));
  });
}

// Item `item` of the worker's current batch call as {method, arg0, arg1, ...}, its arguments
// made as serverNext makes a call's (containers and objects lazy).
jobjectArray JNICALL n_worker_batch_item(JNIEnv* env, jclass, jlong w, jint item, jobject lazy) {
  return guarded<jobjectArray>(env, nullptr, [&]() -> jobjectArray {
    JWorker* wk = from_ptr<JWorker>(w);
    if (!wk->call) throw colors::InvalidArgumentError("no call to read a batch item of");
    const colors::List it = batch_item(wk, item);
    const std::string method = it.get(0).as_string();
    const colors::List args = item_args(it);
    const std::size_t n = args.is_null() ? 0 : args.size();
    jobjectArray out = env->NewObjectArray(static_cast<jsize>(n + 1), g.object_cls, nullptr);
    check_pending(env);
    env->SetObjectArrayElement(out, 0, wk->method_name(env, method));  // cached, as serverNext's
    if (n > 0) put_args(env, wk, args, out, lazy);
    return out;
  });
}

// Ends the worker's current call with `finish` (a reply or a failure), forgetting the call even
// when `finish` throws: the call is answered at most once either way.
template <class F>
void finish_call(JWorker* wk, const char* what, F&& finish) {
  if (!wk->call) throw colors::InvalidArgumentError(std::string("no call to ") + what);
    struct Reset {
      JWorker* wk;
      ~Reset() { wk->call.reset(); }
    } reset{wk};
  finish();
}

// The reply value is built before the call is taken: a value that cannot be stored (a string with
// a lone surrogate, a full heap) throws with the call still open, and the Java side then fails it
// with the reason (RpcServer.runOne/runBatch) instead of leaving its caller waiting.
void JNICALL n_worker_reply(JNIEnv* env, jclass, jlong w, jint tag, jlong bits, jobject obj) {
  guarded_void(env, [&] {
    JWorker* wk = from_ptr<JWorker>(w);
    if (!wk->call) throw colors::InvalidArgumentError("no call to reply to");
    Arg a = decode(env, tag, bits, obj);
    finish_call(wk, "reply to", [&] { wk->call->reply(a.get()); });
  });
}

void JNICALL n_worker_fail(JNIEnv* env, jclass, jlong w, jstring type, jstring message) {
  guarded_void(env, [&] {
    JWorker* wk = from_ptr<JWorker>(w);
    finish_call(wk, "fail", [&] {
      std::string t, m;
      try {
        t = java_to_utf8(env, type);
        m = message == nullptr ? std::string() : java_to_utf8(env, message);
      } catch (const colors::InvalidArgumentError&) {
        // A message with a lone surrogate: still tell the caller what failed.
        if (env->ExceptionCheck()) env->ExceptionClear();
        m = "(the message is not valid Unicode)";
      }
      wk->call->fail(t, m);
    });
  });
}

// ---- client ----

// The live clients (check_live_client): a client handle reaches native code through a public Java
// method too (RpcSupport.callWithCopy), where user code could pass any number.
std::mutex g_clients_mu;
std::unordered_set<const JClient*> g_clients;

jlong JNICALL n_client_new(JNIEnv* env, jclass, jstring name, jlong spin_ns) {
  return guarded<jlong>(env, 0, [&] {
    auto c = std::make_unique<JClient>(java_to_utf8(env, name), spin_ns);
    std::lock_guard<std::mutex> g(g_clients_mu);
    g_clients.insert(c.get());
    return to_ptr(c.release());
  });
}

void JNICALL n_client_free(JNIEnv* env, jclass, jlong p) {
  guarded_void(env, [&] {
    auto* c = reinterpret_cast<JClient*>(static_cast<std::intptr_t>(p));
    {
      std::lock_guard<std::mutex> g(g_clients_mu);
      g_clients.erase(c);
    }
    delete c;
  });
}

jboolean JNICALL n_client_alive(JNIEnv* env, jclass, jlong p) {
  return guarded<jboolean>(env, JNI_FALSE,
                           [&] { return from_ptr<JClient>(p)->c.server_alive() ? JNI_TRUE : JNI_FALSE; });
}

// A whole call in one native: request, send, wait, result.
jobject JNICALL n_client_call(JNIEnv* env, jclass, jlong p, jstring method, jobject args, jlong timeout_ms) {
  return guarded<jobject>(env, nullptr, [&] { return client_call(env, p, method, list_of(env, args), timeout_ms); });
}

jlong JNICALL n_client_send(JNIEnv* env, jclass, jlong p, jstring method, jobject args) {
  return guarded<jlong>(env, 0, [&] { return client_send(env, p, method, list_of(env, args)); });
}

jobject JNICALL n_pending_get(JNIEnv* env, jclass, jlong p, jlong timeout_ms) {
  return guarded<jobject>(env, nullptr, [&] {
    auto* pend = from_ptr<colors::rpc::Pending>(p);
    Blocking blocking(env);
    return to_java(env, pend->get(timeout_ms));
  });
}

jboolean JNICALL n_pending_ready(JNIEnv* env, jclass, jlong p) {
  return guarded<jboolean>(env, JNI_FALSE,
                           [&] { return from_ptr<colors::rpc::Pending>(p)->ready() ? JNI_TRUE : JNI_FALSE; });
}

void JNICALL n_pending_free(JNIEnv* env, jclass, jlong p) {
  guarded_void(env, [&] { delete reinterpret_cast<colors::rpc::Pending*>(static_cast<std::intptr_t>(p)); });
}

}  // namespace

void check_own_worker(jlong w) {
  std::lock_guard<std::mutex> g(g_workers_mu);
  auto it = g_workers.find(reinterpret_cast<const JWorker*>(static_cast<std::intptr_t>(w)));
  if (it == g_workers.end() || it->second != std::this_thread::get_id())
    throw colors::InvalidArgumentError("replyWithCopy: " + std::to_string(w) +
                                       " is not the worker of a call this thread serves (RpcSupport is not part of the API)");
}

void worker_reply(jlong w, const colors::Value& v) {
  JWorker* wk = from_ptr<JWorker>(w);
  finish_call(wk, "reply to", [&] { wk->call->reply(v); });
}

void check_live_client(jlong client) {
  std::lock_guard<std::mutex> g(g_clients_mu);
  if (g_clients.count(reinterpret_cast<const JClient*>(static_cast<std::intptr_t>(client))) == 0)
    throw colors::InvalidArgumentError("callWithCopy: " + std::to_string(client) +
                                       " is not a live rpc client (RpcSupport is not part of the API)");
}

jobject client_call(JNIEnv* env, jlong client, jstring method, const colors::List& args, jlong timeout_ms) {
  auto* jc = from_ptr<JClient>(client);
  Blocking blocking(env);
  std::string m = java_to_utf8(env, method);
  return to_java(env, jc->c.call(m, args, timeout_ms));
}

jlong client_send(JNIEnv* env, jlong client, jstring method, const colors::List& args) {
  auto* jc = from_ptr<JClient>(client);
  Blocking blocking(env);
  std::string m = java_to_utf8(env, method);
  auto pend = std::make_unique<colors::rpc::Pending>(jc->c.call_async(m, args));
  return to_ptr(pend.release());
}

namespace {

#define N(name, sig, fn) \
  { const_cast<char*>(name), const_cast<char*>(sig), reinterpret_cast<void*>(&fn) }

}  // namespace

bool register_rpc_natives(JNIEnv* env) {
  jclass cls = env->FindClass("org/colors/rpc/RpcNative");
  if (cls == nullptr) return false;
  const JNINativeMethod methods[] = {
      N("serverNew", "(Ljava/lang/String;I)J", n_server_new),
      N("serverClose", "(J)V", n_server_close),
      N("serverFree", "(J)V", n_server_free),
      N("workerNew", "()J", n_worker_new),
      N("workerFree", "(J)V", n_worker_free),
      N("serverNext", "(JJJLjava/lang/Object;)[Ljava/lang/Object;", n_server_next),
      N("workerArg", "(JIIZ)Ljava/lang/Object;", n_worker_arg),
      N("workerBatchItem", "(JILjava/lang/Object;)[Ljava/lang/Object;", n_worker_batch_item),
      N("workerReply", "(JIJLjava/lang/Object;)V", n_worker_reply),
      N("workerFail", "(JLjava/lang/String;Ljava/lang/String;)V", n_worker_fail),
      N("clientNew", "(Ljava/lang/String;J)J", n_client_new),
      N("clientFree", "(J)V", n_client_free),
      N("clientAlive", "(J)Z", n_client_alive),
      N("clientCall", "(JLjava/lang/String;Ljava/lang/Object;J)Ljava/lang/Object;", n_client_call),
      N("clientSend", "(JLjava/lang/String;Ljava/lang/Object;)J", n_client_send),
      N("pendingGet", "(JJ)Ljava/lang/Object;", n_pending_get),
      N("pendingReady", "(J)Z", n_pending_ready),
      N("pendingFree", "(J)V", n_pending_free),
  };
  bool ok = env->RegisterNatives(cls, methods, sizeof(methods) / sizeof(methods[0])) == 0;
  env->DeleteLocalRef(cls);
  return ok;
}

}  // namespace colors_jni
