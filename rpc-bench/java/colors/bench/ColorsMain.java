package bench;

/**
 * Entry point of the colors server of rpc-bench: {@code bench.ColorsMain}, run with the colors
 * agent ({@code -javaagent:colors-agent.jar}) and {@code COLORS_SOCKET} pointing at the heap.
 * Serves the endpoint "bench", prints {@code READY 0} (no port: calls go through the heap) and
 * exits when stdin reaches end of file, like {@link Server}.
 */
public final class ColorsMain {
    private ColorsMain() {}

    public static void main(String[] args) throws Exception {
        ColorsServer.start();
        System.out.println("READY 0");
        System.out.flush();
        while (System.in.read() != -1) {
            // the harness closes our stdin when it is done (or dies)
        }
        System.exit(0);
    }
}
