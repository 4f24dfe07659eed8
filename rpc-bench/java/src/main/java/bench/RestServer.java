package bench;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;

/**
 * REST: HTTP/1.1 + JSON with the JDK's HTTP server and Jackson. {@code POST /bench/<kind>} with a
 * JSON array (kind: bools, ints, floats, strings, trees) answers with a JSON array built by the
 * server; tree nodes are objects {@code {"i","f","b","s","left","right"}}, null at the leaves.
 */
final class RestServer {
    /** A tree node as Jackson binds it. */
    public static final class JsonNode {
        public long i;
        public double f;
        public boolean b;
        public String s;
        public JsonNode left;
        public JsonNode right;
    }

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private RestServer() {}

    static int start(int port) throws IOException {
        // Without TCP_NODELAY the JDK server's separate header and body writes meet delayed ACKs.
        System.setProperty("sun.net.httpserver.nodelay", "true");
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 16);
        server.createContext("/bench/", RestServer::handle);
        server.setExecutor(Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "rest-worker");
            t.setDaemon(true);
            return t;
        }));
        server.start();
        return server.getAddress().getPort();
    }

    private static void handle(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getPath();
            String kind = path.substring(path.lastIndexOf('/') + 1);
            byte[] reply;
            try (InputStream in = ex.getRequestBody()) {
                reply = switch (kind) {
                    case "bools" -> MAPPER.writeValueAsBytes(bools(MAPPER.readValue(in, boolean[].class)));
                    case "ints" -> MAPPER.writeValueAsBytes(ints(MAPPER.readValue(in, long[].class)));
                    case "floats" -> MAPPER.writeValueAsBytes(floats(MAPPER.readValue(in, double[].class)));
                    case "strings" -> MAPPER.writeValueAsBytes(strings(MAPPER.readValue(in, String[].class)));
                    case "trees" -> MAPPER.writeValueAsBytes(trees(MAPPER.readValue(in, JsonNode[].class)));
                    default -> null;
                };
            }
            if (reply == null) {
                ex.sendResponseHeaders(404, -1);
                return;
            }
            ex.getResponseHeaders().set("Content-Type", "application/json");
            ex.sendResponseHeaders(200, reply.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(reply);
            }
        }
    }

    static boolean[] bools(boolean[] v) {
        boolean[] out = new boolean[v.length];
        for (int k = 0; k < v.length; k++) {
            out[k] = Derive.bool(v[k]);
        }
        return out;
    }

    static long[] ints(long[] v) {
        long[] out = new long[v.length];
        for (int k = 0; k < v.length; k++) {
            out[k] = Derive.integer(v[k]);
        }
        return out;
    }

    static double[] floats(double[] v) {
        double[] out = new double[v.length];
        for (int k = 0; k < v.length; k++) {
            out[k] = Derive.real(v[k]);
        }
        return out;
    }

    static String[] strings(String[] v) {
        String[] out = new String[v.length];
        for (int k = 0; k < v.length; k++) {
            out[k] = Derive.string(v[k]);
        }
        return out;
    }

    static JsonNode[] trees(JsonNode[] v) {
        JsonNode[] out = new JsonNode[v.length];
        for (int k = 0; k < v.length; k++) {
            out[k] = node(v[k]);
        }
        return out;
    }

    static JsonNode node(JsonNode in) {
        JsonNode out = new JsonNode();
        out.i = Derive.integer(in.i);
        out.f = Derive.real(in.f);
        out.b = Derive.bool(in.b);
        out.s = Derive.string(in.s);
        out.left = in.left == null ? null : node(in.left);
        out.right = in.right == null ? null : node(in.right);
        return out;
    }
}
