package demo;

import java.util.List;
import org.colors.SharedMemory;
import org.colors.SharedObject;
import org.colors.rpc.RpcServer;

/**
 * The audit service of {@code make demo} (Java): serves the rpc endpoint "audit", whose method
 * {@code report(staff)} reads the shared staff list the C++ and Python processes work on (no
 * copy, no serialization) and answers with a summary. Exits when stdin closes.
 */
public final class Audit {
    private Audit() {}

    /** The served methods. */
    public static final class Service {
        public String report(List<Object> staff) {
            double total = 0;
            StringBuilder moved = new StringBuilder();
            for (Object o : staff) {
                SharedObject e = (SharedObject) o;  // a demo.Employee made by the C++ process
                total += e.getDouble("salary");
                if (e.hasField("state")) moved.append(e.getString("name")).append(" in ").append(e.getString("state"));
            }
            return String.format("%d employees, payroll %.1f%s", staff.size(), total,
                    moved.length() > 0 ? ", " + moved : "");
        }
    }

    public static void main(String[] args) throws Exception {
        SharedMemory.attach();
        try (RpcServer server = RpcServer.serve("audit", new Service())) {
            System.out.println("[audit " + ProcessHandle.current().pid() + " java] serving rpc endpoint 'audit'");
            System.out.flush();
            while (System.in.read() != -1) {
                // runs until the demo closes our stdin
            }
        }
        SharedMemory.detach();
    }
}
