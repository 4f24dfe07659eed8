// Read scopes (org.colors.ReadScope): the natives that enter and leave libshared's read scope of
// the calling thread (colors::ReadScope, read_scope.hpp). A JNI call runs on the calling Java
// thread's native thread, so libshared's thread_local scope is exactly the Java thread's.
//
// Invariants:
//  * Java enters only at its outermost scope and leaves only there (ReadScope.State.depth counts
//    the nesting), so this thread's optional holds a scope exactly while Java has one open.
//  * A thread that ends with its scope open leaves it at thread exit (the optional's destructor).
//  * The borrowed references the scope reads are rooted only by promote_borrowed
//    (Java_org_colors_Direct_promote, jni_direct.cpp), called by org.colors.Proxies.promote.
#include <jni.h>

#include <colors/colors.hpp>
#include <optional>
#include <shared_mutex>

#include "jni_common.hpp"

namespace {
thread_local std::optional<colors::ReadScope> t_scope;
}  // namespace

extern "C" {

// Enters this thread's read scope: NotAttachedException, InvalidArgumentException inside a
// transaction or when Java's bookkeeping already holds one (a binding bug).
JNIEXPORT void JNICALL Java_org_colors_ReadScope_enter(JNIEnv* env, jclass) {
  using namespace colors_jni;
  guarded_void(env, [&] {
    if (t_scope) throw colors::InvalidArgumentError("this thread's read scope is already open");
    t_scope.emplace();
  });
}

// Leaves it (nothing when none is open). Not a SegmentUse: leaving is allowed while a detach is
// closing (refused then, the native scope stayed open for the thread's life while Java counted it
// closed, and every later enter said "already open"). The attach lock keeps the segment mapped
// meanwhile; after the detach, a scope of the older attachment writes nothing (read_scope_exit).
JNIEXPORT void JNICALL Java_org_colors_ReadScope_exit(JNIEnv* env, jclass) {
  using namespace colors_jni;
  guarded_attachment_void(env, [&] {
    std::shared_lock<std::shared_mutex> lk(attach_lock());
    t_scope.reset();
  });
}

}  // extern "C"
