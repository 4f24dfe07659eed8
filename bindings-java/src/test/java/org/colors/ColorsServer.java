package org.colors;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * JUnit 5 extension: one real colors-server for the whole test run (started by the first test
 * class that uses it, stopped when the run ends), and helpers to start child JVMs.
 *
 * <p>The server binary is {@code $COLORS_SERVER_BIN}, else {@code <repo>/build/colors-server/colors-server};
 * it gets a unique {@code --name}, a socket in a temporary directory and a 64 MiB heap. The system
 * property {@code colors.socket} points this JVM at it, {@code COLORS_SOCKET} its children. Without
 * {@code COLORS_JNI_LIB} / {@code -Dcolors.jni.library}, the JNI library of {@code <repo>/build} is used.
 */
public final class ColorsServer implements BeforeAllCallback {
  static final Path REPO = repo();

  private static Path repo() {
    String base = System.getProperty("basedir", System.getProperty("user.dir"));
    return Path.of(base).toAbsolutePath().getParent();
  }

  private static volatile Server server;

  @Override
  public void beforeAll(ExtensionContext context) {
    context.getRoot().getStore(ExtensionContext.Namespace.GLOBAL).getOrComputeIfAbsent("colors-server", k -> {
      Server s = new Server();
      System.setProperty(SharedMemory.SOCKET_PROPERTY, s.socket.toString());
      server = s;
      return s;
    }, Server.class);
  }

  /** The running server (started by the extension). */
  static Server server() {
    if (server == null) throw new IllegalStateException("annotate the test class with @ExtendWith(ColorsServer.class)");
    return server;
  }

  static String jniLibrary() {
    String p = System.getProperty(Native.LIBRARY_PROPERTY);
    if (p != null && !p.isEmpty()) return p;
    p = System.getenv(Native.LIBRARY_ENV);
    if (p != null && !p.isEmpty()) return p;
    return REPO.resolve("build/bindings-java/libcolors_jni.so").toString();
  }

  /**
   * Loads the test-only library of libshared's definitions that Java copies (CMake target
   * colors_conformance, beside the JNI library), whose natives the conformance tests declare.
   */
  static synchronized void loadConformanceLibrary() {
    Path lib = Path.of(jniLibrary()).resolveSibling("libcolors_conformance.so");
    if (!Files.exists(lib)) {
      throw new IllegalStateException(lib + " is missing: build the CMake target colors_conformance"
          + " (bindings-java/run-tests.sh builds every target)");
    }
    System.load(lib.toString());
  }

  static Path serverBinary() {
    String p = System.getenv("COLORS_SERVER_BIN");
    Path bin = p != null && !p.isEmpty() ? Path.of(p) : REPO.resolve("build/colors-server/colors-server");
    if (!Files.isExecutable(bin)) {
      throw new IllegalStateException("colors-server not found at " + bin + ": build it (make build) or set COLORS_SERVER_BIN");
    }
    return bin;
  }

  /**
   * A colors-server process started for tests. The extension starts one for the run; tests may
   * start their own (e.g. to stop it under a client), which this JVM does not attach to.
   */
  static final class Server implements ExtensionContext.Store.CloseableResource {
    final Path dir;
    final Path socket;
    final String name;
    final Process proc;
    /** Flags given after the usual ones. */
    final List<String> extraArgs;
    private final Path log;
    /** More environment for the children this server spawns. */
    final Map<String, String> childEnv = new java.util.HashMap<>();

    Server() {
      this("64M");
    }

    /** A server with an objects space of {@code heapSize} ({@code --heap-size}, e.g. "16M"). */
    Server(String heapSize) {
      this(heapSize, null, List.of(), Map.of());
    }

    /**
     * A server with more command-line flags after the usual ones (e.g. {@code --data-dir DIR},
     * {@code --heap-dir DIR}); its successors get them too.
     */
    Server(String heapSize, List<String> extraArgs) {
      this(heapSize, null, extraArgs, Map.of());
    }

    /** As {@link #Server(String, List)}, with more environment variables (e.g. a fault hook). */
    Server(String heapSize, List<String> extraArgs, Map<String, String> env) {
      this(heapSize, null, extraArgs, env);
    }

    /**
     * A successor of {@code predecessor}, a server that is gone: same name, socket and extra flags,
     * so it adopts the heap that server left (colors-server/README.md, "Surviving the server"), or
     * restores its newest checkpoint when that heap is gone and it has a data directory.
     */
    Server(Server predecessor) {
      this("16M", predecessor, predecessor.extraArgs, Map.of());
    }

    private Server(String heapSize, Server predecessor, List<String> extraArgs, Map<String, String> env) {
      try {
        if (System.getProperty(Native.LIBRARY_PROPERTY) == null && System.getenv(Native.LIBRARY_ENV) == null) {
          System.setProperty(Native.LIBRARY_PROPERTY, jniLibrary());
        }
        dir = predecessor != null ? predecessor.dir : Files.createTempDirectory("colors-java-");
        socket = dir.resolve("colors.sock");
        name = predecessor != null ? predecessor.name
                                   : "junit-" + ProcessHandle.current().pid() + "-" + UUID.randomUUID().toString().substring(0, 8);
        log = dir.resolve(predecessor != null ? "successor.log" : "server.log");
        this.extraArgs = List.copyOf(extraArgs);
        List<String> cmd = new ArrayList<>(List.of(serverBinary().toString(), "--name", name, "--socket",
            socket.toString(), "--heap-size", heapSize, "--log-level", "warn"));
        cmd.addAll(this.extraArgs);
        ProcessBuilder pb = new ProcessBuilder(cmd);
        pb.environment().putAll(env);
        pb.redirectError(log.toFile());
        proc = pb.start();
        Runtime.getRuntime().addShutdownHook(new Thread(this::kill));
        BufferedReader out = new BufferedReader(new InputStreamReader(proc.getInputStream(), StandardCharsets.UTF_8));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        for (;;) {
          String line = out.readLine();  // the server prints its ready line promptly, or exits
          if (line == null) {
            proc.waitFor(5, TimeUnit.SECONDS);
            throw new IllegalStateException("colors-server exited before it was ready: " + Files.readString(log));
          }
          if (line.startsWith("colors-server ready:")) break;
          if (System.nanoTime() > deadline) {
            kill();
            throw new IllegalStateException("colors-server did not print its ready line within 20 s");
          }
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
      } catch (IOException e) {
        throw new IllegalStateException("cannot start colors-server", e);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
    }

    /** Stops the server (SIGTERM, then SIGKILL after 10 s). */
    void kill() {
      if (proc.isAlive()) {
        proc.destroy();  // SIGTERM: the server removes its segment and socket
        try {
          if (!proc.waitFor(10, TimeUnit.SECONDS)) {
            proc.destroyForcibly();
            proc.waitFor(5, TimeUnit.SECONDS);
          }
        } catch (InterruptedException e) {
          proc.destroyForcibly();
        }
      }
    }

    @Override
    public void close() throws IOException {
      if (this == server) SharedMemory.detach();
      kill();
      Files.deleteIfExists(log);
      Files.deleteIfExists(socket);
      Files.deleteIfExists(Path.of(socket + ".lock"));
      try {
        Files.deleteIfExists(dir);
      } catch (java.nio.file.DirectoryNotEmptyException e) {
        // a successor of this server (same dir) is still there; its close() removes the dir
      }
      // A server killed with SIGKILL leaves its heap and the name's lock in its heap directory
      // (colors-server/README.md): remove ours.
      Files.deleteIfExists(heapFile());
      Files.deleteIfExists(heapDir().resolve(name + ".lock"));
    }

    /** Its heap directory: {@code --heap-dir} among the extra flags, else /dev/shm/colors-EUID. */
    Path heapDir() throws IOException {
      int i = extraArgs.indexOf("--heap-dir");
      if (i >= 0 && i + 1 < extraArgs.size()) return Path.of(extraArgs.get(i + 1));
      return Path.of("/dev/shm/colors-" + Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
    }

    /** The segment file of its heap, {@code <heap dir>/<name>.heap}. */
    Path heapFile() throws IOException {
      return heapDir().resolve(name + ".heap");
    }

    /** Starts {@code java org.colors.ChildMain args...} with the test class path and COLORS_SOCKET. */
    Process spawn(String... args) throws IOException {
      return spawnWithSocket(socket.toString(), args);
    }

    Process spawnWithSocket(String socketPath, String... args) throws IOException {
      return spawnJvm(List.of(), socketPath, args);
    }

    /**
     * Starts {@code java jvmArgs... org.colors.ChildMain args...} attached to this server (through
     * COLORS_SOCKET), with the test class path, the JNI library and this JVM's colors agent.
     */
    Process spawnWithAgent(List<String> jvmArgs, String... args) throws IOException {
      List<String> all = new ArrayList<>(jvmArgs);
      for (String a : java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments()) {
        if (a.startsWith("-javaagent:")) all.add(a);
      }
      return spawnJvm(all, socket.toString(), args);
    }

    private Process spawnJvm(List<String> jvmArgs, String socketPath, String... args) throws IOException {
      String cp = System.getProperty("colors.test.classpath");
      if (cp == null || cp.isEmpty()) cp = System.getProperty("java.class.path");
      List<String> cmd = new ArrayList<>();
      cmd.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
      cmd.add("-Xshare:auto");
      cmd.add("-XX:TieredStopAtLevel=1");  // children are short-lived: start fast
      cmd.add("--enable-native-access=ALL-UNNAMED");  // no System.load warning on JDK 22+
      cmd.addAll(jvmArgs);
      cmd.add("-cp");
      cmd.add(cp);
      cmd.add("-D" + Native.LIBRARY_PROPERTY + "=" + jniLibrary());
      cmd.add(ChildMain.class.getName());
      cmd.addAll(Arrays.asList(args));
      ProcessBuilder pb = new ProcessBuilder(cmd);
      Map<String, String> env = pb.environment();
      env.put("COLORS_SOCKET", socketPath);
      env.putAll(childEnv);
      pb.redirectError(ProcessBuilder.Redirect.INHERIT);
      return pb.start();
    }

    File logFile() {
      return log.toFile();
    }
  }
}
