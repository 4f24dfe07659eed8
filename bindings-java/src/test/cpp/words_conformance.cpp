// The C++ side of org.colors.WordsConformanceTest: libshared's word encoding (word.hpp) and the
// pending set's bit index (pending_bits.hpp), exported as JNI natives of the test class, so that
// the test compares Java's copy of them (Words.java) with the definitions themselves, bit for bit.
// Part of the test-only library libcolors_conformance.so, never loaded by the binding.
#include <jni.h>

#include <cstdint>
#include <cstring>

#include "pending_bits.hpp"
#include "word.hpp"

namespace cd = colors::detail;

namespace {
double from_bits(jlong bits) {
  double d;
  std::uint64_t b = static_cast<std::uint64_t>(bits);
  std::memcpy(&d, &b, sizeof d);
  return d;
}
cd::Word word(jlong w) { return static_cast<cd::Word>(w); }
}  // namespace

extern "C" {

JNIEXPORT jboolean JNICALL Java_org_colors_WordsConformanceTest_cIsRef(JNIEnv*, jclass, jlong w) {
  return cd::is_ref(word(w));
}
JNIEXPORT jboolean JNICALL Java_org_colors_WordsConformanceTest_cIsSmallInt(JNIEnv*, jclass, jlong w) {
  return cd::is_small_int(word(w));
}
JNIEXPORT jboolean JNICALL Java_org_colors_WordsConformanceTest_cFitsSmall(JNIEnv*, jclass, jlong v) {
  return cd::fits_small(v);
}
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cMakeSmall(JNIEnv*, jclass, jlong v) {
  return static_cast<jlong>(cd::make_small(v));
}
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cSmallValue(JNIEnv*, jclass, jlong w) {
  return cd::small_value(word(w));
}
JNIEXPORT jboolean JNICALL Java_org_colors_WordsConformanceTest_cIsBool(JNIEnv*, jclass, jlong w) {
  return cd::is_bool(word(w));
}
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cMakeBool(JNIEnv*, jclass, jboolean b) {
  return static_cast<jlong>(cd::make_bool(b != JNI_FALSE));
}
JNIEXPORT jboolean JNICALL Java_org_colors_WordsConformanceTest_cBoolValue(JNIEnv*, jclass, jlong w) {
  return cd::bool_value(word(w));
}
JNIEXPORT jboolean JNICALL Java_org_colors_WordsConformanceTest_cIsSmallFloat(JNIEnv*, jclass, jlong w) {
  return cd::is_small_float(word(w));
}
JNIEXPORT jboolean JNICALL Java_org_colors_WordsConformanceTest_cFitsSmallFloat(JNIEnv*, jclass, jlong bits) {
  return cd::fits_small_float(from_bits(bits));
}
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cMakeSmallFloat(JNIEnv*, jclass, jlong bits) {
  return static_cast<jlong>(cd::make_small_float(from_bits(bits)));
}
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cSmallFloatBits(JNIEnv*, jclass, jlong w) {
  return static_cast<jlong>(cd::double_bits(cd::small_float_value(word(w))));
}
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cPendingIndex(JNIEnv*, jclass, jlong begin, jlong addr) {
  return static_cast<jlong>(cd::pending_index(static_cast<std::uintptr_t>(begin), static_cast<std::uintptr_t>(addr)));
}
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cGranule(JNIEnv*, jclass) {
  return static_cast<jlong>(cd::kGranule);
}
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cSmallMin(JNIEnv*, jclass) { return cd::kSmallMin; }
JNIEXPORT jlong JNICALL Java_org_colors_WordsConformanceTest_cSmallMax(JNIEnv*, jclass) { return cd::kSmallMax; }

}  // extern "C"
