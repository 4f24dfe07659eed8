package bench;

/**
 * Entry point of the rpc-bench Java servers: {@code bench.Server <framework> <port>}.
 *
 * <p>Starts the server of one framework on 127.0.0.1 (port 0: any free port), prints
 * {@code READY <port>} on stdout once it accepts connections, and exits when stdin reaches end of
 * file, so a server never outlives the harness that started it.
 */
public final class Server {
    private Server() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2) {
            System.err.println("usage: bench.Server <grpc|thrift|protobuf_tcp|rest> <port>");
            System.exit(2);
        }
        int port = Integer.parseInt(args[1]);
        int bound = switch (args[0]) {
            case "grpc" -> GrpcServer.start(port);
            case "thrift" -> ThriftServer.start(port);
            case "protobuf_tcp" -> ProtoTcpServer.start(port);
            case "rest" -> RestServer.start(port);
            default -> {
                System.err.println("bench.Server: unknown framework " + args[0]);
                System.exit(2);
                yield -1;
            }
        };
        System.out.println("READY " + bound);
        System.out.flush();
        while (System.in.read() != -1) {
            // the harness closes our stdin when it is done (or dies)
        }
        System.exit(0);
    }
}
