package bench;

import bench.pb.BoolList;
import bench.pb.FloatList;
import bench.pb.IntList;
import bench.pb.StringList;
import bench.pb.TreeList;
import com.google.protobuf.Message;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;

/**
 * Protocol Buffers over a plain TCP socket, as in the paper: a request is a method tag (1 byte),
 * the message length (4 bytes, big endian) and the serialized message; the reply is the length
 * and the serialized message. One thread per connection.
 */
final class ProtoTcpServer {
    static final int BOOLS = 1;
    static final int INTS = 2;
    static final int FLOATS = 3;
    static final int STRINGS = 4;
    static final int TREES = 5;

    private ProtoTcpServer() {}

    static int start(int port) throws IOException {
        ServerSocket listener = new ServerSocket(port, 16, InetAddress.getLoopbackAddress());
        Thread acceptor = new Thread(() -> {
            while (true) {
                try {
                    Socket s = listener.accept();
                    s.setTcpNoDelay(true);
                    Thread t = new Thread(() -> serve(s), "protobuf-tcp-conn");
                    t.setDaemon(true);
                    t.start();
                } catch (IOException e) {
                    return;
                }
            }
        }, "protobuf-tcp-accept");
        acceptor.setDaemon(true);
        acceptor.start();
        return listener.getLocalPort();
    }

    private static void serve(Socket s) {
        try (s;
             DataInputStream in = new DataInputStream(new BufferedInputStream(s.getInputStream(), 1 << 16));
             DataOutputStream out = new DataOutputStream(new BufferedOutputStream(s.getOutputStream(), 1 << 16))) {
            while (true) {
                int tag = in.read();
                if (tag < 0) {
                    return;
                }
                byte[] body = new byte[in.readInt()];
                in.readFully(body);
                Message reply = switch (tag) {
                    case BOOLS -> PbDerive.bools(BoolList.parseFrom(body));
                    case INTS -> PbDerive.ints(IntList.parseFrom(body));
                    case FLOATS -> PbDerive.floats(FloatList.parseFrom(body));
                    case STRINGS -> PbDerive.strings(StringList.parseFrom(body));
                    case TREES -> PbDerive.trees(TreeList.parseFrom(body));
                    default -> throw new IOException("unknown method tag " + tag);
                };
                out.writeInt(reply.getSerializedSize());
                reply.writeTo(out);
                out.flush();
            }
        } catch (EOFException e) {
            // client closed mid-message
        } catch (IOException e) {
            System.err.println("protobuf_tcp: " + e);
        }
    }
}
