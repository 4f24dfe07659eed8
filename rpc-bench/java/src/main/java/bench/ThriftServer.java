package bench;

import bench.thrift.Bench;
import bench.thrift.Node;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import org.apache.thrift.protocol.TBinaryProtocol;
import org.apache.thrift.server.TThreadPoolServer;
import org.apache.thrift.transport.TServerSocket;
import org.apache.thrift.transport.TTransportException;
import org.apache.thrift.transport.layered.TFramedTransport;

/** The Thrift server: service Bench of thrift/bench.thrift, binary protocol, framed transport. */
final class ThriftServer implements Bench.Iface {
    private ThriftServer() {}

    static int start(int port) throws TTransportException {
        TServerSocket socket = new TServerSocket(new InetSocketAddress("127.0.0.1", port));
        TThreadPoolServer server = new TThreadPoolServer(new TThreadPoolServer.Args(socket)
                .processor(new Bench.Processor<>(new ThriftServer()))
                .transportFactory(new TFramedTransport.Factory())
                .protocolFactory(new TBinaryProtocol.Factory()));
        Thread t = new Thread(server::serve, "thrift-serve");
        t.setDaemon(true);
        t.start();
        return socket.getServerSocket().getLocalPort();
    }

    @Override
    public List<Boolean> bools(List<Boolean> v) {
        List<Boolean> out = new ArrayList<>(v.size());
        for (boolean b : v) {
            out.add(Derive.bool(b));
        }
        return out;
    }

    @Override
    public List<Long> ints(List<Long> v) {
        List<Long> out = new ArrayList<>(v.size());
        for (long x : v) {
            out.add(Derive.integer(x));
        }
        return out;
    }

    @Override
    public List<Double> floats(List<Double> v) {
        List<Double> out = new ArrayList<>(v.size());
        for (double x : v) {
            out.add(Derive.real(x));
        }
        return out;
    }

    @Override
    public List<String> strings(List<String> v) {
        List<String> out = new ArrayList<>(v.size());
        for (String s : v) {
            out.add(Derive.string(s));
        }
        return out;
    }

    @Override
    public List<Node> trees(List<Node> v) {
        List<Node> out = new ArrayList<>(v.size());
        for (Node n : v) {
            out.add(node(n));
        }
        return out;
    }

    static Node node(Node in) {
        Node out = new Node();
        out.setI(Derive.integer(in.getI()));
        out.setF(Derive.real(in.getF()));
        out.setB(Derive.bool(in.isB()));
        out.setS(Derive.string(in.getS()));
        if (in.isSetLeft()) {
            out.setLeft(node(in.getLeft()));
        }
        if (in.isSetRight()) {
            out.setRight(node(in.getRight()));
        }
        return out;
    }
}
