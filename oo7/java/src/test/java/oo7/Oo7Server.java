package oo7;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.colors.SharedMemory;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * JUnit 5 extension: a fresh colors-server for each test class (started before its first test,
 * stopped after its last), with a unique name, a socket in a temporary directory and a 128 MiB
 * heap; this JVM attaches to it ({@code -Dcolors.socket}), child processes get {@code COLORS_SOCKET}.
 * The server binary is {@code $COLORS_SERVER_BIN}, else {@code <repo>/build/colors-server/colors-server};
 * the JNI library {@code $COLORS_JNI_LIB}, else {@code <repo>/build/bindings-java/libcolors_jni.so}.
 */
public final class Oo7Server implements BeforeAllCallback, AfterAllCallback {
  static final Path REPO = Path.of(System.getProperty("oo7.repo", "../..")).toAbsolutePath().normalize();

  private static Path dir;
  private static Path socket;
  private static String name;
  private static Process proc;

  @Override
  public void beforeAll(ExtensionContext context) throws Exception {
    if (System.getProperty("colors.jni.library") == null && System.getenv("COLORS_JNI_LIB") == null) {
      System.setProperty("colors.jni.library", REPO.resolve("build/bindings-java/libcolors_jni.so").toString());
    }
    dir = Files.createTempDirectory("oo7-java-");
    socket = dir.resolve("colors.sock");
    name = "oo7j-" + ProcessHandle.current().pid() + "-" + UUID.randomUUID().toString().substring(0, 8);
    ProcessBuilder pb = new ProcessBuilder(serverBinary().toString(), "--name", name, "--socket", socket.toString(),
        "--heap-size", "128M", "--log-level", "warn");
    pb.redirectError(dir.resolve("server.log").toFile());
    proc = pb.start();
    BufferedReader out = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8));
    for (;;) {
      String line = out.readLine();  // the server prints its ready line promptly, or exits
      if (line == null) {
        throw new IllegalStateException("colors-server exited before it was ready: "
            + Files.readString(dir.resolve("server.log")));
      }
      if (line.startsWith("colors-server ready:")) break;
    }
    Thread drain = new Thread(() -> {
      try {
        while (out.readLine() != null) {
          // discard
        }
      } catch (IOException e) {
        // server gone
      }
    }, "colors-server-stdout");
    drain.setDaemon(true);
    drain.start();
    SharedMemory.attach(socket);
  }

  @Override
  public void afterAll(ExtensionContext context) throws Exception {
    SharedMemory.detach();
    if (proc != null) {
      proc.destroy();  // SIGTERM: the server removes its segment and socket
      if (!proc.waitFor(10, TimeUnit.SECONDS)) {
        proc.destroyForcibly();
        proc.waitFor(5, TimeUnit.SECONDS);
      }
      proc = null;
    }
    if (dir == null) return;
    for (String f : new String[] {"server.log", "colors.sock", "colors.sock.lock"}) Files.deleteIfExists(dir.resolve(f));
    Files.deleteIfExists(dir);
    dir = null;
  }

  static Path serverBinary() {
    String p = System.getenv("COLORS_SERVER_BIN");
    Path bin = p != null && !p.isEmpty() ? Path.of(p) : REPO.resolve("build/colors-server/colors-server");
    if (!Files.isExecutable(bin)) {
      throw new IllegalStateException("colors-server not found at " + bin + ": build it or set COLORS_SERVER_BIN");
    }
    return bin;
  }

  static Path socket() {
    return socket;
  }

  /** A process attached to this class's server (COLORS_SOCKET), stderr into stdout. */
  static ProcessBuilder process(List<String> cmd) {
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().put("COLORS_SOCKET", socket.toString());
    pb.redirectErrorStream(true);
    return pb;
  }

  /** {@code java -javaagent:<agent> -cp <test class path> mainClass args...} attached to this class's server. */
  static ProcessBuilder javaProcess(String mainClass, String... args) {
    List<String> cmd = new ArrayList<>();
    cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    cmd.add("--enable-native-access=ALL-UNNAMED");
    cmd.add("-javaagent:" + System.getProperty("oo7.agent.jar"));
    cmd.add("-cp");
    cmd.add(System.getProperty("oo7.test.classpath", System.getProperty("java.class.path")));
    String lib = System.getProperty("colors.jni.library");
    if (lib != null) cmd.add("-Dcolors.jni.library=" + lib);
    cmd.add(mainClass);
    cmd.addAll(Arrays.asList(args));
    return process(cmd);
  }

  /** Output of a finished process; fails with it when the exit code is not 0. */
  static String runToEnd(ProcessBuilder pb, long timeoutSeconds) throws IOException, InterruptedException {
    Process p = pb.start();
    p.getOutputStream().close();
    byte[] out = p.getInputStream().readAllBytes();
    if (!p.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError(pb.command() + " did not finish in " + timeoutSeconds + " s");
    }
    String s = new String(out, StandardCharsets.UTF_8);
    if (p.exitValue() != 0) throw new AssertionError(pb.command() + " exited with " + p.exitValue() + ":\n" + s);
    return s;
  }
}
