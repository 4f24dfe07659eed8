// The primitive operations of shared lists, maps and sets. org.colors.SharedList/SharedMap/SharedSet
// build the full java.util contracts on these. Index errors of lists are raised as
// java.lang.IndexOutOfBoundsException (the java.util.List contract), with Java's own message.
#include <type_traits>
#include <vector>

#include "jni_common.hpp"
#include "containers.hpp"
#include "segment.hpp"
#include "word.hpp"

namespace colors_jni {

namespace {

namespace cd = colors::detail;

colors::Value adopt(cd::Rooted&& r) {
  cd::Word w = r.word();
  return colors::Value::adopt_root(w, r.take());
}

#define N(name, sig, fn) \
  { const_cast<char*>(name), const_cast<char*>(sig), reinterpret_cast<void*>(&fn) }

[[noreturn]] void index_error(std::int64_t i, std::size_t n) {
  throw JavaThrow{g.ioobe_cls, "Index " + std::to_string(i) + " out of bounds for length " + std::to_string(n)};
}

// Runs one list operation at position i, turning its IndexError (raised under the list's lock,
// containers.hpp) into IndexOutOfBoundsException. The size in the message is read afterwards.
template <typename F>
auto at_index(colors::List& l, jint i, F&& op) {
  if (i < 0) index_error(i, l.size());
  try {
    return op(static_cast<std::size_t>(i));
  } catch (const colors::IndexError&) {
    index_error(i, l.size());
  }
}

jint JNICALL n_size(JNIEnv* env, jclass, jobject h) {
  return guarded<jint>(env, 0, [&]() -> jint {
    JValue* r = jvalue_of(env, h);
    std::size_t n;
    switch (r->kind) {
      case colors::TypeKind::kList: n = r->list().size(); break;
      case colors::TypeKind::kMap: n = r->map().size(); break;
      case colors::TypeKind::kSet: n = r->set().size(); break;
      default: throw colors::TypeMismatchError("this shared object has no size");
    }
    return n > 0x7fffffff ? 0x7fffffff : static_cast<jint>(n);
  });
}

void JNICALL n_clear(JNIEnv* env, jclass, jobject h) {
  guarded_void(env, [&] {
    JValue* r = jvalue_of(env, h);
    switch (r->kind) {
      case colors::TypeKind::kList: r->list().clear(); break;
      case colors::TypeKind::kMap: r->map().clear(); break;
      case colors::TypeKind::kSet: r->set().clear(); break;
      default: throw colors::TypeMismatchError("this shared object is not a container");
    }
  });
}

// ---- list ----

jobject JNICALL n_list_get(JNIEnv* env, jclass, jobject h, jint i) {
  return guarded<jobject>(env, nullptr, [&] {
    colors::List& l = jvalue_of(env, h)->list();
    colors::Value v;
    try {
      v = l.get(static_cast<std::size_t>(static_cast<std::int64_t>(i)));  // negative: huge, refused
    } catch (const colors::IndexError&) {
      index_error(i, l.size());
    }
    return to_java(env, std::move(v));
  });
}

jobject JNICALL n_list_set(JNIEnv* env, jclass, jobject h, jint i, jint tag, jlong bits, jobject obj) {
  return guarded<jobject>(env, nullptr, [&] {
    colors::List& l = jvalue_of(env, h)->list();
    Arg v = decode(env, tag, bits, obj);
    cd::Rooted old = at_index(l, i, [&](std::size_t at) { return cd::list_exchange(l.raw(), at, v.get().raw()); });
    return to_java(env, adopt(std::move(old)));
  });
}

void JNICALL n_list_add(JNIEnv* env, jclass, jobject h, jint tag, jlong bits, jobject obj) {
  guarded_void(env, [&] {
    colors::List& l = jvalue_of(env, h)->list();
    Arg v = decode(env, tag, bits, obj);
    l.append(v.get());
  });
}

void JNICALL n_list_insert(JNIEnv* env, jclass, jobject h, jint i, jint tag, jlong bits, jobject obj) {
  guarded_void(env, [&] {
    colors::List& l = jvalue_of(env, h)->list();
    Arg v = decode(env, tag, bits, obj);
    at_index(l, i, [&](std::size_t at) { l.insert(at, v.get()); });
  });
}

jobject JNICALL n_list_remove(JNIEnv* env, jclass, jobject h, jint i) {
  return guarded<jobject>(env, nullptr, [&] {
    colors::List& l = jvalue_of(env, h)->list();
    return to_java(env, at_index(l, i, [&](std::size_t at) { return l.erase(at); }));
  });
}

// Removes the element at i if it still equals the value (language-neutral equality: identity for
// shared objects); returns whether it did (false for any i out of range).
jboolean JNICALL n_list_remove_if(JNIEnv* env, jclass, jobject h, jint i, jint tag, jlong bits, jobject obj) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    colors::List& l = jvalue_of(env, h)->list();
    Arg v = decode(env, tag, bits, obj);
    if (i < 0) return JNI_FALSE;
    return cd::list_erase_if(l.raw(), static_cast<std::size_t>(i), v.get().raw()) ? JNI_TRUE : JNI_FALSE;
  });
}

jobjectArray JNICALL n_list_items(JNIEnv* env, jclass, jobject h) {
  return guarded<jobjectArray>(env, nullptr, [&] { return to_java_array(env, jvalue_of(env, h)->list().items()); });
}

// The elements, for an operation that writes a result computed from them back (sort,
// replaceAll): taken once no transaction holds the list (cd::TxAccess::kReadForUpdate), so that
// a rollback never takes back what they read after it was written back.
// The elements, for an operation that writes a result computed from them back with
// n_list_replace_if; version[0] receives the list's version.
jobjectArray JNICALL n_list_items_for_update(JNIEnv* env, jclass, jobject h, jlongArray version) {
  return guarded<jobjectArray>(env, nullptr, [&] {
    if (version == nullptr || env->GetArrayLength(version) < 1) throw colors::InvalidArgumentError("no version slot");
    std::uint64_t v = 0;
    std::vector<colors::Value> items;
    for (cd::Rooted& r : cd::list_snapshot(jvalue_of(env, h)->list().raw(), cd::TxAccess::kReadForUpdate, &v))
      items.push_back(adopt(std::move(r)));
    const jlong jv = static_cast<jlong>(v);
    env->SetLongArrayRegion(version, 0, 1, &jv);
    return to_java_array(env, std::move(items));
  });
}

// The elements of an all-integer (all-number) list as a long[] (double[]) in one call: no boxing,
// no object per element. Unboxed words are decoded in place; boxed ones are read through a
// rooted load. TypeMismatchError names the first element of another kind.
template <typename T, typename Decode>
std::vector<T> list_numbers(colors::List& l, const char* want, Decode decode) {
  std::vector<cd::Rooted> items = cd::list_snapshot(l.raw());  // one instant of the list
  std::vector<T> out;
  out.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    cd::Word w = items[i].word();
    T x;
    if (std::is_integral_v<T> && cd::is_small_int(w)) {
      x = static_cast<T>(cd::small_value(w));
    } else if (std::is_floating_point_v<T> && cd::is_small_float(w)) {
      x = static_cast<T>(cd::small_float_value(w));
    } else {
      colors::Value v = adopt(std::move(items[i]));  // a boxed integer or float
      if (!decode(v, &x))
        throw colors::TypeMismatchError("element " + std::to_string(i) + " of the shared list is a " +
                                        std::string(colors::type_name(v.kind())) + ", not " + want);
    }
    out.push_back(x);
  }
  return out;
}

jlongArray JNICALL n_list_longs(JNIEnv* env, jclass, jobject h) {
  return guarded<jlongArray>(env, nullptr, [&]() -> jlongArray {
    auto v = list_numbers<jlong>(jvalue_of(env, h)->list(), "an integer", [](const colors::Value& x, jlong* out) {
      if (x.kind() != colors::TypeKind::kInteger) return false;
      *out = x.as_int();
      return true;
    });
    jlongArray a = env->NewLongArray(static_cast<jsize>(v.size()));
    if (a != nullptr) env->SetLongArrayRegion(a, 0, static_cast<jsize>(v.size()), v.data());
    return a;
  });
}

jdoubleArray JNICALL n_list_doubles(JNIEnv* env, jclass, jobject h) {
  return guarded<jdoubleArray>(env, nullptr, [&]() -> jdoubleArray {
    auto v = list_numbers<jdouble>(jvalue_of(env, h)->list(), "a number", [](const colors::Value& x, jdouble* out) {
      colors::TypeKind k = x.kind();
      if (k == colors::TypeKind::kFloat) {
        *out = x.as_float();
        return true;
      }
      if (k == colors::TypeKind::kInteger) {  // exact conversions only, as Codec.toDouble
        std::int64_t i = x.as_int();
        *out = static_cast<jdouble>(i);
        if (*out >= 0x1p63 || static_cast<std::int64_t>(*out) != i)
          throw colors::OverflowError("the shared integer " + std::to_string(i) +
                                      " has no exact double; read it as a long");
        return true;
      }
      return false;
    });
    jdoubleArray a = env->NewDoubleArray(static_cast<jsize>(v.size()));
    if (a != nullptr) env->SetDoubleArrayRegion(a, 0, static_cast<jsize>(v.size()), v.data());
    return a;
  });
}

// Index of the first (last) element equal to the value under the language-neutral equality, -1.
jint JNICALL n_list_index_of(JNIEnv* env, jclass, jobject h, jint tag, jlong bits, jobject obj, jboolean last) {
  return guarded<jint>(env, -1, [&]() -> jint {
    colors::List& l = jvalue_of(env, h)->list();
    Arg v = decode(env, tag, bits, obj);
    std::vector<colors::Value> items = l.items();
    const jint n = static_cast<jint>(items.size());
    if (last) {
      for (jint i = n - 1; i >= 0; --i)
        if (items[static_cast<std::size_t>(i)].equals(v.get())) return i;
    } else {
      for (jint i = 0; i < n; ++i)
        if (items[static_cast<std::size_t>(i)].equals(v.get())) return i;
    }
    return -1;
  });
}

// Values encoded as Codec's (tag, bits, obj) arrays, each decoded (and every one checked: a lone
// surrogate, a proxy of a closed attachment throw here) before the caller changes anything.
// `words` gets their words, kept alive by the returned Args.
std::vector<Arg> decode_all(JNIEnv* env, jintArray tags, jlongArray bits, jobjectArray objs, std::vector<cd::Word>& words) {
  const jsize k = env->GetArrayLength(tags);
  std::vector<jint> t(static_cast<std::size_t>(k));
  std::vector<jlong> b(static_cast<std::size_t>(k));
  if (k > 0) {
    env->GetIntArrayRegion(tags, 0, k, t.data());
    env->GetLongArrayRegion(bits, 0, k, b.data());
  }
  check_pending(env);
  std::vector<Arg> vals;
  vals.reserve(static_cast<std::size_t>(k));
  for (jsize i = 0; i < k; ++i) {
    jobject o = env->GetObjectArrayElement(objs, i);
    check_pending(env);
    vals.push_back(decode(env, t[static_cast<std::size_t>(i)], b[static_cast<std::size_t>(i)], o));
    if (o != nullptr) env->DeleteLocalRef(o);
  }
  words.clear();
  words.reserve(vals.size());
  for (const Arg& a : vals) words.push_back(a.get().raw());
  return vals;
}

// Makes the content the given values if the list is still at `version` (n_list_items_for_update);
// returns whether it did.
jboolean JNICALL n_list_replace_if(JNIEnv* env, jclass, jobject h, jlong version, jintArray tags, jlongArray bits,
                                   jobjectArray objs) {
  return guarded<jboolean>(env, JNI_FALSE, [&]() -> jboolean {
    colors::List& l = jvalue_of(env, h)->list();
    std::vector<cd::Word> words;
    std::vector<Arg> keep = decode_all(env, tags, bits, objs, words);
    return cd::list_replace_if(cd::current_meta(), l.raw(), static_cast<std::uint64_t>(version), words.data(),
                               words.size())
               ? JNI_TRUE
               : JNI_FALSE;
  });
}

// addAll: the values inserted before position `index` (-1: appended) in one operation, all of
// them or, when one cannot be stored, none.
void JNICALL n_list_add_all(JNIEnv* env, jclass, jobject h, jint index, jintArray tags, jlongArray bits,
                            jobjectArray objs) {
  guarded_void(env, [&] {
    colors::List& l = jvalue_of(env, h)->list();
    std::vector<cd::Word> words;
    std::vector<Arg> keep = decode_all(env, tags, bits, objs, words);
    if (index < 0) {
      cd::list_append_all(cd::current_meta(), l.raw(), words.data(), words.size());
    } else {
      cd::list_insert_all(cd::current_meta(), l.raw(), static_cast<std::size_t>(index), words.data(), words.size());
    }
  });
}

// ---- map ----

// The value's tag (-1 when the key is absent), as put_flat writes it (org.colors.SharedMap.get).
jint JNICALL n_map_get_flat(JNIEnv* env, jclass, jobject h, jint tag, jlong bits, jobject obj, jlongArray bits_out,
                            jobjectArray obj_out, jboolean hand_over) {
  return guarded<jint>(env, -1, [&]() -> jint {
    colors::Map& m = jvalue_of(env, h)->map();
    Arg k = decode(env, tag, bits, obj);
    std::optional<colors::Value> v = m.get(k.get());
    if (!v) return -1;
    return put_flat(env, std::move(*v), bits_out, obj_out, hand_over != JNI_FALSE);
  });
}

jboolean JNICALL n_map_contains(JNIEnv* env, jclass, jobject h, jint tag, jlong bits, jobject obj) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    colors::Map& m = jvalue_of(env, h)->map();
    Arg k = decode(env, tag, bits, obj);
    return m.contains(k.get()) ? JNI_TRUE : JNI_FALSE;
  });
}

jobject JNICALL n_map_put(JNIEnv* env, jclass, jobject h, jint kt, jlong kb, jobject ko, jint vt, jlong vb,
                          jobject vo) {
  return guarded<jobject>(env, nullptr, [&]() -> jobject {
    colors::Map& m = jvalue_of(env, h)->map();
    Arg k = decode(env, kt, kb, ko);
    Arg v = decode(env, vt, vb, vo);
    cd::Rooted old;
    if (cd::map_put(cd::current_meta(), m.raw(), k.get().raw(), v.get().raw(), &old)) return nullptr;
    return to_java(env, adopt(std::move(old)));
  });
}

jobject JNICALL n_map_remove(JNIEnv* env, jclass, jobject h, jint tag, jlong bits, jobject obj) {
  return guarded<jobject>(env, nullptr, [&]() -> jobject {
    colors::Map& m = jvalue_of(env, h)->map();
    Arg k = decode(env, tag, bits, obj);
    cd::Rooted old;
    if (!cd::hash_remove(m.raw(), k.get().raw(), &old)) return nullptr;
    return to_java(env, adopt(std::move(old)));
  });
}

// Keys and values interleaved: k0, v0, k1, v1, ...
jobjectArray JNICALL n_map_items(JNIEnv* env, jclass, jobject h) {
  return guarded<jobjectArray>(env, nullptr, [&] {
    auto items = jvalue_of(env, h)->map().items();
    std::vector<colors::Value> flat;
    flat.reserve(items.size() * 2);
    for (auto& kv : items) {
      flat.push_back(std::move(kv.first));
      flat.push_back(std::move(kv.second));
    }
    return to_java_array(env, std::move(flat));
  });
}

// ---- set ----

jboolean JNICALL n_set_contains(JNIEnv* env, jclass, jobject h, jint tag, jlong bits, jobject obj) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    colors::Set& s = jvalue_of(env, h)->set();
    Arg k = decode(env, tag, bits, obj);
    return s.contains(k.get()) ? JNI_TRUE : JNI_FALSE;
  });
}

jboolean JNICALL n_set_add(JNIEnv* env, jclass, jobject h, jint tag, jlong bits, jobject obj) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    colors::Set& s = jvalue_of(env, h)->set();
    Arg k = decode(env, tag, bits, obj);
    return s.add(k.get()) ? JNI_TRUE : JNI_FALSE;
  });
}

jboolean JNICALL n_set_remove(JNIEnv* env, jclass, jobject h, jint tag, jlong bits, jobject obj) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    colors::Set& s = jvalue_of(env, h)->set();
    Arg k = decode(env, tag, bits, obj);
    return s.remove(k.get()) ? JNI_TRUE : JNI_FALSE;
  });
}

jobjectArray JNICALL n_set_items(JNIEnv* env, jclass, jobject h) {
  return guarded<jobjectArray>(env, nullptr, [&] { return to_java_array(env, jvalue_of(env, h)->set().items()); });
}

// The elements, for retainAll (as n_list_items_for_update).
jobjectArray JNICALL n_set_items_for_update(JNIEnv* env, jclass, jobject h) {
  return guarded<jobjectArray>(env, nullptr, [&] {
    std::vector<colors::Value> items;
    cd::hash_for_each_rooted(
        jvalue_of(env, h)->set().raw(), [&](cd::Rooted k, cd::Rooted) { items.push_back(adopt(std::move(k))); },
        cd::TxAccess::kReadForUpdate);
    return to_java_array(env, std::move(items));
  });
}

constexpr const char* kH = "Lorg/colors/Handle;";

}  // namespace

void add_containers_natives(std::vector<JNINativeMethod>& out) {
  static const std::string h = kH;
  static const std::string val = "IJLjava/lang/Object;";
  static const std::string s_size = "(" + h + ")I";
  static const std::string s_clear = "(" + h + ")V";
  static const std::string s_lget = "(" + h + "I)Ljava/lang/Object;";
  static const std::string s_lset = "(" + h + "I" + val + ")Ljava/lang/Object;";
  static const std::string s_ladd = "(" + h + val + ")V";
  static const std::string s_lins = "(" + h + "I" + val + ")V";
  static const std::string s_items = "(" + h + ")[Ljava/lang/Object;";
  static const std::string s_longs = "(" + h + ")[J";
  static const std::string s_doubles = "(" + h + ")[D";
  static const std::string s_lidx = "(" + h + val + "Z)I";
  static const std::string s_lrmif = "(" + h + "I" + val + ")Z";
  static const std::string s_lrep = "(" + h + "J[I[J[Ljava/lang/Object;)Z";
  static const std::string s_items_v = "(" + h + "[J)[Ljava/lang/Object;";
  static const std::string s_laddall = "(" + h + "I[I[J[Ljava/lang/Object;)V";
  static const std::string s_kget = "(" + h + val + ")Ljava/lang/Object;";
  static const std::string s_kbool = "(" + h + val + ")Z";
  static const std::string s_kflat = "(" + h + val + "[J[Ljava/lang/Object;Z)I";
  static const std::string s_mput = "(" + h + val + val + ")Ljava/lang/Object;";
  out.insert(out.end(), {
      N("size", s_size.c_str(), n_size),
      N("clear", s_clear.c_str(), n_clear),
      N("listGet", s_lget.c_str(), n_list_get),
      N("listSet", s_lset.c_str(), n_list_set),
      N("listAdd", s_ladd.c_str(), n_list_add),
      N("listInsert", s_lins.c_str(), n_list_insert),
      N("listRemove", s_lget.c_str(), n_list_remove),
      N("listRemoveIf", s_lrmif.c_str(), n_list_remove_if),
      N("listItems", s_items.c_str(), n_list_items),
      N("listItemsForUpdate", s_items_v.c_str(), n_list_items_for_update),
      N("listLongs", s_longs.c_str(), n_list_longs),
      N("listDoubles", s_doubles.c_str(), n_list_doubles),
      N("listIndexOf", s_lidx.c_str(), n_list_index_of),
      N("listReplaceIf", s_lrep.c_str(), n_list_replace_if),
      N("listAddAll", s_laddall.c_str(), n_list_add_all),
      N("mapGetFlat", s_kflat.c_str(), n_map_get_flat),
      N("mapContains", s_kbool.c_str(), n_map_contains),
      N("mapPut", s_mput.c_str(), n_map_put),
      N("mapRemove", s_kget.c_str(), n_map_remove),
      N("mapItems", s_items.c_str(), n_map_items),
      N("setContains", s_kbool.c_str(), n_set_contains),
      N("setAdd", s_kbool.c_str(), n_set_add),
      N("setRemove", s_kbool.c_str(), n_set_remove),
      N("setItems", s_items.c_str(), n_set_items),
      N("setItemsForUpdate", s_items.c_str(), n_set_items_for_update),
  });
}

}  // namespace colors_jni
