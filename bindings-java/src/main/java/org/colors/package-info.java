/**
 * The Java binding of colors: live objects shared between Java, Python and C++ processes through
 * the shared-memory heap of a {@code colors-server}.
 *
 * <p>Start at {@link org.colors.SharedMemory}: {@code copyToSharedMemory}, {@code allocate},
 * repositories ({@link org.colors.ObjectRepository}), channels ({@link org.colors.ObjectChannel}),
 * monitors ({@link org.colors.SharedMonitor}) and the collector. Shared containers are proxies
 * implementing the java.util interfaces ({@link org.colors.SharedList}, {@link org.colors.SharedMap},
 * {@link org.colors.SharedSet}); shared user objects are seen through {@link org.colors.SharedObject}.
 * Every failure is a {@link org.colors.SharedMemoryException}.
 */
package org.colors;
