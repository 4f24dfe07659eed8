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
// Blocking natives install the interrupt hook (prepare_blocking): Thread.interrupt() of a thread
// blocked in next() or in a wait for a result throws SharedInterruptedException.
#include <colors/rpc.hpp>

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "jni_common.hpp"

namespace colors_jni {

namespace {

constexpr std::int64_t kSliceMs = 50;  // serving threads re-check `closing` at least this often

struct JServer {
  colors::rpc::Server srv;
  std::atomic<bool> closing{false};
  JServer(const std::string& name, std::uint32_t cap) : srv(name, cap) {}
};

struct JWorker {
  std::optional<colors::rpc::Call> call;
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

jlong JNICALL n_worker_new(JNIEnv* env, jclass) {
  return guarded<jlong>(env, 0, [&] { return to_ptr(new JWorker()); });
}

void JNICALL n_worker_free(JNIEnv* env, jclass, jlong w) {
  guarded_void(env, [&] {
    auto* wk = reinterpret_cast<JWorker*>(static_cast<std::intptr_t>(w));
    if (wk == nullptr) return;
    if (wk->call) wk->call->fail("colors::UnavailableError", "the serving thread ended before replying");
    delete wk;
  });
}

// The next call for worker `w`: {method, arg0, arg1, ...} (for a batch, the args are its
// [method, args] items), or null once the server is closing.
jobjectArray JNICALL n_server_next(JNIEnv* env, jclass, jlong p, jlong w, jlong spin_ns) {
  return guarded<jobjectArray>(env, nullptr, [&]() -> jobjectArray {
    JServer* s = from_ptr<JServer>(p);
    JWorker* wk = from_ptr<JWorker>(w);
    prepare_blocking(env);
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
      jstring m = utf8_to_java(env, wk->call->method());
      env->SetObjectArrayElement(out, 0, m);
      env->DeleteLocalRef(m);
      for (std::size_t i = 0; i < n; ++i) {
        jobject o = to_java(env, args.get(i));
        env->SetObjectArrayElement(out, static_cast<jsize>(i + 1), o);
        if (o != nullptr) env->DeleteLocalRef(o);
      }
      return out;
    }
    return nullptr;
  });
}

void JNICALL n_worker_reply(JNIEnv* env, jclass, jlong w, jint tag, jlong bits, jobject obj) {
  guarded_void(env, [&] {
    JWorker* wk = from_ptr<JWorker>(w);
    if (!wk->call) throw colors::InvalidArgumentError("no call to reply to");
    struct Reset {
      JWorker* wk;
      ~Reset() { wk->call.reset(); }
    } reset{wk};
    Arg a = decode(env, tag, bits, obj);
    wk->call->reply(a.get());
  });
}

void JNICALL n_worker_fail(JNIEnv* env, jclass, jlong w, jstring type, jstring message) {
  guarded_void(env, [&] {
    JWorker* wk = from_ptr<JWorker>(w);
    if (!wk->call) throw colors::InvalidArgumentError("no call to fail");
    struct Reset {
      JWorker* wk;
      ~Reset() { wk->call.reset(); }
    } reset{wk};
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
}

// ---- client ----

jlong JNICALL n_client_new(JNIEnv* env, jclass, jstring name, jlong spin_ns) {
  return guarded<jlong>(env, 0, [&] {
    auto c = std::make_unique<colors::rpc::Client>(java_to_utf8(env, name));
    c->set_spin_ns(spin_ns);
    return to_ptr(c.release());
  });
}

void JNICALL n_client_free(JNIEnv* env, jclass, jlong p) {
  guarded_void(env, [&] { delete reinterpret_cast<colors::rpc::Client*>(static_cast<std::intptr_t>(p)); });
}

jboolean JNICALL n_client_alive(JNIEnv* env, jclass, jlong p) {
  return guarded<jboolean>(env, JNI_FALSE,
                           [&] { return from_ptr<colors::rpc::Client>(p)->server_alive() ? JNI_TRUE : JNI_FALSE; });
}

// A whole call in one native: request, send, wait, result.
jobject JNICALL n_client_call(JNIEnv* env, jclass, jlong p, jstring method, jobject args, jlong timeout_ms) {
  return guarded<jobject>(env, nullptr, [&] {
    auto* c = from_ptr<colors::rpc::Client>(p);
    prepare_blocking(env);
    std::string m = java_to_utf8(env, method);
    colors::rpc::Pending pend = c->call_async(m, list_of(env, args));
    return to_java(env, pend.get(timeout_ms));
  });
}

jlong JNICALL n_client_send(JNIEnv* env, jclass, jlong p, jstring method, jobject args) {
  return guarded<jlong>(env, 0, [&] {
    auto* c = from_ptr<colors::rpc::Client>(p);
    prepare_blocking(env);
    std::string m = java_to_utf8(env, method);
    auto pend = std::make_unique<colors::rpc::Pending>(c->call_async(m, list_of(env, args)));
    return to_ptr(pend.release());
  });
}

jobject JNICALL n_pending_get(JNIEnv* env, jclass, jlong p, jlong timeout_ms) {
  return guarded<jobject>(env, nullptr, [&] {
    auto* pend = from_ptr<colors::rpc::Pending>(p);
    prepare_blocking(env);
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
      N("serverNext", "(JJJ)[Ljava/lang/Object;", n_server_next),
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
