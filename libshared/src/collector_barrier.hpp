// The collector's barrier: an asymmetric fence between the collector's epoch flip and the
// mutators' root publication (gc/README.md, "Roots without a fence").
//
// A mutator publishes a root and then re-reads what it rooted (root_load), or reads the GC epoch
// to stamp an object it rooted (publish_object). Each needs the root store ordered before the
// later load (store-load order), which on x86 takes a full barrier (mfence or a locked
// instruction, ~20-40 cycles), paid on every reference read. Instead, the collector calls
// membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED) once per cycle, after the flip and before the root
// pass: the kernel makes every running thread of every registered process execute a full barrier.
// So a root store a mutator issued before that point is visible to the root pass, and a load it
// issues after that point sees the flip: either is what the mutator's own fence gave.
//
// Invariants:
//  * Metadata::collector_barrier is 1 only while the segment's collector calls collector_barrier()
//    after every flip, before its root pass (gc/collector.cpp). A server sets it at its start; one
//    that cannot call the barrier refuses to adopt a heap whose field is 1 (its clients may be
//    running without fences).
//  * A process takes roots without a fence (g_roots_unfenced) only while attached to a segment whose
//    field is 1 and after its own registration succeeded; anything else keeps the fenced paths,
//    which are correct under any collector.
//  * Unfenced root stores are still ordered by the compiler (a signal fence): the kernel's barrier
//    splits each thread's instruction stream in program order.
#pragma once
#include <atomic>

#include "layout.hpp"

namespace colors::detail {

// Whether this process's root stores may skip the hardware fence (roots.hpp). Written only by
// attach/detach, before any root of that attachment is taken and after the last one is dropped.
extern std::atomic<bool> g_roots_unfenced;

// Server: whether this kernel offers the barrier (queried once; COLORS_MEMBARRIER_FAULT=1 makes it
// answer no, for tests).
bool collector_barrier_available();
// Server's collector, after each flip. REQUIRES: collector_barrier_available(). Falls back to the
// slower MEMBARRIER_CMD_GLOBAL if the expedited command fails; aborts the process if both fail,
// because its clients may be relying on it (a successor then adopts the heap).
void collector_barrier();

// Client, at attach: registers this process for the barrier and turns unfenced roots on when the
// segment's collector issues it (and COLORS_FENCED_ROOTS is not set). Returns whether it did.
bool use_collector_barrier(const Metadata* m);
// At detach: fenced roots again.
void stop_using_collector_barrier();

}  // namespace colors::detail
