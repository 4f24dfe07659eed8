package org.colors;

/**
 * Occupancy of the shared heap, from {@link SharedMemory#heapStats()} (sizes in bytes).
 *
 * @param capacity size of the objects space
 * @param freeBytes bytes on the free list
 * @param freeChunks chunks on the free list
 * @param largestFree largest free chunk
 * @param allocatedBytesTotal bytes allocated since the server started
 */
public record HeapStats(long capacity, long freeBytes, long freeChunks, long largestFree, long allocatedBytesTotal) {
  static HeapStats of(long[] f) {
    return new HeapStats(f[0], f[1], f[2], f[3], f[4]);
  }
}
