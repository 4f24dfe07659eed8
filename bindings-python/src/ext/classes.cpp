// User classes (the Python half is colors_shm/_classes.py):
//  * proxy classes of mapped Python classes: each instance holds one `Handle` (a GC root of this
//    process) in a hidden slot; declared fields are `_FieldDescriptor`s that read and write the
//    object's slots directly; other attribute writes add shared fields (schema evolution, section
//    3.1.2 of the paper) and `del` removes them, without moving the object;
//  * the identity caches of proxies (shared word -> live proxy, erased when the handle dies): one
//    of user proxies, one of the other proxies (containers and generic SharedObjects, made by
//    values.cpp's wrap; their handles hold no root: the proxy's _Ref does);
//  * shared_type() reflection (SharedClass / SharedField), allocation of user objects.
//
// Invariants:
//  * A user proxy's handle slot is set once, when the proxy is made, and never exposed to Python
//    (the slot's member descriptor is deleted from the class and made inert, in case code run
//    while the class was made kept it), so the handle dies exactly when its proxy does. Only
//    proxies the binding made are known to hold a handle there: code that runs while a proxy
//    class is made (a metaclass, __init_subclass__) can make an instance and set the slot before
//    it is hidden, so every read of the slot checks its type (slot_handle). The handle's
//    destructor erases the table entry (if it is still its proxy's), so the identity table never
//    points to a freed proxy. An entry may point to a proxy that is
//    being destroyed (refcount 0: its weakref callbacks and slot clearing run before the handle
//    dies); lookups skip such a proxy and a new proxy replaces the entry (one *live* proxy per
//    object).
//  * The identity tables hold entries of one attachment generation (g_proxies_gen); they are
//    emptied before anything is looked up or inserted in another one, and a handle of an older
//    generation never touches them. Container and generic proxies keep their handle in the
//    hidden `_colors_handle` slot of SharedProxy, set once, like a user proxy's.
//  * Field descriptors cache (class version -> FieldInfo) per attachment generation; class
//    records are immortal within one attachment.
//  * Inside a transaction (tx_state.hpp's in_tx()) every field read and write goes through
//    libshared's transactional paths (read_slot_rooted / write_slot, the object's address as the
//    owner): the fast paths below (unboxed reads and stores in the descriptors, the live-proxy
//    shortcut, direct string and float reads, the pooled root loads) are taken only outside one.
//  * Everything here runs with the GIL held.
#include <pthread.h>

#include <bit>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "barrier.hpp"
#include "classes.hpp"
#include "common.hpp"  // Python.h first
#include "free_list.hpp"
#include "identity_table.hpp"
#include "read_memo.hpp"
#include "number_word.hpp"
#include "proxy_cache.hpp"
#include <structmember.h>

#include "objects.hpp"
#include "read_scope.hpp"
#include "segment.hpp"
#include "session.hpp"
#include "tx_state.hpp"

namespace colors_py {

namespace cd = colors::detail;
using colors::TypeKind;

namespace {

PyObject* g_instance_base = nullptr;  // _classes.SharedInstance
PyObject* g_resolver = nullptr;       // _classes.resolve
PyObject* g_no_default = nullptr;     // sentinel: a field without class default
PyObject* g_spec_fn = nullptr;        // _classes.spec
PyTypeObject* g_handle_type = nullptr;
PyTypeObject* g_descr_type = nullptr;

// Where a proxy class's instances keep their handle: `off`, the hidden slot that points to it;
// `embed`, the handle's own place inside the instance (see "the handle lives inside its proxy").
struct UserType {
  Py_ssize_t off = 0;
  Py_ssize_t embed = 0;
};
// Proxy class -> its UserType. Proxy classes live as long as the process.
std::unordered_map<PyTypeObject*, UserType> g_user_types;
// What a class version maps to: its proxy class (strong) and that class's offsets, or
// type == Py_None for "no Python class: generic proxy".
struct Mapped {
  PyObject* type = nullptr;
  Py_ssize_t off = 0;    // its handle slot
  Py_ssize_t embed = 0;  // its handle's place in the instance
};
std::unordered_map<const cd::ClassRecord*, Mapped> g_mapping;
std::uint64_t g_mapping_gen = 0;
// One-entry cache in front of g_mapping: the class version of the last proxy made (a tree walk
// makes proxies of one class). Invariant: g_last_rec is null or a key of g_mapping with g_last as
// its value; clear_mappings() resets both together.
const cd::ClassRecord* g_last_rec = nullptr;
Mapped g_last;

void clear_mappings() {
  g_last_rec = nullptr;
  g_last = Mapped{};
  for (auto& [rec, m] : g_mapping) Py_DECREF(m.type);
  g_mapping.clear();
}
// Private class -> its shared name, declared fields, and the class versions its instances were
// copied with (declared fields plus the instance's extra attributes), for copy_to.
struct TypeEntry {
  py::object type;
  std::string name;
  std::vector<colors::FieldSpec> declared;
  std::map<std::vector<std::string>, UserLayout> layouts;
};
// Invariant: a TypeEntry (and the UserLayouts in it) is never destroyed: a copy_to in progress
// holds pointers to layouts, and Python code it runs (a property getter, the class spec) may
// register classes or detach. Outdated entries are retired instead (a few bytes per class).
std::unordered_map<PyTypeObject*, std::unique_ptr<TypeEntry>> g_layouts;
std::vector<std::unique_ptr<TypeEntry>> g_retired_layouts;
std::uint64_t g_layouts_gen = 0;

void retire_layouts() {
  for (auto& [t, e] : g_layouts) g_retired_layouts.push_back(std::move(e));
  g_layouts.clear();
}
// Shared word -> live user proxy (borrowed; see the invariants above), of generation
// g_proxies_gen.
IdentityTable g_proxies;
// Shared word -> live container or generic SharedObject proxy (borrowed), same generation. Apart
// from g_proxies: a generic proxy of an object whose class gets mapped later must not be taken
// for its user proxy.
IdentityTable g_other_proxies;
std::uint64_t g_proxies_gen = 0;
// The proxies made last, of either table (proxy_cache.hpp). A detach and a fork child empty it
// (module.cpp); entries of an older generation may remain after an attachment ended otherwise, and
// are then only ever released ("the proxy cache" below).
ProxyCache g_proxy_cache;

// Empties both tables when the attachment generation changed since they were filled.
void sync_proxies_gen() {
  if (g_proxies_gen != g_generation) {  // entries of an older attachment: their proxies are stale
    g_proxies.clear();
    g_other_proxies.clear();
    g_proxies_gen = g_generation;
  }
}

// The live proxy of `w` in table `t` (borrowed), or nullptr. A dying proxy (refcount 0, see the
// invariants) is not returned: handing it out would resurrect an object half destroyed.
PyObject* live_in(const IdentityTable& t, cd::Word w) {
  if (g_proxies_gen != g_generation) return nullptr;  // stale entries of an older attachment
  PyObject* p = t.find(w);
  return p != nullptr && Py_REFCNT(p) > 0 ? p : nullptr;
}

// The live proxy of the user object `w` (borrowed), or nullptr.
PyObject* live_proxy(cd::Word w) { return live_in(g_proxies, w); }

cd::Metadata* meta() {
  cd::Metadata* m = cd::current_meta();
  cd::check_server_state(m);
  return m;
}

std::string_view utf8(PyObject* s) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(s, &n);
  if (p == nullptr) throw py::error_already_set();
  return {p, static_cast<std::size_t>(n)};
}

// A field kind passed by Python code (a TypeKind as int): TypeError / InvalidArgumentError for
// anything else.
TypeKind kind_arg(PyObject* k) {
  if (!PyLong_Check(k) || PyBool_Check(k)) throw py::type_error("a field kind must be an int (colors_shm._classes.KINDS)");
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(k, &overflow);
  if (overflow != 0 || v < 0 || v > static_cast<long long>(TypeKind::kObject))
    throw colors::InvalidArgumentError("field kind out of range (colors_shm._classes.KINDS)");
  return static_cast<TypeKind>(v);
}

std::string class_label(const cd::ClassRecord* c) {
  return std::string(cd::name_view(c->name)) + " (version " + std::to_string(c->version) + ")";
}

// ---- Handle: one shared user object held by one proxy ----

// ---- GC roots of user proxies ----
//
// Each user proxy holds one slot of this process's root table (libshared/src/roots.hpp) through
// its handle. The binding keeps its own stack of empty slots, taken from libshared in batches:
// binding code runs with the GIL held in every Python thread, so one process-wide stack guarded by
// the GIL replaces libshared's per-thread slot caches, whose thread-local lookups (a
// __tls_get_addr call in this dlopen'ed module) and generation checks on every acquire and release
// were ~10% of the time of making and dropping a proxy (perf, bindings-python/README.md).
//
// The protocol is libshared's own (roots.cpp: root_acquire, root_load, root_release), not a new
// one:
//  * rooting a word read from a shared slot: store it into an empty root slot (root_set: ordered
//    by root_fence before this thread's next loads), reload the source; if it changed, empty the
//    root slot again (root_clear) and retry. So the word was in the source at an instant when it
//    already was a root of this process.
//  * dropping a root: root_clear (the deletion barrier when the collector needs it:
//    root_release_flags); the slot is then empty and may be reused. The slots move between
//    Python threads only under the GIL, whose hand-over orders what each thread stored before.
//
// Invariants:
//  * every slot in g_free_roots is empty (null) and belongs to this process's root table of the
//    attachment of generation g_free_roots_gen; slots of an older generation are forgotten, never
//    touched (their table was unmapped by detach, or is the parent's after a fork);
//  * a handle's `root` holds its `word` from the proxy's creation until handle_dealloc, which
//    empties it only if the handle's generation is still current and the process is attached
//    (else the server already released the table, as for a colors::Value of a closed attachment).
// REQUIRES: the GIL for everything below (it is the only lock of g_free_roots).
constexpr int kRootBatch = 32;       // slots taken from libshared at once
constexpr int kMaxFreeRoots = 256;   // beyond this, dropped slots go back to libshared
std::atomic<cd::Word>* g_free_roots[kMaxFreeRoots];
int g_free_root_count = 0;
std::uint64_t g_free_roots_gen = 0;
// Empty slots beyond the pool that the heap-pressure path emptied (relieve_proxy_cache): it must
// not give them back to libshared (root_release may need roots.cpp's mutex, which the allocating
// thread may hold), so take_root uses them before asking libshared. Same generation rule.
std::vector<std::atomic<cd::Word>*> g_spare_roots;

// An empty root slot of the current attachment. Throws (NotAttachedError, OutOfMemoryError).
std::atomic<cd::Word>* take_root() {
  // NotAttachedError rather than a fault; also in a fork child before _after_fork_in_child has
  // moved the generation on (another at-fork hook may run Python code first): libshared's fork
  // handler has already dropped the attachment there, and the pooled slots are the parent's.
  cd::current_meta();
  if (g_free_roots_gen != g_generation) {  // an older attachment's slots: forget them
    g_free_root_count = 0;
    g_spare_roots.clear();
    g_free_roots_gen = g_generation;
  }
  if (g_free_root_count == 0 && !g_spare_roots.empty()) {
    std::atomic<cd::Word>* r = g_spare_roots.back();
    g_spare_roots.pop_back();
    return r;
  }
  if (g_free_root_count == 0) {
    while (g_free_root_count < kRootBatch) g_free_roots[g_free_root_count++] = cd::root_acquire(cd::kNull);
  }
  return g_free_roots[--g_free_root_count];
}

// Takes back an empty slot of the current attachment.
void give_root(std::atomic<cd::Word>* slot) {
  if (g_free_roots_gen == g_generation && g_free_root_count < kMaxFreeRoots) {
    g_free_roots[g_free_root_count++] = slot;
  } else {
    cd::root_release(slot);  // libshared's own free slots (the slot is empty: no-op barrier)
  }
}

// Keeps a slot the heap-pressure path emptied, never calling libshared (see g_spare_roots). A slot
// that finds no room (no memory for the vector) is left empty in the table: the server releases
// the table with the attachment.
void keep_spare_root(std::atomic<cd::Word>* slot) noexcept {
  if (g_free_roots_gen != g_generation) return;
  if (g_free_root_count < kMaxFreeRoots) {
    g_free_roots[g_free_root_count++] = slot;
    return;
  }
  try {
    g_spare_roots.push_back(slot);
  } catch (...) {
  }
}

// Drops a root slot the caller took (from the pool or from libshared) in generation `gen`, unless
// that attachment is gone meanwhile (Python code may run between, e.g. the class resolver): then
// the server released the whole table and the slot must not be touched.
void drop_root(std::atomic<cd::Word>* slot, std::uint64_t gen) {
  if (slot == nullptr || gen != g_generation || cd::current_meta_or_null() == nullptr) return;
  cd::root_clear(slot);  // as root_release: the deletion barrier when the collector needs it
  give_root(slot);
}

// libshared's root_load (roots.cpp) with a slot of g_free_roots. Returns the word read; *root is
// its root slot, or nullptr when the word is no reference.
cd::Word root_load_pooled(const std::atomic<cd::Word>* src, std::atomic<cd::Word>** root) {
  for (;;) {
    cd::Word w = src->load(std::memory_order_acquire);
    if (!cd::is_ref(w)) {
      *root = nullptr;
      return w;
    }
    std::atomic<cd::Word>* r = take_root();
    cd::root_set(r, w);  // the slot is empty: no deletion barrier; root_fence before the re-read
    if (src->load(std::memory_order_acquire) == w) {
      *root = r;
      return w;
    }
    cd::root_clear(r);  // as root_release
    give_root(r);
  }
}

struct ScopeState;

// A user proxy's handle lives inside its proxy's memory, after the class's slots (the class's
// basic size is enlarged by one Handle when _install_user_class installs it): a field read then
// finds the handle on the proxy's own cache lines instead of chasing a second object, one
// dependent cache miss fewer per attribute access. Such a handle is `embedded`: its dealloc runs
// when the proxy clears its slots and leaves the memory to the proxy's tp_free. That is sound
// because a handle dies exactly when its proxy does (it is never exposed: the invariants above).
// Handles of other proxies (containers, generic SharedObjects) are objects of their own, reused
// through g_free_handles. The fields a read needs (type, word, gen) come first.
struct Handle {
  PyObject_HEAD
  cd::Word word;               // the shared user object
  std::uint64_t gen;
  std::atomic<cd::Word>* root; // its root slot (see above); nullptr while being made, or borrowed
  PyObject* proxy;  // borrowed: the proxy whose slot holds this handle (nullptr until it is made)
  ScopeState* scope;  // borrowed: the read scope that keeps `word` (root null), at scope->borrowed[at]
  std::uint32_t at;
  bool other;       // the proxy is in g_other_proxies (root stays null: its _Ref holds the object)
  bool embedded;    // lives inside its proxy's memory (a user proxy's handle)
  RefMemo memo;     // a user proxy's last reference read through a field descriptor (read_memo.hpp)
};

// Makes a handle unusable: every use raises NotAttachedError.
void make_stale(Handle* h) { h->gen = 0; }

FreeList<256> g_free_handles;  // handles of dead proxies (free_list.hpp)

// Sets every field of a handle just made (refcount 1, a reference to its type).
Handle* init_handle(Handle* h, cd::Word w, std::atomic<cd::Word>* root, std::uint64_t gen, bool embedded) {
  h->word = w;
  h->gen = gen;
  h->root = root;
  h->proxy = nullptr;
  h->scope = nullptr;
  h->at = 0;
  h->other = false;
  h->embedded = embedded;
  h->memo = RefMemo{};
  return h;
}

// A new handle (refcount 1, root and proxy null).
Handle* new_handle() {
  return init_handle(reinterpret_cast<Handle*>(g_free_handles.take(g_handle_type)), cd::kNull, nullptr, g_generation,
                     false);
}

// Makes the handle of the new user proxy `p` in its place inside `p` (zeroed by tp_alloc), for
// the object `w` held by `root` (nullptr when a read scope keeps it) in attachment `gen`.
// Refcount 1, a reference to its type, as new_handle's.
Handle* embedded_handle(PyObject* p, Py_ssize_t embed, cd::Word w, std::atomic<cd::Word>* root, std::uint64_t gen) {
  auto* h = reinterpret_cast<Handle*>(reinterpret_cast<char*>(p) + embed);
  PyObject_Init(reinterpret_cast<PyObject*>(h), g_handle_type);
  return init_handle(h, w, root, gen, true);
}

// ---- read scopes: borrowed user proxies (read_scope.hpp) ----
//
// Inside a read scope, a user proxy made for an object the thread read in the scope (a field, a
// list element) takes no root: its handle is *borrowed*, listed in the scope. (Objects allocated
// in a Python scope are rooted as outside one.)
// When the outermost scope ends, every borrowed handle still listed belongs to a proxy still
// alive, i.e. one that escaped the scope (CPython's reference count kept it): each is then rooted
// (promote on escape: root_set, then flag_scope_reference, as libshared's promote_borrowed) before
// the native scope ends. A borrowed proxy that dies in the scope leaves the list (handle_dealloc);
// one whose object is stored somewhere shared (user_value_of) is rooted at that moment.
// Invariants (all with the GIL):
//  * a handle is in `scope->borrowed` at index `at` exactly while `scope` is non-null, and then
//    its root is null and its scope is open (depth > 0), so `word` is kept by the native scope;
//  * g_open_scopes counts the threads whose scope is open; t_scope's state is this thread's.
//  * a scope protects only reads of the attachment it was opened in (`gen`): after a detach (and
//    an attach) inside it, open_scope() no longer returns it and reads take roots again;
//  * `epoch` changes at every outermost entry, so code that read a word in a scope can tell,
//    after Python code ran, whether that scope is still the open one (user_proxy).
struct ScopeState {
  std::optional<colors::ReadScope> native;
  int depth = 0;
  std::uint64_t gen = 0;    // g_generation at the outermost entry
  std::uint64_t epoch = 0;  // outermost entries so far
  std::vector<Handle*> borrowed;
};
thread_local ScopeState* t_scope = nullptr;  // made at the thread's first scope (thread_scope_state)
int g_open_scopes = 0;

// The calling thread's open scope, or nullptr (a plain read while no scope is open anywhere).
ScopeState* open_scope() {
  if (g_open_scopes == 0) return nullptr;
  ScopeState* s = t_scope;
  return s != nullptr && s->depth > 0 && s->gen == g_generation ? s : nullptr;
}

// Whether the scope `s` that was open with `epoch` is still the open one (Python code that ran
// since may have ended it, or detached).
bool scope_still_open(const ScopeState* s, std::uint64_t epoch) {
  return s->depth > 0 && s->epoch == epoch && s->gen == g_generation;
}

[[noreturn]] void scope_ended_meanwhile() {
  throw colors::InvalidArgumentError(
      "the read scope ended (or the process detached) while a proxy of an object read in it was being made, by "
      "Python code that ran meanwhile (a finalizer, a gc callback, a class resolver); read the object again");
}

void unlist(Handle* h) {
  std::vector<Handle*>& v = h->scope->borrowed;
  Handle* last = v.back();
  v[h->at] = last;
  last->at = h->at;
  v.pop_back();
  h->scope = nullptr;
}

// Roots a borrowed handle (it escapes its scope). One whose attachment ended meanwhile is left
// stale (its generation no longer current: every use raises NotAttachedError).
void promote_handle(Handle* h) {
  unlist(h);
  if (h->gen != g_generation || cd::current_meta_or_null() == nullptr) return;
  try {
    std::atomic<cd::Word>* r = take_root();
    cd::root_set(r, h->word);
    cd::flag_scope_reference(h->word);  // after the root's store, as promote_borrowed
    h->root = r;
  } catch (...) {
    make_stale(h);  // no root to be had (the table cannot grow): unusable rather than unkept
    throw;
  }
}

// ---- a thread that ends inside its read scope ----
//
// A thread may end with its scope open (entered, never exited; or a generator suspended inside
// `with read_scope():`), after handing a borrowed proxy to another thread. libshared ends the
// native scope at thread exit (read_scope.hpp), so that proxy's object would be kept by nothing.
// CPython clears a thread's state dict on that thread, with the GIL, before the thread ends
// (PyThreadState_Clear in the thread's bootstrap): a ScopeEnd kept in that dict is deallocated
// then, and ends a scope still open as read_scope_exit does (promote on escape, then the native
// scope ends on its own thread). A thread state cleared by another thread (a daemon thread's, at
// interpreter exit) only has its handles promoted: its native scope and state belong to a thread
// that never runs again.
// Invariant: the ScopeEnd of a thread is made with its ScopeState (read_scope_enter) and is the
// only owner of it once the thread ends.
struct ScopeEnd {
  PyObject_HEAD
  ScopeState* state;
  pthread_t thread;
};
PyTypeObject* g_scope_end_type = nullptr;
constexpr const char* kScopeEndKey = "colors_shm.read_scope_end";

void end_scope_at_thread_end(ScopeState* s, bool own_thread) {
  if (s->depth > 0) {
    s->depth = 0;
    while (!s->borrowed.empty()) {
      try {
        promote_handle(s->borrowed.back());  // unlists first; a failure leaves the handle stale
      } catch (...) {
      }
    }
    --g_open_scopes;
    if (own_thread) s->native.reset();
  }
  if (own_thread) {
    if (t_scope == s) t_scope = nullptr;
    delete s;
  }
}

void scope_end_dealloc(PyObject* self) {
  auto* e = reinterpret_cast<ScopeEnd*>(self);
  if (e->state != nullptr) end_scope_at_thread_end(e->state, pthread_equal(e->thread, pthread_self()) != 0);
  e->state = nullptr;
  PyTypeObject* type = Py_TYPE(self);
  type->tp_free(self);
  Py_DECREF(type);
}

PyType_Slot scope_end_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(&scope_end_dealloc)},
    {Py_tp_doc, const_cast<char*>("Ends this thread's read scope when the thread ends (internal).")},
    {0, nullptr},
};
PyType_Spec scope_end_spec = {"colors_shm._colors_shm._ScopeEnd", sizeof(ScopeEnd), 0,
                              Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, scope_end_slots};

// This thread's ScopeState, made at its first scope with the ScopeEnd that owns it at thread end.
ScopeState& thread_scope_state() {
  if (t_scope != nullptr) return *t_scope;
  PyObject* dict = PyThreadState_GetDict();
  if (dict == nullptr) throw colors::InvalidArgumentError("this thread has no Python thread state for a read scope");
  auto state = std::make_unique<ScopeState>();
  auto* e = PyObject_New(ScopeEnd, g_scope_end_type);
  if (e == nullptr) throw py::error_already_set();
  e->state = nullptr;
  e->thread = pthread_self();
  const int rc = PyDict_SetItemString(dict, kScopeEndKey, reinterpret_cast<PyObject*>(e));
  Py_DECREF(e);  // the dict holds it, or it is freed (state still null) on failure
  if (rc != 0) throw py::error_already_set();
  e->state = state.get();
  t_scope = state.release();
  return *t_scope;
}

void handle_dealloc(PyObject* self) {
  auto* h = reinterpret_cast<Handle*>(self);
  if (h->scope != nullptr) unlist(h);
  // The table is this process's memory: its entry goes whenever it is of this generation (also in
  // a fork child before _after_fork_in_child, where the attachment is already gone). The root is
  // the segment's: dropped only while attached in the handle's generation.
  if (h->proxy != nullptr && h->gen == g_generation && g_proxies_gen == g_generation)
    (h->other ? g_other_proxies : g_proxies).erase(h->word, h->proxy);
  if (h->root != nullptr && h->gen == g_generation && cd::current_meta_or_null() != nullptr) {
    cd::root_clear(h->root);  // drops the root, as root_release
    give_root(h->root);
  }
  h->root = nullptr;
  if (h->embedded) {
    Py_DECREF(Py_TYPE(self));  // the memory is the proxy's, freed by its tp_free
    return;
  }
  g_free_handles.give(self);
}

PyType_Slot handle_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(&handle_dealloc)},
    {Py_tp_doc, const_cast<char*>("The GC root of one shared user object (internal).")},
    {0, nullptr},
};
PyType_Spec handle_spec = {"colors_shm._colors_shm._Handle", sizeof(Handle), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION, handle_slots};

// ---- the handle slot is invisible to tp_traverse ----
//
// A proxy's handle must die exactly when its proxy does (the identity table's invariant above).
// CPython's traverse of classes made by `class` (subtype_traverse) visits every object slot, so
// gc.get_referents(proxy) would hand the handle to Python code, which could keep it past its proxy:
// the table would then point at a freed proxy. The class owning a hidden slot (SharedProxy, each
// user proxy class) gets hidden_traverse instead, which runs CPython's own traverse with the
// hidden slots emptied for the duration (with the GIL, no Python code runs meanwhile).
//
// subtype_traverse walks up the tp_base chain while a class has subtype_traverse and hands the
// rest to the first one that does not; so every class of the chain that has hidden_traverse is
// switched back to subtype_traverse for the call (one walk over the whole chain, each slot
// visited once), then restored. Handles are not GC objects: the collector loses nothing by not
// seeing them.
// Invariants: g_subtype_traverse is CPython's subtype_traverse; g_hidden_slot maps each class
// owning a hidden slot to its offset; a class whose tp_traverse is hidden_traverse is a key of
// g_hidden_slot (offset -1: a subclass without a hidden slot of its own). Touched with the GIL.
// The tp_free of every class that has hidden_traverse: CPython's own, under another address.
// `obj.__class__ = X` is refused unless X has the same tp_free, i.e. X is a proxy class itself:
// otherwise a class with a plain slot at the offset of the hidden one would read the handle.
void proxy_free(void* p) { PyObject_GC_Del(p); }

traverseproc g_subtype_traverse = nullptr;
std::unordered_map<PyTypeObject*, Py_ssize_t> g_hidden_slot;

int hidden_traverse(PyObject* self, visitproc visit, void* arg) {
  PyTypeObject* t = Py_TYPE(self);
  if (t->tp_traverse != &hidden_traverse) {
    // Called as the base traverse of a class made later (a Python subclass of a proxy class),
    // whose subtype_traverse already visited its own slots: this time the levels from the proxy
    // class up are not visited (the collector then only keeps their referents alive one cycle
    // longer); from now on the subclass has hidden_traverse too, and every walk is complete.
    g_hidden_slot.emplace(t, -1);
    t->tp_traverse = &hidden_traverse;
    if (t->tp_free == &PyObject_GC_Del) t->tp_free = &proxy_free;
    return 0;
  }
  // The collector traverses every tracked proxy on each pass: no allocation here (a proxy class
  // and a subclass or two; in a chain of more than kMax such classes, nothing is visited: the
  // collector then keeps the referents alive, as for a subclass seen the first time).
  constexpr int kMax = 16;
  PyTypeObject* switched[kMax];
  PyObject** slots[kMax];
  PyObject* values[kMax];
  int n = 0, k = 0;
  for (PyTypeObject* b = t; b != nullptr; b = b->tp_base) {
    if (b->tp_traverse != &hidden_traverse) continue;
    if (n == kMax) {  // restore and give up on this walk (as for a subclass seen the first time)
      for (int i = 0; i < k; ++i) *slots[i] = values[i];
      for (int i = 0; i < n; ++i) switched[i]->tp_traverse = &hidden_traverse;
      return 0;
    }
    switched[n++] = b;
    b->tp_traverse = g_subtype_traverse;
    auto it = g_hidden_slot.find(b);
    if (it != g_hidden_slot.end() && it->second >= 0) {
      slots[k] = reinterpret_cast<PyObject**>(reinterpret_cast<char*>(self) + it->second);
      values[k] = *slots[k];
      *slots[k++] = nullptr;
    }
  }
  int r = g_subtype_traverse(self, visit, arg);
  for (int i = 0; i < k; ++i) *slots[i] = values[i];
  for (int i = 0; i < n; ++i) switched[i]->tp_traverse = &hidden_traverse;
  return r;
}

// True if every class of `t`'s layout chain (tp_base) up to `object` is a class made by `class`
// (CPython's subtype_dealloc): the only classes whose instances a proxy class may allocate with
// tp_alloc and fill itself. An extension type (a pybind11 class, ...) would need its own
// initialisation, and its dealloc would then read uninitialised state.
bool plain_python_class(PyTypeObject* t) {
  if (g_instance_base == nullptr) return false;
  destructor subtype_dealloc = reinterpret_cast<PyTypeObject*>(g_instance_base)->tp_dealloc;
  for (PyTypeObject* b = t; b != nullptr && b != &PyBaseObject_Type; b = b->tp_base)
    if (!(b->tp_flags & Py_TPFLAGS_HEAPTYPE) || b->tp_dealloc != subtype_dealloc) return false;
  return true;
}

// Gives class `tp` (made by `class`) hidden_traverse and proxy_free, hiding its object slot at
// `off` (-1: none).
void hide_slot(PyTypeObject* tp, Py_ssize_t off) {
  if (tp->tp_traverse == &hidden_traverse) {
    g_hidden_slot[tp] = off;
    return;
  }
  if (g_subtype_traverse == nullptr) g_subtype_traverse = tp->tp_traverse;
  if (tp->tp_traverse != g_subtype_traverse)
    throw colors::InvalidArgumentError(std::string("class '") + tp->tp_name + "' has a traverse of its own");
  if (tp->tp_free != &PyObject_GC_Del && tp->tp_free != &proxy_free)
    throw colors::InvalidArgumentError(std::string("class '") + tp->tp_name + "' has a deallocator of its own");
  g_hidden_slot[tp] = off;
  tp->tp_traverse = &hidden_traverse;
  tp->tp_free = &proxy_free;
}

// The handle in a proxy's hidden slot, or nullptr. The slot is checked to hold a Handle: the
// binding writes it only into proxies it makes, but code that runs while a proxy class is being
// made (a metaclass, __init_subclass__) can make an instance and set the slot's attribute before
// _install_user_class hides it, so the slot of such an instance may hold any object.
Handle* slot_handle(PyObject* proxy, Py_ssize_t off) {
  PyObject* h = *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(proxy) + off);
  return h != nullptr && Py_TYPE(h) == g_handle_type ? reinterpret_cast<Handle*>(h) : nullptr;
}

// The handle in the slot at `off` of the proxy `o`, checked as user_handle says.
Handle* checked_handle(PyObject* o, Py_ssize_t off) {
  Handle* h = slot_handle(o, off);
  if (h == nullptr)
    throw colors::TypeMismatchError(std::string("this '") + Py_TYPE(o)->tp_name +
                                    "' instance is not a shared object: colors_shm did not make it (e.g. object.__new__)");
  if (h->gen != g_generation || !colors::has_segment())
    throw colors::NotAttachedError(
        "this shared object belongs to an attachment that was closed by detach(); "
        "get it again (e.g. from its repository) after attaching");
  return h;
}

// The handle of a user proxy, nullptr if `o` is no instance of a proxy class. Throws
// TypeMismatchError for an instance the binding did not make (its slot holds no handle) and
// NotAttachedError for a proxy from an older attachment.
Handle* user_handle(PyObject* o) {
  // The last exact proxy class asked about (entries of g_user_types are never removed, and the
  // GIL guards both): method lookups on proxies ask on every call (user_getattro).
  static PyTypeObject* last_type = nullptr;
  static Py_ssize_t last_off = 0;
  if (Py_TYPE(o) == last_type) return checked_handle(o, last_off);
  auto it = g_user_types.find(Py_TYPE(o));
  if (it != g_user_types.end()) {
    last_type = it->first;
    last_off = it->second.off;
  } else {
    if (g_instance_base == nullptr ||
        !PyType_IsSubtype(Py_TYPE(o), reinterpret_cast<PyTypeObject*>(g_instance_base)))
      return nullptr;
    // A subclass of a proxy class: find the proxy class it derives from.
    PyTypeObject* t = Py_TYPE(o);
    while (t != nullptr && g_user_types.find(t) == g_user_types.end()) t = t->tp_base;
    if (t == nullptr) return nullptr;
    it = g_user_types.find(t);
  }
  return checked_handle(o, it->second.off);
}

// The proxy of the user object `w` (a new reference): the live one, or a new instance of the
// proxy class its class version maps to. `*root` is a root slot of the pool holding `w` (or null:
// then one is taken if a proxy is made); a new proxy's handle takes it over (*root becomes null),
// otherwise it stays the caller's. Returns nullptr with *generic set when the class maps to no
// Python class. Throws on errors.
// `absent`: the caller looked w up in the identity table, found nothing, and held the GIL since.
// REQUIRES: w is a user object (kind kObject) of the current attachment, kept alive by the caller.
PyObject* user_proxy(cd::Word w, std::atomic<cd::Word>** root, bool* generic, bool absent = false,
                     ScopeState* borrow = nullptr) {
  *generic = false;
  const std::uint64_t scope_epoch = borrow != nullptr ? borrow->epoch : 0;
  // `w` (and the caller's root) belong to this attachment: Python code run below (the class
  // resolver, a collection in the allocation) may detach and attach again, and then nothing of
  // `w` may reach the new attachment's tables or handles.
  const std::uint64_t entry_gen = g_generation;
  if (!absent) {
    if (PyObject* p = live_proxy(w)) return Py_NewRef(p);
  }
  if (g_mapping_gen != g_generation) {
    clear_mappings();
    g_mapping_gen = g_generation;
  }
  sync_proxies_gen();
  const cd::ClassRecord* rec = cd::class_of(w);
  Mapped mp;
  bool resolved = false;  // the resolver (Python code) ran
  if (rec == g_last_rec) {
    mp = g_last;
  } else {
    auto it = g_mapping.find(rec);
    if (it != g_mapping.end()) {
      mp = it->second;
    } else {
      if (g_resolver == nullptr) {
        *generic = true;
        return nullptr;
      }
      // Python code: may register classes (clear_mappings) or even detach.
      resolved = true;
      py::object r = py::reinterpret_borrow<py::object>(g_resolver)(py::str(std::string(cd::name_view(rec->name))));
      if (g_generation != entry_gen || g_mapping_gen != g_generation)
        throw colors::NotAttachedError("detached while resolving a class");
      mp.type = r.is_none() ? Py_None : r.ptr();
      if (mp.type != Py_None) {
        auto t = g_user_types.find(reinterpret_cast<PyTypeObject*>(mp.type));
        if (t == g_user_types.end())
          throw colors::InvalidArgumentError("the class resolver returned something that is not a proxy class");
        mp.off = t->second.off;
        mp.embed = t->second.embed;
      }
      auto [slot, inserted] = g_mapping.emplace(rec, mp);
      if (inserted) Py_INCREF(mp.type);  // the table's own reference (r's goes with r)
      else mp = slot->second;            // the resolver's Python code mapped it meanwhile
    }
    g_last_rec = rec;
    g_last = mp;
  }
  if (mp.type == Py_None) {
    *generic = true;
    return nullptr;
  }
  if (resolved) {
    // The resolver's Python code: it may have ended the scope that keeps `w`, or made its proxy.
    if (borrow != nullptr && !scope_still_open(borrow, scope_epoch)) scope_ended_meanwhile();
    if (PyObject* p = live_proxy(w)) return Py_NewRef(p);
  }
  sync_proxies_gen();
  g_proxies.reserve_one();  // the insert below cannot fail then
  std::atomic<cd::Word>* r = *root;
  if (r == nullptr && borrow == nullptr) {
    r = take_root();
    cd::root_set(r, w);  // as root_acquire (w is kept alive by the caller)
  }
  *root = nullptr;  // r is ours from here: the handle takes it, or it is dropped
  const std::uint64_t gen = g_generation;  // r's attachment, whatever the allocation runs
  auto* tp = reinterpret_cast<PyTypeObject*>(mp.type);
  // A GC allocation: Python 3.11 may run a collection in it, hence finalizers and weakref
  // callbacks, i.e. any Python code (even one that reads `w` and so makes its proxy, or detaches:
  // then the handle is of the closed attachment, stale, and never touches r).
  PyObject* p = tp->tp_alloc(tp, 0);
  if (p == nullptr) {
    drop_root(r, gen);
    throw py::error_already_set();
  }
  // tp is installed (g_user_types), so its instances have room for the handle at mp.embed.
  Handle* h = embedded_handle(p, mp.embed, w, r, gen);
  *reinterpret_cast<PyObject**>(reinterpret_cast<char*>(p) + mp.off) = reinterpret_cast<PyObject*>(h);  // steals h
  if (gen != g_generation) {
    // A detach ran in the allocation (an attach may have followed, and moved the identity tables
    // to the new attachment): `w` is a word of the closed one. The proxy is never handed out nor
    // entered in a table; its handle, of generation `gen`, touches neither table nor root.
    Py_DECREF(p);
    throw colors::NotAttachedError("detached while a shared object's proxy was being made");
  }
  if (borrow != nullptr && !scope_still_open(borrow, scope_epoch)) {
    // Code run in the allocation ended the scope that kept `w` (h has no root): `w` may be freed
    // by now, so the proxy is never handed out.
    Py_DECREF(p);
    scope_ended_meanwhile();
  }
  if (PyObject* other = live_proxy(w)) {  // made by code run in the allocation: it stays the one
    Py_DECREF(p);  // its handle drops our root and, its proxy being unset, leaves the table alone
    return Py_NewRef(other);
  }
  h->proxy = p;
  g_proxies.reserve_one();  // again: code run in the allocation may have inserted entries
  g_proxies.insert(w, p);   // of this attachment: sync_proxies_gen above, and no detach since
  if (borrow != nullptr) {
    // Listed last: nothing above can fail any more, and the scope was checked to be still open
    // after the allocation's Python code.
    h->scope = borrow;
    h->at = static_cast<std::uint32_t>(borrow->borrowed.size());
    try {
      borrow->borrowed.push_back(h);
    } catch (...) {
      h->scope = nullptr;
      make_stale(h);  // unkept and unlisted: unusable
      Py_DECREF(p);
      throw;
    }
  } else {
    // Last: the eviction this may do runs Python code. A borrowed proxy is not kept: a scope's
    // proxies take no root, and one kept past the scope would be promoted (rooted) at its end.
    g_proxy_cache.keep(p, reinterpret_cast<PyObject*>(h));
    start_pressure_watcher();
  }
  return p;
}

static_assert(std::endian::native == std::endian::little, "read_string_direct tests ASCII a word at a time");
static_assert(offsetof(cd::StringObject, bytes) % 8 == 0, "string bytes are read as aligned words");

// Longest string read_string_direct copies (longer ones take the rooted path, where decoding
// dominates anyway).
constexpr std::uint64_t kDirectStringMax = 1024;

// read_string_direct's strs, by the shared string's address (see there). Invariant: an entry
// with a non-null str holds a reference to it, and names the string at `word` as of a read in the
// collector's window `window` (no_sweep_window_begin's token), in attachment generation `gen`.
struct StrCacheEntry {
  cd::Word word = cd::kNull;
  std::uint64_t window = 0;
  std::uint64_t gen = 0;
  PyObject* str = nullptr;
};
constexpr std::size_t kStrCacheSize = 256;
StrCacheEntry g_str_cache[kStrCacheSize];

// The str held by `s`, read straight from the segment without taking a GC root; nullptr (no
// error set) when the slot holds no string of at most kDirectStringMax bytes or the collector may
// have freed memory meanwhile: then take the rooted path. Sets an error (and returns nullptr) only when making
// the str fails.
//
// Why this is safe (no_sweep_window_begin/_end, libshared/src/objects.hpp; the same protocol as
// the Java binding's Direct.readString): the slot is loaded inside a window of the collector's
// seqlock in which nothing is freed (no cycle running, or the running one still marking); a
// string in it then cannot be freed before the window closes (the object owning the slot is kept
// alive by the caller, so the string was reachable when loaded), and the final check sees the
// window close. Until that check the words read may be garbage (freed and reused memory), so they are
// only compared and bounded, never followed: the class pointer is compared with the builtin string
// class, the length bounded, the bytes kept inside the objects space; all loads are relaxed
// atomics, the acquire fence orders them before the check. Strings are immutable, so bytes read
// when the check passes are the string's.
//
// The strs made last are kept (g_str_cache), each with the shared string's address and the window
// it was read in: a string is immutable and stays at its address until a sweep frees it, so in
// the same window the same address is the same string, and its str is handed out again (checked
// after the slot's load, as the copy is).
// REQUIRES: the GIL; the object owning `s` kept alive by the caller.
PyObject* read_string_direct(const std::atomic<cd::Word>* s) {
  const cd::Metadata* m = cd::current_meta_or_null();
  if (m == nullptr) return nullptr;
  constexpr std::size_t kWords = kDirectStringMax / 8;
  std::uint64_t buf[kWords];
  const std::uint64_t window = cd::no_sweep_window_begin(m);
  if (window == 0) return nullptr;  // a sweep may be running
  cd::Word w = s->load(std::memory_order_acquire);
  StrCacheEntry& e = g_str_cache[(w >> 4) % kStrCacheSize];
  if (e.word == w && e.window == window && e.gen == g_generation && e.str != nullptr) {
    if (cd::no_sweep_window_end(m, window)) return Py_NewRef(e.str);  // the slot's load was in the window
    return nullptr;
  }
  constexpr std::uint64_t kBytesOff = offsetof(cd::StringObject, bytes);
  if (!cd::is_ref(w) || w < m->objects_begin || w > m->objects_end - kBytesOff) return nullptr;
  auto* so = reinterpret_cast<const cd::StringObject*>(w);
  if (so->head.cls.load(std::memory_order_relaxed) != m->builtin[static_cast<int>(TypeKind::kString)]) return nullptr;
  std::uint64_t n = cd::load_payload_word(&so->length);
  // Whole words: a block is a multiple of 16 bytes, so the word holding the last byte is inside
  // the string's block (if the check below passes) and inside the objects space (checked here).
  std::uint64_t words = (n + 7) / 8;
  if (n > kDirectStringMax || m->objects_end - (w + kBytesOff) < words * 8) return nullptr;
  // Copied a word at a time, OR-ing the words for the ASCII test (in registers: masking the copy
  // in memory and reading it back stalled on store forwarding). The bytes past the end in the last
  // word are not the string's: masked out of the test (little-endian: the first bytes are low).
  std::uint64_t high = 0;
  for (std::uint64_t i = 0; i < words; ++i) {
    std::uint64_t x = cd::load_payload_word(reinterpret_cast<const char*>(so->bytes) + i * 8);
    buf[i] = x;
    if (i + 1 == words && n % 8 != 0) x &= (std::uint64_t{1} << (8 * (n % 8))) - 1;
    high |= x;
  }
  if (!cd::no_sweep_window_end(m, window)) return nullptr;
  bool ascii = (high & 0x8080808080808080ull) == 0;
  const char* bytes = reinterpret_cast<const char*>(buf);
  PyObject* u;
  if (ascii) {
    u = PyUnicode_New(static_cast<Py_ssize_t>(n), 127);
    if (u != nullptr) std::memcpy(PyUnicode_1BYTE_DATA(u), bytes, n);
  } else {
    // libshared checked the UTF-8 when it made the string; surrogateescape as from_value does.
    u = PyUnicode_DecodeUTF8(bytes, static_cast<Py_ssize_t>(n), "surrogateescape");
  }
  if (u != nullptr) {
    PyObject* old = e.str;
    e = StrCacheEntry{w, window, g_generation, Py_NewRef(u)};
    Py_XDECREF(old);  // a str: its deallocation runs no Python code
  }
  return u;
}

// ---- field access ----

// The value of the reference `v` just loaded from `s` (a field of declared type `ft`), as a new
// reference. Throws on errors.
// REQUIRES: the GIL; the object owning `s` kept alive by the caller.
PyObject* read_ref(std::atomic<cd::Word>* s, cd::Word v, TypeKind ft) {
  // The live proxy of a user object needs no new root: the proxy holds one. Its entry was in the
  // table when `v` was loaded (entries change only under the GIL, held since before the load), so
  // `v` was then that proxy's object, which cannot have been freed and replaced while rooted.
  // (Fields typed otherwise never hold user objects: check_field_type. Should one anyway, the
  // rooted path below still finds its live proxy: `looked` stays false.)
  // The slot is read once more before the proxy is returned (one load of a cached line): then the
  // argument does not even need the GIL (the slot held v after the proxy existed, as the Java
  // binding's Proxies does without a GIL), should proxies ever be made without it.
  // `looked`: v was looked up and has no live proxy (user_proxy need not look again).
  bool looked = false;
  if (ft == TypeKind::kObject || ft == TypeKind::kAny) {
    PyObject* p = live_proxy(v);
    if (p != nullptr && s->load(std::memory_order_acquire) == v) return Py_NewRef(p);
    looked = p == nullptr;
    // Inside a read scope, `v` (loaded in it) is kept by the scope: a user object's proxy is
    // borrowed, no root (read_scope.hpp).
    if (ScopeState* sc = open_scope(); sc != nullptr && cd::class_of(v)->kind == TypeKind::kObject) {
      std::atomic<cd::Word>* none = nullptr;
      bool generic = false;
      PyObject* q = user_proxy(v, &none, &generic, looked, sc);
      if (!generic) return q;
    }
  }
  // A container's live proxy, by the same argument (its _Ref holds the root). Fields of scalar
  // types never hold containers.
  if (ft == TypeKind::kList || ft == TypeKind::kMap || ft == TypeKind::kSet || ft == TypeKind::kSortedMap ||
      ft == TypeKind::kAny) {
    PyObject* p = live_in(g_other_proxies, v);
    if (p != nullptr && s->load(std::memory_order_acquire) == v) return Py_NewRef(p);
  }
  if (ft == TypeKind::kString || ft == TypeKind::kAny) {
    if (PyObject* u = read_string_direct(s)) return u;
    if (PyErr_Occurred()) throw py::error_already_set();
  }
  if (ft == TypeKind::kFloat || ft == TypeKind::kAny) {
    double x = 0;  // a boxed float (outside the immediate range), under the collector's seqlock
    bool is_float = false;
    if (const cd::Metadata* m = cd::current_meta_or_null();
        m != nullptr && cd::read_without_sweep(m, [&] {
          cd::Word w = s->load(std::memory_order_acquire);
          // Compared, never followed: the class pointer is checked against the builtin float class.
          if (cd::is_ref(w) && w >= m->objects_begin && w <= m->objects_end - sizeof(cd::FloatObject) &&
              reinterpret_cast<const cd::ObjectHead*>(w)->cls.load(std::memory_order_relaxed) ==
                  m->builtin[static_cast<int>(TypeKind::kFloat)]) {
            std::uint64_t bits = cd::load_payload_word(&reinterpret_cast<const cd::FloatObject*>(w)->value);
            std::memcpy(&x, &bits, sizeof x);
            is_float = true;
          }
        }) && is_float)
      return PyFloat_FromDouble(x);
  }
  // Otherwise root the value before reading through it (the field may be overwritten meanwhile).
  std::atomic<cd::Word>* root = nullptr;
  std::uint64_t gen = g_generation;
  cd::Word w = root_load_pooled(s, &root);
  if (cd::is_ref(w) && cd::class_of(w)->kind == TypeKind::kObject) {
    bool generic = false;
    PyObject* p;
    try {
      p = user_proxy(w, &root, &generic, /*absent=*/looked && w == v);
    } catch (...) {
      drop_root(root, gen);
      throw;
    }
    if (!generic) return p;
  }
  // Anything else becomes a Value that owns the root (its destructor hands the slot to libshared).
  return from_value(colors::Value::adopt_root(w, root)).release().ptr();
}

// A field read inside a transaction: libshared's read under the transaction's isolation (the
// object's orec, the value rooted, the orec again; a bounded wait, GIL released, while another
// transaction holds the object), then the rooted word as a Python value.
// REQUIRES: in_tx(); the GIL; the object `o` kept alive by the caller.
PyObject* read_slot_tx(cd::Word o, const std::atomic<cd::Word>* s) {  // new reference
  cd::Rooted r = cd::read_slot_rooted(reinterpret_cast<const void*>(o), s);
  const cd::Word w = r.word();
  if (cd::is_small_int(w)) return PyLong_FromLongLong(cd::small_value(w));
  if (w == cd::kNull) Py_RETURN_NONE;
  if (cd::is_bool(w)) return PyBool_FromLong(cd::bool_value(w));
  if (cd::is_small_float(w)) return PyFloat_FromDouble(cd::small_float_value(w));
  // w is rooted by r: a live proxy in the table is w's own (its object cannot have been freed and
  // its address reused while rooted). r's root is then dropped by its destructor.
  if (PyObject* p = live_user_proxy(w)) return p;
  return from_rooted(w, r.take()).release().ptr();
}

// Field `s` of object `o`, of declared type `ft`, as a new reference.
PyObject* read_slot(cd::Word o, std::atomic<cd::Word>* s, TypeKind ft) {  // new reference
  if (in_tx()) return read_slot_tx(o, s);
  cd::Word v = s->load(std::memory_order_acquire);
  if (cd::is_small_int(v)) return PyLong_FromLongLong(cd::small_value(v));
  if (v == cd::kNull) Py_RETURN_NONE;
  if (cd::is_bool(v)) return PyBool_FromLong(cd::bool_value(v));
  if (cd::is_small_float(v)) return PyFloat_FromDouble(cd::small_float_value(v));
  return read_ref(s, v, ft);
}

std::atomic<cd::Word>* slot_of(cd::Word o, const cd::FieldInfo& f) {
  std::atomic<cd::Word>* s = cd::field_slot(o, f);
  if (s == nullptr)
    throw colors::CorruptHeapError("object storage lacks the slot of field '" + std::string(cd::name_view(f.name)) + "'");
  return s;
}

}  // namespace

double int_for_float_field(PyObject* value) {
  double d = PyLong_AsDouble(value);
  if (d == -1.0 && PyErr_Occurred()) {
    if (!PyErr_ExceptionMatches(PyExc_OverflowError)) throw py::error_already_set();
    PyErr_Clear();
    throw colors::OverflowError("the integer is too large for a float field");
  }
  py::object back = py::reinterpret_steal<py::object>(PyLong_FromDouble(d));
  if (!back) throw py::error_already_set();
  const int same = PyObject_RichCompareBool(back.ptr(), value, Py_EQ);
  if (same < 0) throw py::error_already_set();
  if (same == 0)
    throw colors::OverflowError("the integer " + std::string(py::str(value)) +
                                " has no exact float value for a float field (the nearest is " +
                                std::string(py::str(back)) + ")");
  return d;
}

namespace {

// The shared value to store into a field of type `kind`: Python ints become floats in float
// fields (int_for_float_field); everything else converts as anywhere else.
colors::Value field_value(PyObject* value, TypeKind kind) {
  if (kind == TypeKind::kFloat && PyLong_Check(value) && !PyBool_Check(value)) {
    const double d = int_for_float_field(value);
    ensure_attached();
    return colors::Value(d);
  }
  return to_value(value);
}

// Stores `w` into field `s` of object `o`: the write barrier, or inside a transaction libshared's
// transactional write (the object's orec taken, the old word logged, then the store).
void store_field(cd::Word o, std::atomic<cd::Word>* s, cd::Word w) {
  if (in_tx()) cd::write_slot(reinterpret_cast<const void*>(o), s, w);
  else cd::store_ref(s, w);
}

// ---- strings written last ----
//
// A str written into a field is often written again (a constant, an interned name), and making
// its shared string is an allocation (~100 ns). The shared strings made for the last exact strs
// written (of at most kStrWriteMax code points) are kept, each rooted by a pooled root slot and
// keyed by the str object, which the entry holds (so its address names it while cached): writing
// the same str object again stores the same shared string, immutable like the str. collect()
// empties the cache (drop_string_write_cache), so what only it kept is collected; the heap-pressure
// path leaves it (at most kStrWriteCacheSize strings of a few hundred bytes).
// Invariant: an entry with a non-null `str` holds a reference to it and, in `root` (a slot of the
// attachment of generation `gen`), the shared string `word` holding the str's characters.
struct StrWriteEntry {
  PyObject* str = nullptr;
  cd::Word word = cd::kNull;
  std::atomic<cd::Word>* root = nullptr;
  std::uint64_t gen = 0;
};
constexpr std::size_t kStrWriteCacheSize = 64;
constexpr Py_ssize_t kStrWriteMax = 256;
StrWriteEntry g_str_writes[kStrWriteCacheSize];

StrWriteEntry& str_write_entry(PyObject* str) {
  return g_str_writes[(reinterpret_cast<std::uintptr_t>(str) >> 4) % kStrWriteCacheSize];
}

// The shared string kept for the str `value` (a word rooted by the cache) as *w, kind kString;
// false when none is kept.
bool cached_str_word(PyObject* value, cd::Word* w, TypeKind* kind) {
  if (!PyUnicode_CheckExact(value)) return false;
  const StrWriteEntry& e = str_write_entry(value);
  if (e.str != value || e.gen != g_generation) return false;
  *w = e.word;
  *kind = TypeKind::kString;
  return true;
}

void drop_str_write(StrWriteEntry& e) {
  StrWriteEntry old = e;
  e = StrWriteEntry{};
  drop_root(old.root, old.gen);  // not if that attachment ended (its table is gone)
  Py_XDECREF(old.str);           // a str: its deallocation runs no Python code
}

void write_slot(cd::Word o, const cd::FieldInfo& f, PyObject* value) {
  std::atomic<cd::Word>* s = slot_of(o, f);
  cd::Word w;
  TypeKind kind;
  if (value == Py_None) {
    w = cd::kNull;
  } else if (PyBool_Check(value)) {
    w = cd::make_bool(value == Py_True);
  } else if (number_word(value, &w, &kind) && !(kind == TypeKind::kInteger && f.type == TypeKind::kFloat)) {
    // as it is (an int into a float field becomes a float: the general path)
  } else if (PyUnicode_CheckExact(value) && (f.type == TypeKind::kString || f.type == TypeKind::kAny)) {
    StrWriteEntry& e = str_write_entry(value);
    if (e.str == value && e.gen == g_generation) {
      w = e.word;  // rooted by the entry
    } else {
      colors::Value v = field_value(value, f.type);
      if (PyUnicode_GET_LENGTH(value) <= kStrWriteMax) {
        std::atomic<cd::Word>* r = take_root();
        cd::root_set(r, v.raw());  // v keeps it alive meanwhile
        drop_str_write(e);
        e = StrWriteEntry{Py_NewRef(value), v.raw(), r, g_generation};
      }
      store_field(o, s, v.raw());
      return;
    }
  } else {
    colors::Value v = field_value(value, f.type);
    cd::check_field_type(f, v.raw());
    store_field(o, s, v.raw());
    return;
  }
  cd::check_field_type(f, w);
  store_field(o, s, w);
}

// Shared kind of a field created by storing `value` (an attribute the class does not declare).
TypeKind value_kind_of(PyObject* v) {
  if (PyBool_Check(v)) return TypeKind::kBoolean;
  if (PyLong_Check(v)) return TypeKind::kInteger;
  if (PyFloat_Check(v)) return TypeKind::kFloat;
  if (PyUnicode_Check(v)) return TypeKind::kString;
  if (PyBytes_Check(v) || PyByteArray_Check(v)) return TypeKind::kBinary;
  if (Ref* r = ref_of(v)) {
    if (r->kind == TypeKind::kList || r->kind == TypeKind::kMap || r->kind == TypeKind::kSet) return r->kind;
  }
  return TypeKind::kAny;
}

// Adds field `name` of `kind` to object `o` unless its class has it; returns the field. An added
// field holds `initial` from the moment the class has it (add_field); the caller stores its value
// afterwards either way (a racing addition stores nothing).
// REQUIRES: `initial` fits the field and is kept alive by the caller.
const cd::FieldInfo& ensure_field(cd::Word o, std::string_view name, TypeKind kind, std::string_view class_name,
                                  cd::Word initial = cd::kNull) {
  if (const cd::FieldInfo* f = cd::find_field(cd::class_of(o), name)) return *f;
  colors::FieldSpec spec{std::string(name), kind, std::string(class_name)};
  // The version add_field switched to (or found) has the field. Another thread or process may
  // have deleted it again since: the caller's store then goes before that deletion.
  const cd::ClassRecord* to = cd::add_field(meta(), o, spec, initial);
  const cd::FieldInfo* f = cd::find_field(to, name);
  if (f == nullptr) throw colors::CorruptHeapError("class version " + class_label(to) + " lacks field '" + std::string(name) + "' it was made with");
  return *f;
}

void remove_field(cd::Word o, std::string_view name) {
  if (cd::find_field(cd::class_of(o), name) == nullptr) {
    std::string msg = "shared " + class_label(cd::class_of(o)) + " object has no field '" + std::string(name) + "'";
    PyErr_SetString(PyExc_AttributeError, msg.c_str());
    throw py::error_already_set();
  }
  try {
    cd::remove_field(meta(), o, name);
  } catch (const colors::KeyError& e) {  // deleted by another thread or process meanwhile
    PyErr_SetString(PyExc_AttributeError, e.what());
    throw py::error_already_set();
  }
}

// Checks that `value` fits a new field of `kind` before the object's class is changed.
void check_new_field_value(std::string_view name, TypeKind kind, PyObject* value) {
  check_storable(value);
  if (kind == TypeKind::kAny || kind == TypeKind::kObject || value == Py_None) return;
  TypeKind got = value_kind_of(value);
  if (kind == TypeKind::kFloat && got == TypeKind::kInteger) return;
  if (got != kind)
    throw colors::TypeMismatchError("field '" + std::string(name) + "' holds " + std::string(colors::type_name(kind)) +
                                    ", cannot store a " + std::string(Py_TYPE(value)->tp_name));
}

// ---- _FieldDescriptor: a declared field of a mapped class ----

struct FieldDescr {
  PyObject_HEAD
  PyObject* name;         // str
  PyObject* dflt;         // the private class's default, or nullptr
  PyObject* class_name;   // str: declared class of an object-typed field ("" = any)
  PyTypeObject* owner;    // the proxy class
  Py_ssize_t handle_off;  // offset of the handle slot in owner's instances
  TypeKind kind;          // declared shared type (used when the field is re-added)
  std::uint64_t gen;      // the cache below belongs to this attachment generation
  const cd::ClassRecord* cls;
  const cd::FieldInfo* info;
};

void descr_dealloc(PyObject* self) {
  auto* d = reinterpret_cast<FieldDescr*>(self);
  Py_XDECREF(d->name);
  Py_XDECREF(d->dflt);
  Py_XDECREF(d->class_name);
  Py_TYPE(self)->tp_free(self);
}

const cd::FieldInfo* descr_field(FieldDescr* d, cd::Word o) {
  const cd::ClassRecord* c = cd::class_of(o);
  if (d->gen == g_generation && d->cls == c) return d->info;
  const cd::FieldInfo* f = cd::find_field(c, utf8(d->name));
  d->gen = g_generation;
  d->cls = c;
  d->info = f;
  return f;
}

Handle* descr_handle(FieldDescr* d, PyObject* obj) {
  if (Py_TYPE(obj) == d->owner) {
    Handle* h = slot_handle(obj, d->handle_off);
    if (h != nullptr && h->gen == g_generation) return h;
  }
  Handle* h = user_handle(obj);
  if (h == nullptr) {
    std::string msg = "descriptor of field '" + std::string(utf8(d->name)) + "' used on a '" +
                      Py_TYPE(obj)->tp_name + "', which is not a shared object";
    throw colors::TypeMismatchError(msg);
  }
  return h;
}

PyObject* descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  auto* d = reinterpret_cast<FieldDescr*>(self);
  // Fast path: the object has the class version this descriptor resolved last. An unboxed scalar
  // is decoded in place; a reference goes to read_ref (the live proxy, a string or boxed float read
  // without a root, else a rooted load). Not inside a transaction: read_slot takes its path.
  if (Py_TYPE(obj) == d->owner && d->gen == g_generation && !in_tx()) {
    Handle* h = slot_handle(obj, d->handle_off);
    if (h != nullptr && h->gen == d->gen) {
      cd::Word o = h->word;
      if (cd::class_of(o) == d->cls && d->info != nullptr) {
        if (std::atomic<cd::Word>* s = cd::field_slot(o, *d->info)) {
          cd::Word v = s->load(std::memory_order_acquire);
          if (cd::is_small_int(v)) return PyLong_FromLongLong(cd::small_value(v));
          if (cd::is_small_float(v)) return PyFloat_FromDouble(cd::small_float_value(v));
          if (cd::is_bool(v)) return PyBool_FromLong(cd::bool_value(v));
          if (v == cd::kNull) Py_RETURN_NONE;
          if (PyObject* p = h->memo.hit(s, v)) return p;
          try {
            PyObject* p = read_ref(s, v, d->info->type);
            // Remembered only when it is the table's entry of v now (read_memo.hpp): a string, a
            // boxed float (never in a table: not looked up) or a proxy made without publishing it
            // is read again next time. The holder `obj` is alive (the caller holds it), and with
            // it its embedded handle.
            if (!PyUnicode_CheckExact(p) && !PyFloat_CheckExact(p) &&
                (live_proxy(v) == p || live_in(g_other_proxies, v) == p))
              h->memo.set(s, v, p);
            return p;
          } catch (...) {
            set_python_error();
            return nullptr;
          }
        }
      }
    }
  }
  try {
    cd::Word o = descr_handle(d, obj)->word;
    const cd::FieldInfo* f = descr_field(d, o);
    if (f == nullptr) {
      if (d->dflt != nullptr) return Py_NewRef(d->dflt);  // an older version: the class default
      std::string msg = "shared " + class_label(cd::class_of(o)) + " object has no field '" +
                        std::string(utf8(d->name)) + "'";
      PyErr_SetString(PyExc_AttributeError, msg.c_str());
      return nullptr;
    }
    return read_slot(o, slot_of(o, *f), f->type);
  } catch (...) {
    set_python_error();
    return nullptr;
  }
}

int descr_set(PyObject* self, PyObject* obj, PyObject* value) {
  auto* d = reinterpret_cast<FieldDescr*>(self);
  // Fast path: a small int into an integer field, a float in the immediate range into a float
  // field, or a str whose shared string is kept (cached_str_word) into a string field (or any of
  // them into an untyped one), of the version resolved last: one store, no allocation. Not inside
  // a transaction: write_slot takes its path.
  cd::Word w;
  TypeKind kind;
  if (value != nullptr && Py_TYPE(obj) == d->owner && d->gen == g_generation && !in_tx() &&
      (number_word(value, &w, &kind) || cached_str_word(value, &w, &kind))) {
    Handle* h = slot_handle(obj, d->handle_off);
    if (h != nullptr && h->gen == d->gen) {
      cd::Word o = h->word;
      const cd::FieldInfo* f = d->info;
      if (cd::class_of(o) == d->cls && f != nullptr && (f->type == kind || f->type == TypeKind::kAny)) {
        if (std::atomic<cd::Word>* s = cd::field_slot(o, *f)) {
          cd::store_ref(s, w);
          return 0;
        }
      }
    }
  }
  try {
    cd::Word o = descr_handle(d, obj)->word;
    std::string_view name = utf8(d->name);
    if (value == nullptr) {
      remove_field(o, name);
      d->cls = nullptr;
      return 0;
    }
    const cd::FieldInfo* f = descr_field(d, o);
    if (f == nullptr) {  // deleted earlier, or an older version: add it back (a new version)
      // The value is converted and checked against the declared type before the field is added,
      // so a call that raises (a str that cannot be encoded, an object of another class) changes
      // nothing.
      check_new_field_value(name, d->kind, value);
      colors::Value v = field_value(value, d->kind);  // kept alive until stored
      const std::string_view class_name = utf8(d->class_name);
      cd::FieldInfo declared{};
      declared.name = {reinterpret_cast<std::uint64_t>(name.data()), static_cast<std::uint32_t>(name.size()), 0};
      declared.type = d->kind;
      declared.class_name = {reinterpret_cast<std::uint64_t>(class_name.data()),
                             static_cast<std::uint32_t>(class_name.size()), cd::name_hash(class_name)};
      cd::check_field_type(declared, v.raw());
      f = &ensure_field(o, name, d->kind, class_name);
      meta();
      store_field(o, slot_of(o, *f), v.raw());
      return 0;
    }
    meta();
    write_slot(o, *f, value);
    return 0;
  } catch (...) {
    set_python_error();
    return -1;
  }
}

PyObject* descr_repr(PyObject* self) {
  auto* d = reinterpret_cast<FieldDescr*>(self);
  return PyUnicode_FromFormat("<shared field %U of %s>", d->name, d->owner ? d->owner->tp_name : "?");
}

PyType_Slot descr_slots[] = {
    {Py_tp_dealloc, reinterpret_cast<void*>(&descr_dealloc)},
    {Py_tp_descr_get, reinterpret_cast<void*>(&descr_get)},
    {Py_tp_descr_set, reinterpret_cast<void*>(&descr_set)},
    {Py_tp_repr, reinterpret_cast<void*>(&descr_repr)},
    {Py_tp_doc, const_cast<char*>("A declared field of a mapped class: reads and writes the shared object.")},
    {0, nullptr},
};
PyType_Spec descr_spec = {"colors_shm._colors_shm._FieldDescriptor", sizeof(FieldDescr), 0,
                          Py_TPFLAGS_DEFAULT | Py_TPFLAGS_DISALLOW_INSTANTIATION,
                          descr_slots};

// ---- attribute hooks of proxy classes: fields the class does not declare ----

bool is_dunder(std::string_view n) { return n.size() > 4 && n.substr(0, 2) == "__" && n.substr(n.size() - 2) == "__"; }

// A field of the shared object `obj` named `name` that its proxy class does not declare, read into
// *out (nullptr with a Python error when the read fails). False, with no error set, when there is
// no such field or `obj` is no usable proxy (the caller's generic lookup then reports it).
bool read_undeclared_field(PyObject* obj, PyObject* name, PyObject** out) {
  const cd::FieldInfo* f = nullptr;
  Handle* h = nullptr;
  try {
    std::string_view n = utf8(name);
    h = is_dunder(n) ? nullptr : user_handle(obj);
    f = h ? cd::find_field(cd::class_of(h->word), n) : nullptr;
  } catch (...) {
    PyErr_Clear();  // a name that is no UTF-8 string, or no usable proxy: left to the caller
    return false;
  }
  if (f == nullptr) return false;
  try {
    *out = read_slot(h->word, slot_of(h->word, *f), f->type);
  } catch (...) {
    set_python_error();
    *out = nullptr;
  }
  return true;
}

PyObject* user_getattro(PyObject* obj, PyObject* name) {
  if (PyUnicode_CheckExact(name)) {  // declared fields first: skip the generic machinery
    PyObject* d = _PyType_Lookup(Py_TYPE(obj), name);  // borrowed, no error set
    if (d != nullptr) {
      if (Py_TYPE(d) == g_descr_type) return descr_get(d, obj, nullptr);
      // A method or a plain class attribute: a shared field of the same name (`e.kind = 'x'`
      // adds one) shadows it, as an instance attribute shadows them on any Python object. Data
      // descriptors (a property) are not shadowed; user_setattro never adds a field under them.
      PyObject* r = nullptr;
      if (Py_TYPE(d)->tp_descr_set == nullptr && read_undeclared_field(obj, name, &r)) return r;
    }
  }
  PyObject* r = PyObject_GenericGetAttr(obj, name);
  if (r != nullptr || !PyErr_ExceptionMatches(PyExc_AttributeError) || !PyUnicode_Check(name)) return r;
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  try {
    std::string_view n = utf8(name);
    Handle* h = is_dunder(n) ? nullptr : user_handle(obj);
    const cd::FieldInfo* f = h ? cd::find_field(cd::class_of(h->word), n) : nullptr;
    if (f == nullptr) {
      PyErr_Restore(et, ev, tb);
      return nullptr;
    }
    // Cleared, not just released: read_slot may throw (a transaction's conflict), and the handler
    // below releases what is left.
    Py_CLEAR(et);
    Py_CLEAR(ev);
    Py_CLEAR(tb);
    return read_slot(h->word, slot_of(h->word, *f), f->type);
  } catch (...) {
    Py_XDECREF(et);
    Py_XDECREF(ev);
    Py_XDECREF(tb);
    set_python_error();
    return nullptr;
  }
}

int user_setattro(PyObject* obj, PyObject* name, PyObject* value) {
  if (!PyUnicode_Check(name)) return PyObject_GenericSetAttr(obj, name, value);
  PyObject* d = _PyType_Lookup(Py_TYPE(obj), name);  // borrowed, no error set
  if (d != nullptr && Py_TYPE(d) == g_descr_type) return descr_set(d, obj, value);
  if (d != nullptr && Py_TYPE(d)->tp_descr_set != nullptr) return PyObject_GenericSetAttr(obj, name, value);
  try {
    std::string_view n = utf8(name);
    if (is_dunder(n)) return PyObject_GenericSetAttr(obj, name, value);
    cd::Word o = user_handle(obj)->word;
    if (value == nullptr) {
      remove_field(o, n);
      return 0;
    }
    const cd::FieldInfo* f = cd::find_field(cd::class_of(o), n);
    if (f == nullptr) {
      // The value goes in with the field, so that no reader sees the field without it (null).
      check_storable(value);
      const TypeKind kind = value_kind_of(value);
      colors::Value v = field_value(value, kind);  // converted (and kept alive) first
      f = &ensure_field(o, n, kind, "", v.raw());
    }
    meta();
    write_slot(o, *f, value);  // also when this call added it: a racing addition stored nothing
    return 0;
  } catch (...) {
    set_python_error();
    return -1;
  }
}

// ---- reflection: SharedClass / SharedField ----

struct PyClass {
  colors::Class c;
  std::uint64_t gen;
  const colors::Class& get() const {
    if (gen != g_generation || !colors::has_segment())
      throw colors::NotAttachedError("this SharedClass belongs to an attachment that was closed by detach()");
    return c;
  }
};

struct PyField {
  colors::FieldDesc f;
  std::uint64_t gen;
};

PyClass wrap_class(const colors::Class& c) { return PyClass{c, g_generation}; }

}  // namespace

// ---- entry points used by values.cpp ----

void drop_string_write_cache() {
  for (StrWriteEntry& e : g_str_writes) {
    if (e.str != nullptr) drop_str_write(e);
  }
}

void set_python_error() {
  try {
    throw;
  } catch (py::error_already_set& e) {
    e.restore();
  } catch (const py::builtin_exception& e) {
    e.set_error();
  } catch (const colors::Error& e) {
    raise_colors_error(e);
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
  } catch (...) {
    PyErr_SetString(PyExc_RuntimeError, "unknown C++ exception in colors_shm");
  }
}

bool user_value_of(py::handle obj, colors::Value* out) {
  Handle* h = user_handle(obj.ptr());
  if (h == nullptr) return false;
  // Its object goes somewhere shared (or is held by a Value beyond the scope): root it first.
  if (out != nullptr && h->scope != nullptr) promote_handle(h);
  if (out != nullptr) *out = colors::Value::from_raw(h->word);  // a root of its own; the handle keeps it alive meanwhile
  return true;
}

py::object wrap_user_object(colors::Value&& v, bool* generic) {
  std::atomic<cd::Word>* root = nullptr;  // v keeps the object alive; a new proxy takes a root of its own
  PyObject* p = user_proxy(v.raw(), &root, generic);
  if (*generic) return py::object();
  return py::reinterpret_steal<py::object>(p);
}

PyObject* borrowed_user_proxy(std::uint64_t w, bool* generic) {
  ScopeState* sc = open_scope();
  if (sc == nullptr) throw colors::InvalidArgumentError("borrowed_user_proxy outside a read scope");
  std::atomic<cd::Word>* none = nullptr;
  return user_proxy(w, &none, generic, false, sc);
}

bool in_read_scope_here() { return open_scope() != nullptr; }

std::uint64_t read_scope_epoch() {
  const ScopeState* s = open_scope();
  return s == nullptr ? 0 : s->epoch;
}

void require_read_scope_epoch(std::uint64_t epoch) {
  const ScopeState* s = open_scope();
  if (s == nullptr || s->epoch != epoch) scope_ended_meanwhile();
}

std::size_t borrowed_count() {
  ScopeState* s = open_scope();
  return s == nullptr ? 0 : s->borrowed.size();
}

void read_scope_enter() {
  ensure_attached();
  ScopeState& s = thread_scope_state();
  if (s.depth == 0) {
    s.native.emplace();  // NotAttachedError; InvalidArgumentError inside a transaction
    ++g_open_scopes;
    s.gen = g_generation;
    ++s.epoch;
  }
  ++s.depth;
}

void read_scope_exit() {
  ScopeState* s = t_scope;
  if (s == nullptr || s->depth == 0) throw colors::InvalidArgumentError("no read scope is open on this thread");
  if (--s->depth != 0) return;
  // Promote on escape: every handle still listed is a live proxy. A failure (no root slot to be
  // had) leaves that handle and the rest unusable, never unkept, and is raised after the scope ended.
  std::exception_ptr failure;
  while (!s->borrowed.empty()) {
    Handle* h = s->borrowed.back();
    if (failure) {
      unlist(h);
      make_stale(h);
      continue;
    }
    try {
      promote_handle(h);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  s->native.reset();
  --g_open_scopes;
  if (failure) std::rethrow_exception(failure);
}

PyObject* live_user_proxy(std::uint64_t w) {
  PyObject* p = live_proxy(w);
  return p != nullptr ? Py_NewRef(p) : nullptr;
}

py::object from_rooted(std::uint64_t w, std::atomic<std::uint64_t>* root, bool absent) {
  if (cd::is_ref(w) && cd::class_of(w)->kind == TypeKind::kObject) {
    bool generic = false;
    std::uint64_t gen = g_generation;
    PyObject* p;
    try {
      p = user_proxy(w, &root, &generic, absent);  // takes `root` over when it makes a proxy
    } catch (...) {
      drop_root(root, gen);
      throw;
    }
    if (!generic) {
      drop_root(root, gen);  // a live proxy was returned: the caller's root is not needed
      return py::reinterpret_steal<py::object>(p);
    }
  }
  return from_value(colors::Value::adopt_root(w, root));
}

py::object py_of(cd::Rooted&& r) {
  const cd::Word w = r.word();
  if (cd::is_ref(w) && !r.current())
    throw colors::NotAttachedError("detach() ran while the values were being read: they belong to the closed attachment");
  return from_rooted(w, r.take());
}

void forget_user_proxies() {
  g_proxies.clear();
  g_other_proxies.clear();
  retire_layouts();
  clear_mappings();
}

// ---- the proxy cache (proxy_cache.hpp) ----
// Entries may be stale (made before a detach that did not go through the binding, e.g. a server
// that died): such a proxy's handle is of an older generation, so releasing it touches neither
// table nor root, and relieve_proxy_cache skips it.

std::size_t proxy_cache_capacity() { return g_proxy_cache.capacity(); }

std::vector<ProxyCache::Entry> take_proxy_cache(std::size_t capacity) { return g_proxy_cache.take(capacity); }

// Heap pressure (libshared's hook, called on a thread whose allocation found the heap full after
// collector cycles): every cached proxy that nothing but the cache holds drops its root, so that
// the cycles libshared runs next can free its object. Such a proxy is unreachable from Python:
// its only reference is the cache's and no weak reference to it exists (an identity table's is
// borrowed, and this binding holds no borrowed proxy across an allocation: every table lookup is
// followed at once by its Py_NewRef). It leaves its identity table and becomes stale (generation
// 0: any use would raise NotAttachedError), and dies when the ring overwrites or empties it.
// Runs no Python code and raises nothing: it may run inside any allocation of the binding.
// REQUIRES: the GIL.
void relieve_proxy_cache() noexcept {
  if (g_proxies_gen != g_generation || cd::current_meta_or_null() == nullptr) return;
  g_proxy_cache.for_each([](ProxyCache::Entry& e) {
    PyObject* p = e.proxy;
    auto* h = reinterpret_cast<Handle*>(e.handle);
    if (Py_REFCNT(p) != 1 || h->gen != g_generation || h->scope != nullptr) return;
    if (Py_TYPE(p)->tp_weaklistoffset > 0 && *PyObject_GET_WEAKREFS_LISTPTR(p) != nullptr) return;
    // Roots are emptied here and kept as spares, never released to libshared (libshared's hook
    // rules, heap.hpp: the allocating thread may hold roots.cpp's mutex).
    if (h->other) {
      std::atomic<cd::Word>* r = take_unshared_ref_root(p);
      if (r == nullptr) return;  // its _Ref is held elsewhere too (reachable), or holds no root
      g_other_proxies.erase(h->word, p);
      cd::root_clear(r);  // as root_release: the deletion barrier when the collector needs it
      keep_spare_root(r);
    } else {
      if (h->root == nullptr) return;
      g_proxies.erase(h->word, p);
      cd::root_clear(h->root);
      keep_spare_root(h->root);
      h->root = nullptr;
    }
    make_stale(h);
  });
}

std::size_t user_cache_size() {
  return g_proxies_gen == g_generation ? g_proxies.size() + g_other_proxies.size() : 0;
}

PyObject* live_other_proxy(std::uint64_t w) {
  PyObject* p = live_in(g_other_proxies, w);
  return p != nullptr ? Py_NewRef(p) : nullptr;
}

void track_other_proxy(std::uint64_t w, PyObject* proxy, Py_ssize_t handle_off) {
  sync_proxies_gen();
  g_other_proxies.reserve_one();  // the insert below cannot fail then
  Handle* h = new_handle();       // not a GC type: no Python code runs here
  h->word = w;
  h->other = true;
  h->proxy = proxy;
  PyObject** slot = reinterpret_cast<PyObject**>(reinterpret_cast<char*>(proxy) + handle_off);
  Py_XSETREF(*slot, reinterpret_cast<PyObject*>(h));  // steals h; the slot was empty (a new proxy)
  g_other_proxies.insert(w, proxy);
  g_proxy_cache.keep(proxy, reinterpret_cast<PyObject*>(h));  // last: its eviction runs Python code
  start_pressure_watcher();
}

TypeKind kind_for_value(PyObject* v) { return value_kind_of(v); }

void hide_handle_slot(PyTypeObject* cls, Py_ssize_t off) { hide_slot(cls, off); }

const UserLayout& user_layout(PyTypeObject* type, const std::vector<std::pair<std::string, TypeKind>>& extras) {
  if (g_layouts_gen != g_generation) {
    retire_layouts();
    g_layouts_gen = g_generation;
  }
  auto it = g_layouts.find(type);
  if (it == g_layouts.end()) {
    if (g_spec_fn == nullptr) throw colors::InvalidArgumentError("colors_shm._classes is not loaded");
    py::tuple spec = py::reinterpret_borrow<py::object>(g_spec_fn)(py::handle(reinterpret_cast<PyObject*>(type)));
    TypeEntry e;
    e.type = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(type));
    e.name = spec[0].cast<std::string>();
    for (py::handle item : spec[1]) {
      py::tuple t = py::reinterpret_borrow<py::tuple>(item);
      e.declared.push_back({t[0].cast<std::string>(), static_cast<TypeKind>(t[1].cast<int>()), t[2].cast<std::string>()});
    }
    it = g_layouts.emplace(type, std::make_unique<TypeEntry>(std::move(e))).first;
  }
  TypeEntry& e = *it->second;
  std::vector<std::string> key;
  for (auto& [n, k] : extras) key.push_back(n + '\x01' + std::to_string(static_cast<int>(k)));
  auto lit = e.layouts.find(key);
  if (lit != e.layouts.end()) return lit->second;
  std::vector<colors::FieldSpec> specs = e.declared;
  for (auto& [n, k] : extras) specs.push_back({n, k, ""});
  UserLayout l;
  l.cls = colors::define_class(e.name, specs);
  for (auto& f : specs) {
    l.infos.push_back(cd::find_field(l.cls.record(), f.name));
    PyObject* name = PyUnicode_FromStringAndSize(f.name.data(), static_cast<Py_ssize_t>(f.name.size()));
    if (name == nullptr) throw py::error_already_set();
    PyUnicode_InternInPlace(&name);  // attribute names are interned: compare by pointer first
    l.names.push_back(py::reinterpret_steal<py::object>(name));
  }
  l.declared = e.declared.size();
  return e.layouts.emplace(std::move(key), std::move(l)).first->second;
}

const UserLayout* cached_user_layout(PyTypeObject* type) {
  if (g_layouts_gen != g_generation) return nullptr;
  auto it = g_layouts.find(type);
  if (it == g_layouts.end()) return nullptr;
  auto lit = it->second->layouts.find(std::vector<std::string>{});
  return lit == it->second->layouts.end() ? nullptr : &lit->second;
}

void init_classes(py::module_& m) {
  g_handle_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&handle_spec));
  g_descr_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&descr_spec));
  g_scope_end_type = reinterpret_cast<PyTypeObject*>(PyType_FromSpec(&scope_end_spec));
  if (g_handle_type == nullptr || g_descr_type == nullptr || g_scope_end_type == nullptr) throw py::error_already_set();
  m.add_object("_FieldDescriptor", py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(g_descr_type)));
  g_no_default = PyObject_CallNoArgs(reinterpret_cast<PyObject*>(&PyBaseObject_Type));
  m.add_object("_NO_DEFAULT", py::reinterpret_borrow<py::object>(g_no_default));

  m.def("_type_kinds", [] {
    py::list out;
    for (int k = 0; k <= static_cast<int>(TypeKind::kObject); ++k)
      out.append(py::make_tuple(std::string(colors::type_name(static_cast<TypeKind>(k))), k));
    return out;
  });

  // Called once, by colors_shm._classes at import.
  m.def("_register_classes", [](py::object instance_base, py::object resolver, py::object spec_fn) {
    if (g_instance_base != nullptr) throw colors::InvalidArgumentError("_register_classes: already registered");
    if (!PyType_Check(instance_base.ptr()) || !PyCallable_Check(resolver.ptr()) || !PyCallable_Check(spec_fn.ptr()))
      throw py::type_error("_register_classes(instance_base: type, resolver: callable, spec: callable)");
    g_instance_base = instance_base.release().ptr();
    g_resolver = resolver.release().ptr();
    g_spec_fn = spec_fn.release().ptr();
  });

  // The registry changed: shared classes may now map to other Python classes (and Python classes
  // to other shared names).
  m.def("_forget_class_mappings", [] {
    clear_mappings();
    retire_layouts();
  });

  // Turns the freshly made proxy class `cls` into a user proxy class: hides its handle slot and
  // installs a descriptor per declared field and the attribute hooks.
  // Validates everything before changing the class: a class that is not a fresh proxy class
  // (a heap type deriving from SharedInstance, with its own `_colors_ref` object slot, not yet
  // installed) or a malformed field list is refused with TypeError / InvalidArgumentError.
  m.def("_install_user_class", [](py::object cls, py::list fields, bool own_setattr) {
    if (!PyType_Check(cls.ptr())) throw py::type_error("_install_user_class: cls must be a class");
    auto* tp = reinterpret_cast<PyTypeObject*>(cls.ptr());
    if (g_instance_base == nullptr || !(tp->tp_flags & Py_TPFLAGS_HEAPTYPE) ||
        !PyType_IsSubtype(tp, reinterpret_cast<PyTypeObject*>(g_instance_base)) || g_user_types.count(tp) != 0)
      throw colors::InvalidArgumentError("_install_user_class: not a new proxy class (a class deriving from SharedInstance)");
    if (!plain_python_class(tp))
      throw py::type_error(std::string("'") + tp->tp_name + "' derives from an extension type: it cannot be a shared user class");
    // The handle's room is added to the class's size below. A subclass made while the class was
    // being made (by __init_subclass__ or a metaclass) was laid out on the smaller size: its own
    // slots would lie where every proxy's handle goes, and `__class__` assignment would take it
    // for the same layout. (Subclasses made after this call start past the handle.)
    py::list subclasses = py::reinterpret_borrow<py::object>(reinterpret_cast<PyObject*>(&PyType_Type))
                              .attr("__subclasses__")(cls);
    if (!subclasses.empty())
      throw colors::InvalidArgumentError(std::string("'") + tp->tp_name +
                                         "' was subclassed while its proxy class was being made: it cannot be a shared user class");
    PyObject* member = PyDict_GetItemString(tp->tp_dict, "_colors_ref");  // borrowed
    if (member == nullptr || Py_TYPE(member) != &PyMemberDescr_Type ||
        reinterpret_cast<PyMemberDescrObject*>(member)->d_member->type != T_OBJECT_EX ||
        reinterpret_cast<PyMemberDescrObject*>(member)->d_common.d_type != tp)
      throw colors::InvalidArgumentError("_install_user_class: the class lacks its _colors_ref slot");
    Py_ssize_t off = reinterpret_cast<PyMemberDescrObject*>(member)->d_member->offset;
    std::vector<py::tuple> checked;
    for (py::handle item : fields) {
      if (!PyTuple_Check(item.ptr()) || PyTuple_GET_SIZE(item.ptr()) != 4 ||
          !PyUnicode_Check(PyTuple_GET_ITEM(item.ptr(), 0)) || !PyUnicode_Check(PyTuple_GET_ITEM(item.ptr(), 2)))
        throw py::type_error("_install_user_class: fields must be (name: str, kind: int, class_name: str, default) tuples");
      kind_arg(PyTuple_GET_ITEM(item.ptr(), 1));
      checked.push_back(py::reinterpret_borrow<py::tuple>(item));
    }
    hide_slot(tp, off);
    // The slot's member descriptor leaves the class. Code that ran while the class was made may
    // hold it; it is made inert (reads None, refuses writes), so the handle can never be read out
    // (and kept past its proxy), replaced or deleted through it.
    static PyMemberDef inert{"_colors_hidden", T_NONE, 0, READONLY, nullptr};
    reinterpret_cast<PyMemberDescrObject*>(member)->d_member = &inert;
    if (PyObject_DelAttrString(cls.ptr(), "_colors_ref") != 0) throw py::error_already_set();
    for (const py::tuple& t : checked) {
      auto* d = reinterpret_cast<FieldDescr*>(g_descr_type->tp_alloc(g_descr_type, 0));
      if (d == nullptr) throw py::error_already_set();
      py::object holder = py::reinterpret_steal<py::object>(reinterpret_cast<PyObject*>(d));
      d->name = py::str(t[0]).release().ptr();
      d->kind = kind_arg(t[1].ptr());
      d->class_name = py::str(t[2]).release().ptr();
      py::object dflt = t[3];
      d->dflt = dflt.ptr() == g_no_default ? nullptr : dflt.release().ptr();
      d->owner = tp;
      d->handle_off = off;
      if (PyObject_SetAttr(cls.ptr(), d->name, holder.ptr()) != 0) throw py::error_already_set();
    }
    tp->tp_getattro = &user_getattro;
    // A class with its own __setattr__/__delattr__ keeps them (a frozen dataclass stays frozen);
    // they store declared fields through the generic path, which finds the field descriptors.
    // Replacing them would bypass the class's checks, and make object.__setattr__ in its
    // __init__ refuse the proxy (CPython's check against skipping a C-level override).
    if (!own_setattr) tp->tp_setattro = &user_setattro;
    // Room for the handle inside each instance (see Handle): after everything the class lays
    // out, so slots of subclasses made later go after it. Instances made before this line (by
    // code run while the class was made) are smaller; they never get a handle (user_proxy writes
    // one only into an instance it allocates).
    const Py_ssize_t align = alignof(Handle);
    const Py_ssize_t embed = (tp->tp_basicsize + align - 1) / align * align;
    tp->tp_basicsize = embed + static_cast<Py_ssize_t>(sizeof(Handle));
    PyType_Modified(tp);
    Py_INCREF(tp);  // proxy classes live as long as the process
    g_user_types[tp] = UserType{off, embed};
  });

  // SharedInstance.__setattr__/__delattr__: the proxy's own attribute store, for classes whose
  // __setattr__ delegates to super().
  auto proxy_or_throw = [](py::handle obj, py::handle name) {
    if (!PyUnicode_Check(name.ptr())) throw py::type_error("attribute name must be a str");
    if (user_handle(obj.ptr()) == nullptr)
      throw py::type_error(std::string("'") + Py_TYPE(obj.ptr())->tp_name + "' object is no shared user object");
  };
  m.def("_shared_setattr", [proxy_or_throw](py::handle obj, py::handle name, py::handle value) {
    proxy_or_throw(obj, name);
    if (user_setattro(obj.ptr(), name.ptr(), value.ptr()) != 0) throw py::error_already_set();
  });
  m.def("_shared_delattr", [proxy_or_throw](py::handle obj, py::handle name) {
    proxy_or_throw(obj, name);
    if (user_setattro(obj.ptr(), name.ptr(), nullptr) != 0) throw py::error_already_set();
  });

  m.def("_is_plain_class", [](py::handle cls) {
    return PyType_Check(cls.ptr()) && plain_python_class(reinterpret_cast<PyTypeObject*>(cls.ptr()));
  }, "True if `cls` and its layout bases up to object are classes made by `class` (no extension type).");

  m.def("_field_names", [](py::handle obj) {
    py::list out;
    colors::Value v;
    if (user_value_of(obj, &v)) {
      for (const auto& f : colors::Class(cd::class_of(v.raw())).fields()) out.append(py::str(f.name));
    }
    return out;
  });

  m.def("_new_object", [](const std::string& name, py::list fields) {
    std::vector<colors::FieldSpec> specs;
    for (py::handle item : fields) {
      PyObject* t = item.ptr();
      if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(t, 0)) ||
          !PyUnicode_Check(PyTuple_GET_ITEM(t, 2)))
        throw py::type_error("_new_object: fields must be (name: str, kind: int, class_name: str) tuples");
      specs.push_back({std::string(utf8(PyTuple_GET_ITEM(t, 0))), kind_arg(PyTuple_GET_ITEM(t, 1)),
                       std::string(utf8(PyTuple_GET_ITEM(t, 2)))});
    }
    ensure_attached();
    return from_value(colors::new_object(colors::define_class(name, specs)));
  });

  sealed(py::class_<PyField>(m, "SharedField", "One field of a shared class version: its name and shared type."))
      .def_property_readonly("name", [](const PyField& f) { return f.f.name; })
      .def_property_readonly("type", [](const PyField& f) { return std::string(colors::type_name(f.f.type)); },
                             "The shared type: 'any', 'integer', 'float', 'boolean', 'string', 'binary', "
                             "'list', 'set', 'map' or 'object'.")
      .def_property_readonly("class_name", [](const PyField& f) -> py::object {
            if (f.f.type != TypeKind::kObject || f.f.class_name.empty()) return py::none();
            return py::str(f.f.class_name);
          }, "For object fields: the class its values must have (None: any user object).")
      .def_property_readonly("slot", [](const PyField& f) { return f.f.slot; })
      .def_property_readonly("shared_class", [](const PyField& f) -> py::object {
            if (f.gen != g_generation) throw colors::NotAttachedError("this SharedField belongs to a closed attachment");
            if (f.f.type != TypeKind::kObject || f.f.class_name.empty()) return py::none();
            auto vs = colors::class_versions(f.f.class_name);
            if (vs.empty()) return py::none();
            return py::cast(wrap_class(vs.back()));
          }, "The newest version of the class of an object field (None if untyped or not defined yet).")
      .def("__repr__", [](const PyField& f) {
            std::string t(colors::type_name(f.f.type));
            if (f.f.type == TypeKind::kObject && !f.f.class_name.empty()) t = f.f.class_name;
            return "<SharedField " + f.f.name + ": " + t + ">";
          });

  sealed(py::class_<PyClass>(m, "SharedClass",
                      "One version of a shared class (or a builtin class): name, version, fields and the "
                      "other versions of the name. Classes are immutable; schema changes make new versions."))
      .def_property_readonly("name", [](const PyClass& c) { return c.get().name(); })
      .def_property_readonly("version", [](const PyClass& c) { return c.get().version(); })
      .def_property_readonly("kind", [](const PyClass& c) { return std::string(colors::type_name(c.get().kind())); })
      .def_property_readonly("fields", [](const PyClass& c) {
            py::list out;
            for (auto& f : c.get().fields()) out.append(py::cast(PyField{f, g_generation}));
            return py::tuple(out);
          })
      .def_property_readonly("field_names", [](const PyClass& c) {
            py::list out;
            for (auto& f : c.get().fields()) out.append(py::str(f.name));
            return py::tuple(out);
          })
      .def("field", [](const PyClass& c, const std::string& name) {
            for (auto& f : c.get().fields())
              if (f.name == name) return PyField{f, g_generation};
            throw colors::KeyError("class " + c.get().name() + " version " + std::to_string(c.get().version()) +
                                   " has no field '" + name + "'");
          }, py::arg("name"))
      .def_property_readonly("versions", [](const PyClass& c) {
            py::list out;
            for (auto& v : c.get().versions()) out.append(py::cast(wrap_class(v)));
            return py::tuple(out);
          }, "Every version of this class name, oldest first (this one included).")
      .def_property_readonly("latest", [](const PyClass& c) { return wrap_class(c.get().versions().back()); })
      .def("__eq__", [](const PyClass& a, py::object b) {
            if (!py::isinstance<PyClass>(b)) return false;
            return a.gen == b.cast<const PyClass&>().gen && a.c == b.cast<const PyClass&>().c;
          })
      .def("__hash__", [](const PyClass& c) { return std::hash<const void*>()(c.c.record()); })
      .def("__repr__", [](const PyClass& c) {
            const colors::Class& k = c.get();
            std::string s = "<SharedClass " + k.name() + " v" + std::to_string(k.version());
            if (k.kind() == TypeKind::kObject) {
              s += " (";
              bool first = true;
              for (auto& f : k.fields()) {
                s += (first ? "" : ", ") + f.name + ": ";
                s += (f.type == TypeKind::kObject && !f.class_name.empty()) ? f.class_name
                                                                            : std::string(colors::type_name(f.type));
                first = false;
              }
              s += ")";
            }
            return s + ">";
          });

  m.def("shared_type", [](py::handle obj) {
    ensure_attached();
    colors::Value v;
    if (!user_value_of(obj, &v)) {
      if (obj.is_none()) throw colors::TypeMismatchError("None has no shared class");
      v = to_value(obj);
    }
    return wrap_class(colors::class_of(v));
  }, py::arg("obj"));
}

}  // namespace colors_py
