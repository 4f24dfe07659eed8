package oo7;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import oo7.plain.PlainFactory;
import oo7.plain.PlainOps;
import oo7.shared.SharedOps;
import org.colors.SharedMemory;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * A database another language built and published, read by Java: the SPEC's values, and every
 * operation with the results of the Java POJO model. Fails (with the reason) when that language's
 * loader is not there: {@code <repo>/oo7/python/load.py} (with colors_shm in
 * {@code $COLORS_PYTHONPATH}, default {@code <build>/bindings-python}) and {@code <build>/oo7/oo7-load}
 * ({@code $OO7_PYTHON_LOADER} and {@code $OO7_CPP_LOADER} name others).
 */
@ExtendWith(Oo7Server.class)
class CrossLanguageTest {
  private static Path buildDir() {
    String b = System.getenv("BUILD_DIR");
    return b != null && !b.isEmpty() ? Path.of(b).toAbsolutePath() : Oo7Server.REPO.resolve("build");
  }

  /** The loader named by the environment variable {@code env}, else {@code dflt}. */
  private static Path loader(String env, Path dflt) {
    String p = System.getenv(env);
    return p != null && !p.isEmpty() ? Path.of(p) : dflt;
  }

  @Test
  void readsTheDatabasePythonPublished() throws Exception {
    Path loader = loader("OO7_PYTHON_LOADER", Oo7Server.REPO.resolve("oo7/python/load.py"));
    assertTrue(Files.isRegularFile(loader), "no Python loader at " + loader);
    String pyPath = System.getenv("COLORS_PYTHONPATH");
    if (pyPath == null || pyPath.isEmpty()) pyPath = buildDir().resolve("bindings-python").toString();
    boolean hasBinding;
    try (var s = Files.list(Path.of(pyPath))) {
      hasBinding = s.anyMatch(p -> p.getFileName().toString().startsWith("colors_shm"));
    } catch (java.io.IOException e) {
      hasBinding = false;
    }
    assertTrue(hasBinding, "colors_shm is not built in " + pyPath + " (cmake --build <build> --target _colors_shm)");
    List<String> cmd = new ArrayList<>(List.of("python3", loader.toString(), "--size", "small", "--seed", "42"));
    ProcessBuilder pb = Oo7Server.process(cmd);
    pb.environment().put("PYTHONPATH", pyPath);
    pb.environment().put("PYTHONDONTWRITEBYTECODE", "1");
    checkPublished(Oo7Server.runToEnd(pb, 120), "python");
  }

  @Test
  void readsTheDatabaseCppPublished() throws Exception {
    Path loader = loader("OO7_CPP_LOADER", buildDir().resolve("oo7/oo7-load"));
    assertTrue(Files.isExecutable(loader), "no C++ loader at " + loader + " (cmake --build <build> --target oo7-load)");
    checkPublished(Oo7Server.runToEnd(Oo7Server.process(List.of(loader.toString(), "--size", "small", "--seed", "42")), 120),
        "cpp");
  }

  private static void checkPublished(String out, String lang) {
    assertTrue(out.contains("oo7 size=small seed=42 lang=" + lang), out);
    assertTrue(out.contains(Checks.SMALL_42.lines()), out);
    oo7.shared.SharedClasses.register();
    Schema.Database db = Load.published(Params.SMALL);
    assertTrue(SharedMemory.isObjectShared(db));
    assertEquals(Checks.SMALL_42, Checks.summary(db, new SharedOps()));
    Schema.Database mine = Builder.build(Params.SMALL, 42, new PlainFactory());
    Ops so = new SharedOps();
    Ops po = new PlainOps();
    for (String op : Ops.NAMES) assertEquals(po.run(op, mine), so.run(op, db), op);
    // T2a, T2b and T2c ran once each: the same swaps on both, so the fingerprints still agree.
    assertEquals(Checks.fingerprint(mine), Checks.fingerprint(db));
    // The indexes that loader published: sound, and the queries give what Java's give.
    assertTrue(out.contains("indexes ok"), out);
    org.colors.SharedSortedMap[] ix = Load.publishedIndexes(Params.SMALL);
    assertTrue(ix != null, lang + " published no indexes");
    assertEquals(List.of(), Queries.problems(db, ix[0], ix[1]));
    // The T2s above swapped x and y alike on both models: compare with the POJO model's indexes.
    java.util.Map<Object, Object> myById = new java.util.HashMap<>();
    java.util.TreeMap<Object, Object> myByDate = new java.util.TreeMap<>();
    Queries.build(mine, myById, myByDate, ArrayList::new);
    long parts = Queries.atomicParts(Params.SMALL);
    for (String q : List.of("q1", "q2", "q3")) {
      assertEquals(Queries.run(q, myById, myByDate, 42, parts), Queries.run(q, ix[0], ix[1], 42, parts), q);
    }
  }
}
