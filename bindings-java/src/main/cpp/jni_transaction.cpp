// Transactions (org.colors.Transaction): the natives over libshared's per-thread transaction
// (transaction.hpp). A JNI call runs on the calling Java thread's native thread, so libshared's
// thread_local transaction is exactly the Java thread's; the Java side mirrors its depth
// (Transaction.java) to route the field fast path through JNI while one is open.
//
// Invariants:
//  * Every native here that may touch the segment (begin, commit, rollback) holds attach_lock()
//    shared: a detach by another thread then never unmaps the segment under a commit or rollback;
//    when the detach came first, libshared sees that the transaction's attachment ended and only
//    drops its private state (the server rolled it back).
//  * None of them makes an upcall into Java (attach_lock's rule).
#include <mutex>
#include <shared_mutex>
#include <vector>

#include "jni_common.hpp"
#include "segment.hpp"
#include "transaction.hpp"

namespace cd = colors::detail;

namespace colors_jni {
namespace {

// Begins (depth 1) or joins (depth + 1) this thread's transaction; returns the new depth.
jint JNICALL n_tx_begin(JNIEnv* env, jclass, jlong timeout_ns) {
  return guarded<jint>(env, 0, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    cd::current_meta();  // NotAttachedException when not attached
    cd::tx_begin(static_cast<std::int64_t>(timeout_ns));
    return static_cast<jint>(cd::tx_depth());
  });
}

jint JNICALL n_tx_commit(JNIEnv* env, jclass) {
  return guarded<jint>(env, 0, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    cd::tx_commit();
    return static_cast<jint>(cd::tx_depth());
  });
}

jint JNICALL n_tx_rollback(JNIEnv* env, jclass) {
  return guarded<jint>(env, 0, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    cd::tx_rollback();
    return static_cast<jint>(cd::tx_depth());
  });
}

// Thread-local state only: no lock, no guard needed.
jint JNICALL n_tx_depth(JNIEnv*, jclass) { return static_cast<jint>(cd::tx_depth()); }

jboolean JNICALL n_tx_attachment_gone(JNIEnv*, jclass) { return cd::tx_attachment_gone() ? JNI_TRUE : JNI_FALSE; }

void JNICALL n_tx_escalate(JNIEnv*, jclass) { cd::tx_escalate(); }

void JNICALL n_tx_backoff(JNIEnv*, jclass, jint attempt) { colors::detail::transaction_backoff(attempt); }

}  // namespace

void add_transaction_natives(std::vector<JNINativeMethod>& out) {
  out.insert(out.end(), {
      {const_cast<char*>("txBegin"), const_cast<char*>("(J)I"), reinterpret_cast<void*>(&n_tx_begin)},
      {const_cast<char*>("txCommit"), const_cast<char*>("()I"), reinterpret_cast<void*>(&n_tx_commit)},
      {const_cast<char*>("txRollback"), const_cast<char*>("()I"), reinterpret_cast<void*>(&n_tx_rollback)},
      {const_cast<char*>("txDepth"), const_cast<char*>("()I"), reinterpret_cast<void*>(&n_tx_depth)},
      {const_cast<char*>("txAttachmentGone"), const_cast<char*>("()Z"), reinterpret_cast<void*>(&n_tx_attachment_gone)},
      {const_cast<char*>("txEscalate"), const_cast<char*>("()V"), reinterpret_cast<void*>(&n_tx_escalate)},
      {const_cast<char*>("txBackoff"), const_cast<char*>("(I)V"), reinterpret_cast<void*>(&n_tx_backoff)},
  });
}

}  // namespace colors_jni
