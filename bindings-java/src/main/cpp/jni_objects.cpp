// User objects and shared classes: field access by name, schema evolution, class versions.
// Class versions are immutable records in the classes space; Java holds them as their address
// (a long) together with the attachment generation they belong to (org.colors.SharedType).
#include <vector>

#include "classes.hpp"
#include "jni_common.hpp"

namespace colors_jni {

namespace {

#define N(name, sig, fn) \
  { const_cast<char*>(name), const_cast<char*>(sig), reinterpret_cast<void*>(&fn) }

colors::Class cls_of(jlong p) {
  if (p == 0) throw colors::InvalidArgumentError("no class");
  if (!colors::has_segment()) throw colors::NotAttachedError("not attached to a colors server");
  return colors::Class(reinterpret_cast<const colors::detail::ClassRecord*>(static_cast<std::intptr_t>(p)));
}

jlong cls_ptr(const colors::Class& c) {
  return static_cast<jlong>(reinterpret_cast<std::intptr_t>(c.record()));
}

jlongArray ptr_array(JNIEnv* env, const std::vector<colors::Class>& v) {
  std::vector<jlong> p;
  p.reserve(v.size());
  for (const auto& c : v) p.push_back(cls_ptr(c));
  jlongArray a = env->NewLongArray(static_cast<jsize>(p.size()));
  check_pending(env);
  if (!p.empty()) env->SetLongArrayRegion(a, 0, static_cast<jsize>(p.size()), p.data());
  return a;
}

jlong JNICALL n_class_of(JNIEnv* env, jclass, jobject h) {
  return guarded<jlong>(env, 0, [&] { return cls_ptr(colors::class_of(jvalue_of(env, h)->value())); });
}

jstring JNICALL n_class_name(JNIEnv* env, jclass, jlong p) {
  return guarded<jstring>(env, nullptr, [&] { return utf8_to_java(env, cls_of(p).name()); });
}

jint JNICALL n_class_version(JNIEnv* env, jclass, jlong p) {
  return guarded<jint>(env, 0, [&] { return static_cast<jint>(cls_of(p).version()); });
}

jint JNICALL n_class_kind(JNIEnv* env, jclass, jlong p) {
  return guarded<jint>(env, 0, [&] { return static_cast<jint>(cls_of(p).kind()); });
}

// name0, kind0 (Integer), className0, slot0 (Integer), name1, ...
jobjectArray JNICALL n_class_fields(JNIEnv* env, jclass, jlong p) {
  return guarded<jobjectArray>(env, nullptr, [&] {
    std::vector<colors::FieldDesc> f = cls_of(p).fields();
    jobjectArray a = env->NewObjectArray(static_cast<jsize>(f.size() * 4), g.object_cls, nullptr);
    check_pending(env);
    jclass int_cls = env->FindClass("java/lang/Integer");
    check_pending(env);
    jmethodID int_of = env->GetStaticMethodID(int_cls, "valueOf", "(I)Ljava/lang/Integer;");
    check_pending(env);
    for (std::size_t i = 0; i < f.size(); ++i) {
      auto at = static_cast<jsize>(i * 4);
      jobject name = utf8_to_java(env, f[i].name);
      jobject kind = env->CallStaticObjectMethod(int_cls, int_of, static_cast<jint>(f[i].type));
      check_pending(env);
      jobject cname = utf8_to_java(env, f[i].class_name);
      jobject slot = env->CallStaticObjectMethod(int_cls, int_of, static_cast<jint>(f[i].slot));
      check_pending(env);
      env->SetObjectArrayElement(a, at, name);
      env->SetObjectArrayElement(a, at + 1, kind);
      env->SetObjectArrayElement(a, at + 2, cname);
      env->SetObjectArrayElement(a, at + 3, slot);
      env->DeleteLocalRef(name);
      env->DeleteLocalRef(kind);
      env->DeleteLocalRef(cname);
      env->DeleteLocalRef(slot);
    }
    env->DeleteLocalRef(int_cls);
    return a;
  });
}

jlongArray JNICALL n_class_versions(JNIEnv* env, jclass, jlong p) {
  return guarded<jlongArray>(env, nullptr, [&] { return ptr_array(env, cls_of(p).versions()); });
}

jlongArray JNICALL n_class_versions_by_name(JNIEnv* env, jclass, jstring name) {
  return guarded<jlongArray>(env, nullptr, [&] { return ptr_array(env, colors::class_versions(java_to_utf8(env, name))); });
}

jlong JNICALL n_define_class(JNIEnv* env, jclass, jstring name, jobjectArray names, jintArray kinds,
                             jobjectArray class_names) {
  return guarded<jlong>(env, 0, [&] {
    const jsize n = env->GetArrayLength(names);
    if (env->GetArrayLength(kinds) != n || env->GetArrayLength(class_names) != n)
      throw colors::InvalidArgumentError("defineClass: arrays of different lengths");
    std::vector<jint> k(static_cast<std::size_t>(n));
    if (n > 0) env->GetIntArrayRegion(kinds, 0, n, k.data());
    check_pending(env);
    std::vector<colors::FieldSpec> specs;
    specs.reserve(static_cast<std::size_t>(n));
    for (jsize i = 0; i < n; ++i) {
      auto fname = static_cast<jstring>(env->GetObjectArrayElement(names, i));
      auto cname = static_cast<jstring>(env->GetObjectArrayElement(class_names, i));
      check_pending(env);
      colors::FieldSpec s;
      s.name = java_to_utf8(env, fname);
      s.type = static_cast<colors::TypeKind>(k[static_cast<std::size_t>(i)]);
      if (cname != nullptr) s.class_name = java_to_utf8(env, cname);
      specs.push_back(std::move(s));
      env->DeleteLocalRef(fname);
      if (cname != nullptr) env->DeleteLocalRef(cname);
    }
    return cls_ptr(colors::define_class(java_to_utf8(env, name), specs));
  });
}

jobject JNICALL n_new_object(JNIEnv* env, jclass, jlong p) {
  return guarded<jobject>(env, nullptr, [&] { return to_java(env, colors::new_object(cls_of(p))); });
}

jboolean JNICALL n_obj_has(JNIEnv* env, jclass, jobject h, jstring name) {
  return guarded<jboolean>(env, JNI_FALSE, [&] {
    colors::Object& o = jvalue_of(env, h)->object();
    return o.has_field(java_to_utf8(env, name)) ? JNI_TRUE : JNI_FALSE;
  });
}

jobject JNICALL n_obj_get(JNIEnv* env, jclass, jobject h, jstring name) {
  return guarded<jobject>(env, nullptr, [&] {
    colors::Object& o = jvalue_of(env, h)->object();
    return to_java(env, o.get(java_to_utf8(env, name)));
  });
}

// The value Java's (tag, bits, obj) stores into field `name` of `o`: an integer stored into a float
// field becomes that float (as Java widens int to double), when a double represents it exactly.
Arg field_value(JNIEnv* env, const colors::Object& o, const std::string& name, jint tag, jlong bits, jobject obj) {
  if (tag == kTagInt) {
    const colors::detail::FieldInfo* f = colors::detail::find_field(colors::class_of(o).record(), name);
    if (f != nullptr && f->type == colors::TypeKind::kFloat) {
      const auto x = static_cast<long long>(bits);
      const auto d = static_cast<double>(x);
      if (d >= 9223372036854775808.0 || static_cast<long long>(d) != x)
        throw colors::OverflowError("the integer " + std::to_string(x) + " has no exact double value for float field '" +
                                    name + "'");
      return Arg(colors::Value(d));
    }
  }
  return decode(env, tag, bits, obj);
}

void JNICALL n_obj_set(JNIEnv* env, jclass, jobject h, jstring name, jint tag, jlong bits, jobject obj) {
  guarded_void(env, [&] {
    colors::Object& o = jvalue_of(env, h)->object();
    std::string n = java_to_utf8(env, name);
    o.set(n, field_value(env, o, n, tag, bits, obj).get());
  });
}

// SharedObject.writeFrom's stores, all or none (colors::Object::set_fields): every value for a
// field the object has is checked first (TypeMismatchError, OverflowError: nothing changed); then
// the fields it lacks are added, of kinds[i] (schema evolution: a new version, the object does not
// move), every value is checked again against the new version, and all are stored.
void JNICALL n_obj_set_fields(JNIEnv* env, jclass, jobject h, jobjectArray names, jintArray tags, jlongArray bits,
                              jobjectArray objs, jintArray kinds) {
  guarded_void(env, [&] {
    colors::Object& o = jvalue_of(env, h)->object();
    const jsize n = env->GetArrayLength(names);
    if (env->GetArrayLength(tags) != n || env->GetArrayLength(bits) != n || env->GetArrayLength(objs) != n ||
        env->GetArrayLength(kinds) != n)
      throw colors::InvalidArgumentError("setFields: arrays of different lengths");
    std::vector<jint> tag(n), kind(n);
    std::vector<jlong> bit(n);
    env->GetIntArrayRegion(tags, 0, n, tag.data());
    env->GetIntArrayRegion(kinds, 0, n, kind.data());
    env->GetLongArrayRegion(bits, 0, n, bit.data());
    std::vector<std::string> name;
    name.reserve(n);
    for (jsize i = 0; i < n; ++i) {
      auto s = static_cast<jstring>(env->GetObjectArrayElement(names, i));
      name.push_back(java_to_utf8(env, s));
      env->DeleteLocalRef(s);
    }
    if (env->EnsureLocalCapacity(n + 16) != 0) check_pending(env);
    std::vector<jobject> obj(n);
    for (jsize i = 0; i < n; ++i) obj[i] = env->GetObjectArrayElement(objs, i);
    std::vector<bool> had(n);
    std::vector<Arg> value;
    value.reserve(n);
    for (jsize i = 0; i < n; ++i) {
      had[i] = o.has_field(name[i]);
      value.push_back(had[i] ? field_value(env, o, name[i], tag[i], bit[i], obj[i]) : decode(env, tag[i], bit[i], obj[i]));
      if (had[i]) o.check(name[i], value[i].get());
    }
    for (jsize i = 0; i < n; ++i) {
      if (had[i]) continue;
      colors::FieldSpec s;
      s.name = name[i];
      s.type = static_cast<colors::TypeKind>(kind[i]);
      o.add_field(s);
      if (tag[i] == kTagInt) value[i] = field_value(env, o, name[i], tag[i], bit[i], obj[i]);  // into an added float field
    }
    std::vector<std::pair<std::string_view, colors::Value>> fields;
    fields.reserve(n);
    for (jsize i = 0; i < n; ++i) fields.emplace_back(name[i], value[i].get());
    o.set_fields(fields);
  });
}

void JNICALL n_obj_add_field(JNIEnv* env, jclass, jobject h, jstring name, jint kind, jstring class_name) {
  guarded_void(env, [&] {
    colors::Object& o = jvalue_of(env, h)->object();
    colors::FieldSpec s;
    s.name = java_to_utf8(env, name);
    s.type = static_cast<colors::TypeKind>(kind);
    if (class_name != nullptr) s.class_name = java_to_utf8(env, class_name);
    o.add_field(s);
  });
}

void JNICALL n_obj_remove_field(JNIEnv* env, jclass, jobject h, jstring name) {
  guarded_void(env, [&] {
    colors::Object& o = jvalue_of(env, h)->object();
    o.remove_field(java_to_utf8(env, name));
  });
}

}  // namespace

void add_objects_natives(std::vector<JNINativeMethod>& out) {
  out.insert(out.end(), {
      N("classOf", "(Lorg/colors/Handle;)J", n_class_of),
      N("className", "(J)Ljava/lang/String;", n_class_name),
      N("classVersion", "(J)I", n_class_version),
      N("classKind", "(J)I", n_class_kind),
      N("classFields", "(J)[Ljava/lang/Object;", n_class_fields),
      N("classVersions", "(J)[J", n_class_versions),
      N("classVersionsByName", "(Ljava/lang/String;)[J", n_class_versions_by_name),
      N("defineClass", "(Ljava/lang/String;[Ljava/lang/String;[I[Ljava/lang/String;)J", n_define_class),
      N("newObject", "(J)Ljava/lang/Object;", n_new_object),
      N("objHas", "(Lorg/colors/Handle;Ljava/lang/String;)Z", n_obj_has),
      N("objGet", "(Lorg/colors/Handle;Ljava/lang/String;)Ljava/lang/Object;", n_obj_get),
      N("objSet", "(Lorg/colors/Handle;Ljava/lang/String;IJLjava/lang/Object;)V", n_obj_set),
      N("objSetFields", "(Lorg/colors/Handle;[Ljava/lang/String;[I[J[Ljava/lang/Object;[I)V", n_obj_set_fields),
      N("objAddField", "(Lorg/colors/Handle;Ljava/lang/String;ILjava/lang/String;)V", n_obj_add_field),
      N("objRemoveField", "(Lorg/colors/Handle;Ljava/lang/String;)V", n_obj_remove_field),
  });
}

}  // namespace colors_jni
