package org.colors.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import org.colors.ColorsServer;
import org.colors.NotAttachedException;
import org.colors.SharedMemory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Faults in a serving thread: a call whose arguments cannot be converted, a handler that detaches. */
@ExtendWith(ColorsServer.class)
class RpcServerFaultTest {
  /** The served methods. */
  public static final class Adder {
    public long add(long a, long b) {
      return a + b;
    }
  }

  static final Duration T = Duration.ofSeconds(10);

  @AfterEach
  void noFault() {
    RpcServer.takeFault = null;
  }

  /** A served method that detaches this process from the heap. */
  public static final class Detacher {
    public Object detachMe(Object x) {
      SharedMemory.detach();
      return x;
    }
  }

  /**
   * A handler that detaches: its reply fails (the caller gets NotAttachedException) and the
   * serving thread ends, as at any detach. It used to die of an uncaught "no call to fail": the
   * reply had finished the call before throwing, and the thread then failed it a second time.
   */
  @Test
  void aHandlerThatDetachesEndsItsThreadWithoutAnUncaughtException() throws Exception {
    String name = "detacher-" + UUID.randomUUID().toString().substring(0, 8);
    List<Throwable> uncaught = new CopyOnWriteArrayList<>();
    Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> uncaught.add(e));
    try {
      RpcServer server = RpcServer.serve(name, new Detacher(), 1);
      RpcClient client = RpcClient.connect(name);
      assertThrows(NotAttachedException.class, () -> client.call(T, "detachMe", 5L));
      Thread.sleep(1000);  // the serving thread's end
      server.close();
      client.close();
      assertEquals(List.of(), uncaught, "no thread died of an uncaught exception");
    } finally {
      Thread.setDefaultUncaughtExceptionHandler(before);
      SharedMemory.attach();
    }
    try (RpcServer server = RpcServer.serve(name, new Adder(), 1);
         RpcClient client = RpcClient.connect(name)) {
      assertEquals(5L, ((Number) client.call(T, "add", 2L, 3L)).longValue(), "the endpoint serves again");
    }
  }

  @Test
  void aCallWhoseArgumentsFailToConvertFailsAndTheThreadServesOn() {
    String name = "fault-" + UUID.randomUUID().toString().substring(0, 8);
    AtomicInteger faults = new AtomicInteger(1);
    RpcServer.takeFault = () -> faults.getAndDecrement() > 0 ? new IllegalStateException("injected: no Java values") : null;
    try (RpcServer server = RpcServer.serve(name, new Adder(), 1);
         RpcClient client = RpcClient.connect(name)) {
      RemoteException e = assertThrows(RemoteException.class, () -> client.call(T, "add", 1L, 2L));
      assertEquals("java.lang.IllegalStateException", e.getRemoteType());
      assertEquals("injected: no Java values", e.getRemoteMessage());
      // The only serving thread is still there.
      assertEquals(5L, ((Number) client.call(T, "add", 2L, 3L)).longValue());
      assertEquals(9L, ((Number) client.call(T, "add", 4L, 5L)).longValue());
    }
  }

  /** A served method whose exception cannot say what it is. */
  public static final class Mute {
    public long fail() {
      throw new IllegalStateException() {
        @Override
        public String getMessage() {
          throw new UnsupportedOperationException("no message");
        }
      };
    }
  }

  /**
   * A handler exception whose getMessage() throws: failing the call threw too, and the caller got
   * "colors::Error: the Java server did not reply" with the exception's type lost.
   */
  @Test
  void aHandlerExceptionWhoseMessageThrowsKeepsItsType() {
    String name = "mute-" + UUID.randomUUID().toString().substring(0, 8);
    try (RpcServer server = RpcServer.serve(name, new Mute(), 1);
         RpcClient client = RpcClient.connect(name)) {
      RemoteException e = assertThrows(RemoteException.class, () -> client.call(T, "fail"));
      assertTrue(e.getRemoteType().startsWith(RpcServerFaultTest.class.getName() + "$Mute$"), e.getRemoteType());
      assertTrue(e.getRemoteMessage().contains("getMessage() threw java.lang.UnsupportedOperationException"),
          e.getRemoteMessage());
    }
  }

  /**
   * A detach while serving threads wait for calls: each of them died of an uncaught
   * NotAttachedException (a stack trace on stderr per thread) from freeing its worker.
   */
  @Test
  void aDetachEndsIdleServingThreadsWithoutAnUncaughtException() throws Exception {
    String name = "idle-" + UUID.randomUUID().toString().substring(0, 8);
    List<Throwable> uncaught = new CopyOnWriteArrayList<>();
    Thread.UncaughtExceptionHandler before = Thread.getDefaultUncaughtExceptionHandler();
    Thread.setDefaultUncaughtExceptionHandler((t, e) -> uncaught.add(e));
    try {
      RpcServer server = RpcServer.serve(name, new Adder(), 3);
      Thread.sleep(300);  // every thread waits for a call
      SharedMemory.detach();
      Thread.sleep(1000);  // the threads' end
      server.close();
      assertEquals(List.of(), uncaught, "no thread died of an uncaught exception");
    } finally {
      Thread.setDefaultUncaughtExceptionHandler(before);
      SharedMemory.attach();
    }
  }

  /** A negative timeout waited without limit (it became the "no limit" value). */
  @Test
  void aNegativeTimeoutIsRefused() {
    String name = "neg-" + UUID.randomUUID().toString().substring(0, 8);
    try (RpcServer server = RpcServer.serve(name, new Adder(), 1);
         RpcClient client = RpcClient.connect(name)) {
      assertThrows(IllegalArgumentException.class, () -> client.call(Duration.ofMillis(-1), "add", 1L, 2L));
      assertEquals(3L, ((Number) client.call(T, "add", 1L, 2L)).longValue());
    }
  }
}
