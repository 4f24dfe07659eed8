// The C++ side of org.colors.WindowConformanceTest: libshared's windows for reads without a root
// (no_sweep_window_begin / no_sweep_window_end, objects.hpp) and the Metadata words they read,
// exported as JNI natives of the test class, so that the test compares Java's copy of the protocol
// (Direct.View.windowBegin / windowOpen) with the definitions themselves on the same memory.
// Part of the test-only library libcolors_conformance.so, never loaded by the binding.
#include <jni.h>

#include <cstddef>
#include <cstdint>

#include "layout.hpp"
#include "objects.hpp"

namespace cd = colors::detail;

namespace {
// `meta`: the address of memory the test allocated, sizeof(Metadata) bytes and 8-aligned, which the
// window functions read as a Metadata (only its collector words are ever set).
const cd::Metadata* meta_at(jlong meta) {
  return reinterpret_cast<const cd::Metadata*>(static_cast<std::uintptr_t>(meta));
}
}  // namespace

extern "C" {

JNIEXPORT jlong JNICALL Java_org_colors_WindowConformanceTest_cMetadataSize(JNIEnv*, jclass) {
  return static_cast<jlong>(sizeof(cd::Metadata));
}
JNIEXPORT jlong JNICALL Java_org_colors_WindowConformanceTest_cOffGcStarted(JNIEnv*, jclass) {
  return static_cast<jlong>(offsetof(cd::Metadata, gc_started_seq));
}
JNIEXPORT jlong JNICALL Java_org_colors_WindowConformanceTest_cOffGcDone(JNIEnv*, jclass) {
  return static_cast<jlong>(offsetof(cd::Metadata, gc_done_seq));
}
JNIEXPORT jlong JNICALL Java_org_colors_WindowConformanceTest_cOffGcPhase(JNIEnv*, jclass) {
  return static_cast<jlong>(offsetof(cd::Metadata, gc_phase));
}
// GcPhase's values: 0 idle, 1 marking, 2 sweeping.
JNIEXPORT jint JNICALL Java_org_colors_WindowConformanceTest_cPhase(JNIEnv*, jclass, jint which) {
  constexpr cd::GcPhase kPhases[] = {cd::GcPhase::kIdle, cd::GcPhase::kMarking, cd::GcPhase::kSweeping};
  return static_cast<jint>(kPhases[which]);
}
JNIEXPORT jlong JNICALL Java_org_colors_WindowConformanceTest_cWindowBegin(JNIEnv*, jclass, jlong meta) {
  return static_cast<jlong>(cd::no_sweep_window_begin(meta_at(meta)));
}
JNIEXPORT jboolean JNICALL Java_org_colors_WindowConformanceTest_cWindowEnd(JNIEnv*, jclass, jlong meta, jlong token) {
  return cd::no_sweep_window_end(meta_at(meta), static_cast<std::uint64_t>(token));
}

}  // extern "C"
