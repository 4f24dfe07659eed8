package bench;

import bench.pb.BoolList;
import bench.pb.FloatList;
import bench.pb.IntList;
import bench.pb.Node;
import bench.pb.StringList;
import bench.pb.TreeList;

/** The server methods on protobuf messages (shared by the gRPC and the protobuf/TCP servers). */
final class PbDerive {
    private PbDerive() {}

    static BoolList bools(BoolList in) {
        BoolList.Builder out = BoolList.newBuilder();
        for (int k = 0, n = in.getVCount(); k < n; k++) {
            out.addV(Derive.bool(in.getV(k)));
        }
        return out.build();
    }

    static IntList ints(IntList in) {
        IntList.Builder out = IntList.newBuilder();
        for (int k = 0, n = in.getVCount(); k < n; k++) {
            out.addV(Derive.integer(in.getV(k)));
        }
        return out.build();
    }

    static FloatList floats(FloatList in) {
        FloatList.Builder out = FloatList.newBuilder();
        for (int k = 0, n = in.getVCount(); k < n; k++) {
            out.addV(Derive.real(in.getV(k)));
        }
        return out.build();
    }

    static StringList strings(StringList in) {
        StringList.Builder out = StringList.newBuilder();
        for (int k = 0, n = in.getVCount(); k < n; k++) {
            out.addV(Derive.string(in.getV(k)));
        }
        return out.build();
    }

    static TreeList trees(TreeList in) {
        TreeList.Builder out = TreeList.newBuilder();
        for (int k = 0, n = in.getVCount(); k < n; k++) {
            out.addV(node(in.getV(k)));
        }
        return out.build();
    }

    static Node node(Node in) {
        Node.Builder out = Node.newBuilder()
                .setI(Derive.integer(in.getI()))
                .setF(Derive.real(in.getF()))
                .setB(Derive.bool(in.getB()))
                .setS(Derive.string(in.getS()));
        if (in.hasLeft()) {
            out.setLeft(node(in.getLeft()));
        }
        if (in.hasRight()) {
            out.setRight(node(in.getRight()));
        }
        return out.build();
    }
}
