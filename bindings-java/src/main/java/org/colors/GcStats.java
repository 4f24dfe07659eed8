package org.colors;

/**
 * Statistics of one cycle of the server's shared-heap collector (times in nanoseconds, sizes in
 * bytes), from {@link SharedMemory#collect()} and {@link SharedMemory#gcStats()}.
 *
 * @param cycle number of cycles finished so far (0: none yet)
 * @param walkNs time of the heap walk
 * @param markNs time of the concurrent marking
 * @param remarkNs time of the final marking passes
 * @param sweepNs time of the sweep
 * @param totalNs time of the whole cycle
 * @param markingPasses number of marking passes
 * @param objectsMarked live objects found
 * @param bytesMarked bytes of the live objects
 * @param objectsFreed objects freed
 * @param bytesFreed bytes freed
 * @param heapUsedBefore heap in use when the cycle started
 * @param heapUsedAfter heap in use when it ended
 * @param largestFree largest free chunk after the cycle
 * @param threads collector threads
 * @param pendingObjects objects the remark took from the pending set (their references were
 *     overwritten or dropped since they were last considered)
 */
public record GcStats(long cycle, long walkNs, long markNs, long remarkNs, long sweepNs, long totalNs,
    long markingPasses, long objectsMarked, long bytesMarked, long objectsFreed, long bytesFreed,
    long heapUsedBefore, long heapUsedAfter, long largestFree, long threads, long pendingObjects) {

  static GcStats of(long[] f) {
    return new GcStats(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8], f[9], f[10], f[11], f[12], f[13], f[14],
        f[15]);
  }
}
