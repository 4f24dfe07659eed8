// The primitive operations of shared sorted maps (libshared/src/sorted_map.hpp), registered on
// org.colors.SortedNative; org.colors.SharedSortedMap builds java.util.NavigableMap on them. Each
// native is one operation under the map's lock; Java values are decoded before it, results are
// converted after it.
#include <cstring>
#include <vector>

#include "jni_common.hpp"
#include "objects.hpp"
#include "segment.hpp"
#include "sorted_map.hpp"

namespace colors_jni {

namespace {

namespace cd = colors::detail;

#define N(name, sig, fn) \
  { const_cast<char*>(name), const_cast<char*>(sig), reinterpret_cast<void*>(&fn) }

colors::Value adopt(cd::Rooted&& r) {
  cd::Word w = r.word();
  return colors::Value::adopt_root(w, r.take());
}

// The map's word, after checking the attachment and the kind.
cd::Word map_word(JNIEnv* env, jobject h) {
  JValue* r = jvalue_of(env, h);
  if (r->kind != colors::TypeKind::kSortedMap)
    throw colors::TypeMismatchError("expected a shared sorted map, got a shared " + std::string(colors::type_name(r->kind)));
  return r->value().raw();
}

// Scalars go back to Java as (tag, bits) without an upcall per value (Long.valueOf through JNI
// costs more than the lookup); strings, binaries and shared objects as Java objects.
// REQUIRES: w rooted (or a non-reference).
jint flat_tag(cd::Word w, jlong* bits) {
  switch (cd::kind_of(w)) {
    case colors::TypeKind::kNull: *bits = 0; return kTagNull;
    case colors::TypeKind::kInteger: *bits = cd::integer_value(w); return kTagInt;
    case colors::TypeKind::kFloat: {
      double d = cd::float_value(w);
      std::memcpy(bits, &d, sizeof d);
      return kTagFloat;
    }
    case colors::TypeKind::kBoolean: *bits = cd::bool_value(w) ? 1 : 0; return kTagBool;
    default: *bits = 0; return kTagRef;
  }
}

jobject JNICALL n_new_map(JNIEnv* env, jclass) {
  return guarded<jobject>(env, nullptr, [&] { return to_java(env, colors::new_sorted_map()); });
}

jint JNICALL n_size(JNIEnv* env, jclass, jobject h) {
  return guarded<jint>(env, 0, [&]() -> jint {
    std::size_t n = cd::sorted_size(map_word(env, h));
    return n > 0x7fffffff ? 0x7fffffff : static_cast<jint>(n);
  });
}

void JNICALL n_clear(JNIEnv* env, jclass, jobject h) {
  guarded_void(env, [&] { cd::sorted_clear(map_word(env, h)); });
}

// Whether Java makes the proxy of a value of this kind itself (org.colors.Proxies.proxied).
bool java_proxied(colors::TypeKind k) {
  return k == colors::TypeKind::kObject || k == colors::TypeKind::kList || k == colors::TypeKind::kMap ||
         k == colors::TypeKind::kSet || k == colors::TypeKind::kSortedMap;
}

// The value's tag (-1 when the key is absent), as put_flat writes it (org.colors.SortedNative.get).
jint JNICALL n_get_flat(JNIEnv* env, jclass, jobject h, jint t, jlong b, jobject o, jlongArray bits_out,
                        jobjectArray obj_out, jboolean hand_over) {
  return guarded<jint>(env, -1, [&]() -> jint {
    Arg k = decode(env, t, b, o);
    cd::Rooted v;
    if (!cd::sorted_load(map_word(env, h), k.get().raw(), &v)) return -1;
    return put_flat(env, adopt(std::move(v)), bits_out, obj_out, hand_over != JNI_FALSE);
  });
}

jboolean JNICALL n_contains(JNIEnv* env, jclass, jobject h, jint t, jlong b, jobject o) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    Arg k = decode(env, t, b, o);
    return cd::sorted_contains(map_word(env, h), k.get().raw()) ? JNI_TRUE : JNI_FALSE;
  });
}

// The value the key had (null if none).
jobject JNICALL n_put(JNIEnv* env, jclass, jobject h, jint kt, jlong kb, jobject ko, jint vt, jlong vb, jobject vo) {
  return guarded<jobject>(env, nullptr, [&]() -> jobject {
    Arg k = decode(env, kt, kb, ko);
    Arg v = decode(env, vt, vb, vo);
    cd::Rooted old;
    if (cd::sorted_put(colors::detail::current_meta(), map_word(env, h), k.get().raw(), v.get().raw(), &old)) return nullptr;
    return to_java(env, adopt(std::move(old)));
  });
}

jobjectArray one_element(JNIEnv* env, jobject x) {
  jobjectArray a = env->NewObjectArray(1, g.object_cls, nullptr);
  check_pending(env);
  env->SetObjectArrayElement(a, 0, x);
  return a;
}

// {value} when the key was there, null when it was not.
jobjectArray JNICALL n_remove(JNIEnv* env, jclass, jobject h, jint t, jlong b, jobject o) {
  return guarded<jobjectArray>(env, nullptr, [&]() -> jobjectArray {
    Arg k = decode(env, t, b, o);
    cd::Rooted v;
    if (!cd::sorted_remove(colors::detail::current_meta(), map_word(env, h), k.get().raw(), &v)) return nullptr;
    return one_element(env, to_java(env, adopt(std::move(v))));
  });
}

// Keys (and values after each key, when withValues) between the bounds, at most `limit`, flat:
// {byte[] tags, long[] bits, Object[] objects (null where the tag says scalar)}.
// {byte[] tags, long[] bits, Object[] objects} of the keys (and values) in range; with
// `hand_over`, a fourth element long[] slots: a shared object Java proxies comes as kTagRooted with
// its word in bits and the root slot holding it in slots, the caller's from now on (as get's).
jobjectArray JNICALL n_range(JNIEnv* env, jclass, jobject h, jint lt, jlong lb, jobject lo, jboolean lo_given,
                             jboolean lo_incl, jint ht, jlong hb, jobject hi, jboolean hi_given, jboolean hi_incl,
                             jboolean reverse, jint limit, jboolean with_values, jboolean hand_over) {
  return guarded<jobjectArray>(env, nullptr, [&]() -> jobjectArray {
    Arg l = lo_given ? decode(env, lt, lb, lo) : Arg();
    Arg u = hi_given ? decode(env, ht, hb, hi) : Arg();
    cd::SortedBound lob, hib;
    if (lo_given) lob = {l.get().raw(), true, lo_incl != JNI_FALSE};
    if (hi_given) hib = {u.get().raw(), true, hi_incl != JNI_FALSE};
    auto rows = cd::sorted_range(map_word(env, h), lob, hib, reverse != JNI_FALSE,
                                 limit < 0 ? 0 : static_cast<std::size_t>(limit), with_values != JNI_FALSE);
    const std::size_t n = rows.size() * (with_values ? 2 : 1);
    std::vector<jbyte> tags(n);
    std::vector<jlong> bits(n);
    jobjectArray objs = env->NewObjectArray(static_cast<jsize>(n), g.object_cls, nullptr);
    check_pending(env);
    std::size_t i = 0;
    std::vector<std::pair<std::size_t, cd::Rooted*>> handed;  // handed over once nothing can fail
    auto put = [&](cd::Rooted& r) {
      const jint tag = flat_tag(r.word(), &bits[i]);
      tags[i] = static_cast<jbyte>(tag);
      if (tag == kTagRef && hand_over && java_proxied(cd::kind_of(r.word()))) {
        tags[i] = static_cast<jbyte>(kTagRooted);
        bits[i] = static_cast<jlong>(r.word());
        handed.emplace_back(i, &r);
      } else if (tag == kTagRef) {
        jobject x = to_java(env, adopt(std::move(r)));
        env->SetObjectArrayElement(objs, static_cast<jsize>(i), x);
        if (x != nullptr) env->DeleteLocalRef(x);
        check_pending(env);
      }
      ++i;
    };
    for (auto& [k, v] : rows) {
      put(k);
      if (with_values) put(v);
    }
    jbyteArray ta = env->NewByteArray(static_cast<jsize>(n));
    check_pending(env);
    if (n != 0) env->SetByteArrayRegion(ta, 0, static_cast<jsize>(n), tags.data());
    jlongArray ba = env->NewLongArray(static_cast<jsize>(n));
    check_pending(env);
    if (n != 0) env->SetLongArrayRegion(ba, 0, static_cast<jsize>(n), bits.data());
    jlongArray sa = nullptr;
    if (hand_over) {
      sa = env->NewLongArray(static_cast<jsize>(n));
      check_pending(env);
    }
    jobjectArray out = env->NewObjectArray(hand_over ? 4 : 3, g.object_cls, nullptr);
    check_pending(env);
    env->SetObjectArrayElement(out, 0, ta);
    env->SetObjectArrayElement(out, 1, ba);
    env->SetObjectArrayElement(out, 2, objs);
    if (hand_over) {
      env->SetObjectArrayElement(out, 3, sa);
      // Handed over only now: a region inside the array and elements inside `out` cannot fail.
      std::vector<jlong> slots(n, 0);
      for (auto& [at, r] : handed) slots[at] = static_cast<jlong>(reinterpret_cast<std::uintptr_t>(r->take()));
      if (n != 0) env->SetLongArrayRegion(sa, 0, static_cast<jsize>(n), slots.data());
    }
    return out;
  });
}

// {key, value} of the entry at position i (negative: from the end), removed in one operation;
// null when the map is empty.
jobjectArray JNICALL n_pop_at(JNIEnv* env, jclass, jobject h, jlong i) {
  return guarded<jobjectArray>(env, nullptr, [&]() -> jobjectArray {
    const cd::Word w = map_word(env, h);
    std::pair<cd::Rooted, cd::Rooted> e;
    try {
      e = cd::sorted_pop_at(colors::detail::current_meta(), w, i);
    } catch (const colors::IndexError&) {
      return nullptr;  // empty (or, for a bad index, nothing there)
    }
    std::vector<colors::Value> kv;
    kv.push_back(adopt(std::move(e.first)));
    kv.push_back(adopt(std::move(e.second)));
    return to_java_array(env, std::move(kv));
  });
}

jint JNICALL n_compare(JNIEnv* env, jclass, jint t1, jlong b1, jobject o1, jint t2, jlong b2, jobject o2) {
  return guarded<jint>(env, 0, [&] {
    Arg a = decode(env, t1, b1, o1);
    Arg b = decode(env, t2, b2, o2);
    return static_cast<jint>(cd::sorted_compare_checked(a.get().raw(), b.get().raw()));
  });
}

}  // namespace

jint put_flat(JNIEnv* env, colors::Value&& v, jlongArray bits_out, jobjectArray obj_out, bool hand_over) {
  jlong bits = 0;
  const jint tag = flat_tag(v.raw(), &bits);
  if (tag == kTagRef && hand_over && java_proxied(cd::kind_of(v.raw()))) {
    jlong out[2] = {static_cast<jlong>(v.raw()), 0};
    env->SetLongArrayRegion(bits_out, 0, 1, out);
    check_pending(env);  // nothing handed over yet: the Value releases the root
    out[1] = static_cast<jlong>(reinterpret_cast<std::uintptr_t>(v.take_root_slot()));
    env->SetLongArrayRegion(bits_out, 1, 1, out + 1);  // a region inside the array: cannot fail
    return kTagRooted;
  }
  if (tag == kTagRef) {
    jobject x = to_java(env, std::move(v));
    env->SetObjectArrayElement(obj_out, 0, x);
    check_pending(env);
  } else {
    env->SetLongArrayRegion(bits_out, 0, 1, &bits);
    check_pending(env);
  }
  return tag;
}

bool register_sorted_map_natives(JNIEnv* env) {
  jclass cls = env->FindClass("org/colors/SortedNative");
  if (cls == nullptr) return false;
  const JNINativeMethod methods[] = {
      N("newMap", "()Ljava/lang/Object;", n_new_map),
      N("size", "(Lorg/colors/Handle;)I", n_size),
      N("clear", "(Lorg/colors/Handle;)V", n_clear),
      N("getFlat", "(Lorg/colors/Handle;IJLjava/lang/Object;[J[Ljava/lang/Object;Z)I", n_get_flat),
      N("contains", "(Lorg/colors/Handle;IJLjava/lang/Object;)Z", n_contains),
      N("put", "(Lorg/colors/Handle;IJLjava/lang/Object;IJLjava/lang/Object;)Ljava/lang/Object;", n_put),
      N("remove", "(Lorg/colors/Handle;IJLjava/lang/Object;)[Ljava/lang/Object;", n_remove),
      N("rangeTagged", "(Lorg/colors/Handle;IJLjava/lang/Object;ZZIJLjava/lang/Object;ZZZIZZ)[Ljava/lang/Object;", n_range),
      N("popAt", "(Lorg/colors/Handle;J)[Ljava/lang/Object;", n_pop_at),
      N("compare", "(IJLjava/lang/Object;IJLjava/lang/Object;)I", n_compare),
  };
  return env->RegisterNatives(cls, methods, static_cast<jint>(sizeof methods / sizeof methods[0])) == 0;
}

}  // namespace colors_jni
