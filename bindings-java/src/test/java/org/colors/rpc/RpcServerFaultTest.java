package org.colors.rpc;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;
import org.colors.ColorsServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Fault injection into a serving thread: a call whose arguments cannot be converted. */
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
}
