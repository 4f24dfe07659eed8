// Java values <-> shared values: the (tag, bits, obj) decoding, results as Java objects, proxies
// through Proxies.wrap (the identity cache lives on the Java side), UTF-16 <-> UTF-8.
#include <cstring>
#include <vector>

#include "jni_common.hpp"

namespace colors_jni {

using colors::TypeKind;

// ---- strings ----

std::string java_to_utf8(JNIEnv* env, jstring s) {
  if (s == nullptr) {  // a name or text the caller passed as null: Java's exception, not a fault
    env->ThrowNew(env->FindClass("java/lang/NullPointerException"), "a String argument is null");
    check_pending(env);
  }
  const jsize n = env->GetStringLength(s);
  std::string out;
  out.reserve(static_cast<std::size_t>(n) + 8);
  // Small strings on the stack, large ones in chunks: no pinning, no JNI "modified UTF-8".
  constexpr jsize kChunk = 512;
  jchar buf[kChunk + 1];
  jsize pos = 0;
  while (pos < n) {
    jsize len = std::min(kChunk, n - pos);
    env->GetStringRegion(s, pos, len, buf);
    check_pending(env);
    // A high surrogate at the end of a chunk: pull in its partner.
    if (len < n - pos && buf[len - 1] >= 0xD800 && buf[len - 1] <= 0xDBFF) {
      env->GetStringRegion(s, pos + len, 1, buf + len);
      check_pending(env);
      ++len;
    }
    for (jsize i = 0; i < len; ++i) {
      std::uint32_t c = buf[i];
      if (c < 0x80) {
        out.push_back(static_cast<char>(c));
      } else if (c < 0x800) {
        out.push_back(static_cast<char>(0xC0 | (c >> 6)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
      } else if (c >= 0xD800 && c <= 0xDFFF) {
        if (c <= 0xDBFF && i + 1 < len && buf[i + 1] >= 0xDC00 && buf[i + 1] <= 0xDFFF) {
          std::uint32_t cp = 0x10000 + ((c - 0xD800) << 10) + (buf[i + 1] - 0xDC00);
          ++i;
          out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
          out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
          out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
          out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
          throw colors::InvalidArgumentError("the Java string has a lone surrogate at index " +
                                             std::to_string(pos + i) +
                                             ": it is not valid Unicode and cannot be stored as a shared (UTF-8) "
                                             "string; store it as byte[] instead");
        }
      } else {
        out.push_back(static_cast<char>(0xE0 | (c >> 12)));
        out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
        out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
      }
    }
    pos += len;
  }
  return out;
}

jstring utf8_to_java(JNIEnv* env, std::string_view s) {
  std::vector<jchar> u;
  u.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const std::size_t n = s.size();
  for (std::size_t i = 0; i < n;) {
    std::uint32_t c = p[i];
    std::uint32_t cp;
    std::size_t len;
    if (c < 0x80) {
      cp = c;
      len = 1;
    } else if ((c & 0xE0) == 0xC0 && i + 1 < n) {
      cp = ((c & 0x1F) << 6) | (p[i + 1] & 0x3F);
      len = 2;
    } else if ((c & 0xF0) == 0xE0 && i + 2 < n) {
      cp = ((c & 0x0F) << 12) | ((p[i + 1] & 0x3F) << 6) | (p[i + 2] & 0x3F);
      len = 3;
    } else if ((c & 0xF8) == 0xF0 && i + 3 < n) {
      cp = ((c & 0x07) << 18) | ((p[i + 1] & 0x3F) << 12) | ((p[i + 2] & 0x3F) << 6) | (p[i + 3] & 0x3F);
      len = 4;
    } else {
      cp = 0xFFFD;  // cannot happen: shared strings are validated UTF-8 on creation
      len = 1;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      u.push_back(static_cast<jchar>(0xD800 + (cp >> 10)));
      u.push_back(static_cast<jchar>(0xDC00 + (cp & 0x3FF)));
    } else {
      u.push_back(static_cast<jchar>(cp));
    }
    i += len;
  }
  jstring r = env->NewString(u.data(), static_cast<jsize>(u.size()));
  check_pending(env);
  return r;
}

// ---- Java -> shared ----

Arg decode(JNIEnv* env, jint tag, jlong bits, jobject obj) {
  switch (tag) {
    case kTagNull: return Arg();
    case kTagInt: return Arg(colors::Value(static_cast<long long>(bits)));
    case kTagFloat: {
      double d;
      std::memcpy(&d, &bits, sizeof d);
      return Arg(colors::Value(d));
    }
    case kTagBool: return Arg(colors::Value(bits != 0));
    case kTagString: {
      std::string s = java_to_utf8(env, static_cast<jstring>(obj));
      return Arg(colors::Value(std::string_view(s)));
    }
    case kTagBinary: {
      auto a = static_cast<jbyteArray>(obj);
      const jsize n = env->GetArrayLength(a);
      std::vector<std::uint8_t> bytes(static_cast<std::size_t>(n));
      if (n > 0) env->GetByteArrayRegion(a, 0, n, reinterpret_cast<jbyte*>(bytes.data()));
      check_pending(env);
      return Arg(colors::new_binary(bytes));
    }
    case kTagRef: return Arg(&jvalue_of(env, obj)->value());
    default: throw colors::InvalidArgumentError("bad value tag " + std::to_string(tag) + " (binding bug)");
  }
}

// ---- shared -> Java ----

jobject to_java(JNIEnv* env, colors::Value&& v) {
  TypeKind k = v.kind();
  jobject r = nullptr;
  switch (k) {
    case TypeKind::kNull: return nullptr;
    case TypeKind::kInteger:
      r = env->CallStaticObjectMethod(g.long_cls, g.long_value_of, static_cast<jlong>(v.as_int()));
      break;
    case TypeKind::kFloat:
      r = env->CallStaticObjectMethod(g.double_cls, g.double_value_of, static_cast<jdouble>(v.as_float()));
      break;
    case TypeKind::kBoolean: return env->NewLocalRef(v.as_bool() ? g.boolean_true : g.boolean_false);
    case TypeKind::kString: return utf8_to_java(env, v.string_view());
    case TypeKind::kBinary: {
      std::vector<std::uint8_t> b = v.as_bytes();
      jbyteArray a = env->NewByteArray(static_cast<jsize>(b.size()));
      check_pending(env);
      if (!b.empty()) env->SetByteArrayRegion(a, 0, static_cast<jsize>(b.size()), reinterpret_cast<const jbyte*>(b.data()));
      r = a;
      break;
    }
    default: {
      const jlong raw = static_cast<jlong>(v.raw());
      // The common case, a live proxy of the object: no new handle at all (v's root goes with v).
      jobject cached = env->CallStaticObjectMethod(g.proxies_cls, g.lookup, raw);
      check_pending(env);
      if (cached != nullptr) return cached;
      auto* h = new JValue(std::move(v));
      // Proxies.wrap owns the handle from the call on: it adopts it into a new proxy's Root, or
      // releases it (Native.release) when a live proxy of the same object exists or when it
      // fails. Never released here: a second release would free it twice.
      r = env->CallStaticObjectMethod(g.proxies_cls, g.wrap, static_cast<jlong>(reinterpret_cast<std::intptr_t>(h)),
                                      raw, static_cast<jint>(k));
      check_pending(env);
      return r;
    }
  }
  check_pending(env);
  return r;
}

jobject to_java_transient(JNIEnv* env, colors::Value&& v) {
  const TypeKind k = v.kind();
  if (k != TypeKind::kList && k != TypeKind::kMap && k != TypeKind::kSet && k != TypeKind::kObject)
    throw colors::InvalidArgumentError("a transient proxy is made only for a container or user object (binding bug)");
  const jlong raw = static_cast<jlong>(v.raw());
  auto* h = new JValue(std::move(v));
  // Proxies.wrapTransient owns the handle from the call on (as wrap above).
  jobject r = env->CallStaticObjectMethod(g.proxies_cls, g.wrap_transient,
                                          static_cast<jlong>(reinterpret_cast<std::intptr_t>(h)), raw, static_cast<jint>(k));
  check_pending(env);
  return r;
}

jobjectArray to_java_array(JNIEnv* env, std::vector<colors::Value>&& items) {
  jobjectArray a = env->NewObjectArray(static_cast<jsize>(items.size()), g.object_cls, nullptr);
  check_pending(env);
  for (std::size_t i = 0; i < items.size(); ++i) {
    jobject o = to_java(env, std::move(items[i]));
    env->SetObjectArrayElement(a, static_cast<jsize>(i), o);
    if (o != nullptr) env->DeleteLocalRef(o);
  }
  return a;
}

namespace {

jobject JNICALL n_new_container(JNIEnv* env, jclass, jint kind, jint capacity) {
  return guarded<jobject>(env, nullptr, [&]() -> jobject {
    if (capacity < 0) throw colors::InvalidArgumentError("capacity must be >= 0, got " + std::to_string(capacity));
    auto n = static_cast<std::size_t>(capacity);
    switch (static_cast<TypeKind>(kind)) {
      case TypeKind::kList: return to_java(env, colors::new_list(n));
      case TypeKind::kMap: return to_java(env, colors::new_map(n));
      case TypeKind::kSet: return to_java(env, colors::new_set(n));
      default: throw colors::InvalidArgumentError("not a container kind: " + std::to_string(kind));
    }
  });
}

jobject JNICALL n_round_trip(JNIEnv* env, jclass, jint tag, jlong bits, jobject obj) {
  return guarded<jobject>(env, nullptr, [&] {
    colors::List l = colors::new_list(1);
    l.append(decode(env, tag, bits, obj).get());
    return to_java(env, l.get(0));
  });
}

jint JNICALL n_kind(JNIEnv* env, jclass, jobject handle) {
  return guarded<jint>(env, -1, [&] { return static_cast<jint>(jvalue_of(env, handle)->kind); });
}

jboolean JNICALL n_values_equal(JNIEnv* env, jclass, jint t1, jlong b1, jobject o1, jint t2, jlong b2, jobject o2) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    Arg a = decode(env, t1, b1, o1);
    Arg b = decode(env, t2, b2, o2);
    return a.get().equals(b.get()) ? JNI_TRUE : JNI_FALSE;
  });
}

}  // namespace

void add_values_natives(std::vector<JNINativeMethod>& out) {
  out.insert(out.end(), {
      {const_cast<char*>("newContainer"), const_cast<char*>("(II)Ljava/lang/Object;"),
       reinterpret_cast<void*>(&n_new_container)},
      {const_cast<char*>("roundTrip"), const_cast<char*>("(IJLjava/lang/Object;)Ljava/lang/Object;"),
       reinterpret_cast<void*>(&n_round_trip)},
      {const_cast<char*>("kind"), const_cast<char*>("(Lorg/colors/Handle;)I"), reinterpret_cast<void*>(&n_kind)},
      {const_cast<char*>("valuesEqual"),
       const_cast<char*>("(IJLjava/lang/Object;IJLjava/lang/Object;)Z"), reinterpret_cast<void*>(&n_values_equal)},
  });
}

}  // namespace colors_jni
