package bench;

import java.util.List;
import org.colors.Shared;
import org.colors.SharedMemory;
import org.colors.rpc.ByValue;
import org.colors.rpc.RpcServer;

/**
 * The colors server of the benchmark: the rpc endpoint "bench" on the heap of the colors-server
 * at $COLORS_SOCKET. Each method takes the client's shared list and returns a new shared list
 * built by the rules of {@link Derive}; nothing is serialized. Scalar lists and trees arrive as
 * private copies made in one native call and go back by one native call each.
 */
final class ColorsServer {
    private ColorsServer() {}

    /** A tree node: the shared class bench.Node, whose instances the agent binds to the heap. */
    @Shared(name = "bench.Node")
    public static final class Node {
        public long i;
        public double f;
        public boolean b;
        public String s;
        public Node left;
        public Node right;
    }

    /** The served methods (public: org.colors.rpc dispatches by name). */
    public static final class Handler {
        // Scalar lists arrive as private arrays (one native read of the shared list) and go back
        // as private arrays, which the binding builds into a new shared list in one native call.
        public boolean[] bools(boolean[] xs) {
            boolean[] out = new boolean[xs.length];
            for (int k = 0; k < xs.length; k++) out[k] = Derive.bool(xs[k]);
            return out;
        }

        public long[] ints(long[] xs) {
            long[] out = new long[xs.length];
            for (int k = 0; k < xs.length; k++) out[k] = Derive.integer(xs[k]);
            return out;
        }

        public double[] floats(double[] xs) {
            double[] out = new double[xs.length];
            for (int k = 0; k < xs.length; k++) out[k] = Derive.real(xs[k]);
            return out;
        }

        public String[] strings(String[] xs) {
            String[] out = new String[xs.length];
            for (int k = 0; k < xs.length; k++) out[k] = Derive.string(xs[k]);
            return out;
        }

        // Trees in the natural private style: the argument arrives as private Nodes made from the
        // shared list in one native call (@ByValue: the reachable shared graph is flattened natively
        // and the instances built in Java), the derivation works on plain Java objects (`new Node()`
        // is a private instance, its fields Java fields), and the returned array is copied into a new
        // shared list of bench.Node objects in one native call (the reply path's bulk copy). No byte
        // format is involved: both copies go object by object between the JVM and the shared heap.
        public Node[] trees(@ByValue Node[] xs) {
            Node[] out = new Node[xs.length];
            for (int k = 0; k < xs.length; k++) out[k] = derivePrivate(xs[k]);
            return out;
        }

        private static Node derivePrivate(Node p) {
            Node q = new Node();
            q.i = Derive.integer(p.i);
            q.f = Derive.real(p.f);
            q.b = Derive.bool(p.b);
            q.s = Derive.string(p.s);
            if (p.left != null) q.left = derivePrivate(p.left);
            if (p.right != null) q.right = derivePrivate(p.right);
            return q;
        }

        // The same work in place, on the shared objects themselves: the input's Nodes are bound to
        // the caller's shared objects, every field access reads or writes shared memory (the agent),
        // and each new node is a shared object from the start (SharedMemory.allocate). Not used by
        // the harness; it is what bindings-java's TreeBench measures as its "shared" case.
        public List<Object> treesInPlace(List<Object> xs) {
            int n = xs.size();
            List<Object> out = newList(n);
            for (int k = 0; k < n; k++) out.add(derive((Node) xs.get(k)));
            return out;
        }

        // Plain Java field accesses: the colors agent turns them into shared reads and writes.
        private static Node derive(Node p) {
            Node q = SharedMemory.allocate(Node.class);
            q.i = Derive.integer(p.i);
            q.f = Derive.real(p.f);
            q.b = Derive.bool(p.b);
            q.s = Derive.string(p.s);
            if (p.left != null) q.left = derive(p.left);
            if (p.right != null) q.right = derive(p.right);
            return q;
        }

        @SuppressWarnings("unchecked")
        private static List<Object> newList(int n) {
            return SharedMemory.allocate(List.class, n);
        }
    }

    /** Attaches ($COLORS_SOCKET) and serves "bench" with one thread; returns 0 (no port). */
    static int start() throws ClassNotFoundException {
        // A @Shared class named differently from its Java name is mapped once initialised.
        Class.forName(Node.class.getName(), true, Node.class.getClassLoader());
        SharedMemory.attach();
        RpcServer.serve("bench", new Handler());
        return 0;
    }
}
