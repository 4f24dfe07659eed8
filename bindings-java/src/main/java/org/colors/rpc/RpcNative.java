package org.colors.rpc;

import org.colors.RpcSupport;

/**
 * The natives of remote calls (jni_rpc.cpp), registered by the JNI library's {@code JNI_OnLoad}.
 * Pointers to native objects travel as longs, owned by {@link RpcServer} and {@link RpcClient};
 * handles of shared lists as the {@code Handle} object (kept reachable during the call).
 */
final class RpcNative {
  private RpcNative() {}

  static {
    // Loads the library, which registers these natives. Not attaching here: the library's
    // JNI_OnLoad may be what initializes this class.
    RpcSupport.loadLibrary();
  }

  /** Attaches to the colors server if needed (every rpc object needs the heap). */
  static void init() {
    RpcSupport.ensureAttached();
  }

  static native long serverNew(String name, int queueCapacity);
  static native void serverClose(long server);
  static native void serverFree(long server);
  static native long workerNew();
  static native void workerFree(long worker);
  /**
   * {method, args...} of the next call, or null once the server is closing; an argument that is
   * a container or user object is {@code lazy}, to be made by {@link #workerArg}.
   */
  static native Object[] serverNext(long server, long worker, long spinNs, Object lazy);
  /**
   * Argument {@code index} of the worker's current call ({@code item} &lt; 0) or of item
   * {@code item} of its batch: its proxy, or with {@code transientProxy} a proxy outside the
   * identity cache, to be released by {@code RpcSupport.releaseTransient}.
   */
  static native Object workerArg(long worker, int item, int index, boolean transientProxy);
  /** Item {@code item} of the worker's current batch as {method, args...}, as serverNext gives a call. */
  static native Object[] workerBatchItem(long worker, int item, Object lazy);
  static native void workerReply(long worker, int tag, long bits, Object obj);
  static native void workerFail(long worker, String type, String message);

  static native long clientNew(String name, long spinNs);
  static native void clientFree(long client);
  static native boolean clientAlive(long client);
  static native Object clientCall(long client, String method, Object argsHandle, long timeoutMs);
  static native long clientSend(long client, String method, Object argsHandle);
  static native Object pendingGet(long pending, long timeoutMs);
  static native boolean pendingReady(long pending);
  static native void pendingFree(long pending);
}
