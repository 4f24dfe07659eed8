package fig61;

import oo7.Builder;
import oo7.Checks;
import oo7.Params;
import oo7.Schema;
import oo7.shared.Database;
import oo7.shared.SharedClasses;
import oo7.shared.SharedFactory;
import oo7.shared.SharedOps;
import org.colors.SharedMemory;
import org.colors.rpc.RpcServer;

/**
 * The Java server of Figure 6-1 (run with the colors agent, COLORS_SOCKET naming the heap):
 *
 * <pre>
 * fig61.Fig61Server [--size small|medium] [--seed N] [--adopt] [--endpoint NAME] [--grpc-port P]
 *                    [--repository NAME]
 * </pre>
 *
 * builds the OO7 database into its own shared objects and publishes it in {@code oo7.SIZE} (or
 * the repository NAME) ({@code --adopt}: serves the database already published there instead,
 * e.g. by {@code oo7/load --lang java}), checks it (T1's visits and visit order against the SPEC for seed
 * 42 small: a mismatch exits 1), then serves it over colors rpc (endpoint NAME, default
 * {@code oo7.fig61}, one serving thread) and gRPC (127.0.0.1, port P, default any), prints
 * {@code READY <grpc port>} and serves until its stdin ends.
 */
public final class Fig61Server {
  private Fig61Server() {}

  public static void main(String[] argv) throws Exception {
    String size = "small", endpoint = "oo7.fig61", repository = null;
    long seed = 42;
    int grpcPort = 0;
    boolean adopt = false;
    for (int i = 0; i < argv.length; i++) {
      String a = argv[i];
      switch (a) {
        case "--adopt" -> adopt = true;
        case "--size", "--seed", "--endpoint", "--grpc-port", "--repository" -> {
          if (i + 1 >= argv.length) usage(a + " needs a value");
          String v = argv[++i];
          try {
            switch (a) {
              case "--size" -> size = v;
              case "--seed" -> seed = Long.parseUnsignedLong(v);
              case "--endpoint" -> endpoint = v;
              case "--repository" -> repository = v;
              default -> grpcPort = Integer.parseInt(v);
            }
          } catch (NumberFormatException e) {
            usage(a + " needs a number, not '" + v + "'");
          }
        }
        default -> usage("unknown argument " + a);
      }
    }
    Params p;
    try {
      p = Params.of(size);
    } catch (IllegalArgumentException e) {
      usage(e.getMessage());
      return;
    }
    SharedMemory.attach();
    SharedClasses.register();
    Schema.Database db;
    String repo = repository != null ? repository : p.repository();
    if (adopt) {
      Object o = SharedMemory.findOrCreateRepository(repo).get();
      if (!(o instanceof Database)) {
        System.err.println("fig61-server: repository " + repo + " holds no oo7.Database (found " + o + "): run oo7/load first");
        System.exit(1);
      }
      db = (Database) o;
    } else {
      db = Builder.build(p, seed, new SharedFactory());
      SharedMemory.findOrCreateRepository(repo).set(db);
    }
    Checks.Summary s = Checks.summary(db, new SharedOps());
    System.out.println("fig61-server size=" + p.name() + " seed=" + Long.toUnsignedString(seed) + (adopt ? " adopted" : " built"));
    System.out.println(s.lines());
    Checks.Summary expected = Checks.expected(p, seed);
    if (expected != null && !expected.equals(s)) {
      System.err.println("fig61-server: the database does not match the SPEC: expected " + expected + ", found " + s);
      System.exit(1);
    }
    Oo7Service service = new Oo7Service((Database) db);
    RpcServer colors = RpcServer.serve(endpoint, new ColorsEndpoint(service), 1);
    int port = GrpcEndpoint.start(service, grpcPort);
    System.out.println("READY " + port);
    System.out.flush();
    while (System.in.read() != -1) {
      // the client closes our stdin when it is done (or dies)
    }
    colors.close();
    System.exit(0);
  }

  private static void usage(String why) {
    System.err.println("fig61-server: " + why);
    System.err.println("usage: fig61.Fig61Server [--size small|medium] [--seed N] [--adopt] [--endpoint NAME] [--grpc-port P] [--repository NAME]");
    System.exit(2);
  }
}
