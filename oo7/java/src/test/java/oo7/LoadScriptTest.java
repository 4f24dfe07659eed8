package oo7;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import oo7.plain.PlainFactory;
import oo7.plain.PlainOps;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The contract's entry point, {@code bash oo7/java/load}, against a fresh server; and its option errors. */
@ExtendWith(Oo7Server.class)
class LoadScriptTest {
  private record Run(int rc, String out) {}

  private static Run load(String... args) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<>(List.of("bash", Oo7Server.REPO.resolve("oo7/java/load").toString()));
    cmd.addAll(List.of(args));
    Process p = Oo7Server.process(cmd).start();  // stderr into stdout
    p.getOutputStream().close();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "load did not finish");
    return new Run(p.exitValue(), out);
  }

  @Test
  void loadPublishesChecksAndRunsOperations() throws Exception {
    Run r = load("--private");
    assertEquals(0, r.rc(), r.out());
    assertTrue(r.out().contains("oo7 size=small seed=42 lang=java\n" + Checks.SMALL_42.lines() + "\n"), r.out());
    assertTrue(r.out().contains("private " + Checks.SMALL_42.lines().replace("\n", " ")), r.out());

    OpResult q7 = new PlainOps().q7(Builder.build(Params.SMALL, 42, new PlainFactory()));
    Run op = load("--check", "--op", "q7", "--repeat", "2");
    assertEquals(0, op.rc(), op.out());
    String line = "op q7 count 10000 check " + Fold.hex(q7.check());
    assertEquals(2, op.out().lines().filter(line::equals).count(), op.out());
  }

  @Test
  void aDatabaseOfAnotherSeedFailsTheSeed42Check() throws Exception {
    Run r = load("--seed", "7");
    assertEquals(0, r.rc(), r.out());  // no expected values for seed 7: printed only
    Run c = load("--check");             // checked as seed 42
    assertEquals(1, c.rc(), c.out());
    assertTrue(c.out().contains("expected:\n" + Checks.SMALL_42.lines()), c.out());
  }

  @Test
  void badOptionsAreRefusedBeforeAnythingIsBuilt() {
    assertThrows(IllegalArgumentException.class, () -> Load.run(new String[] {"--size", "large"}));
    assertThrows(IllegalArgumentException.class, () -> Load.run(new String[] {"--seed", "-1"}));
    assertThrows(IllegalArgumentException.class, () -> Load.run(new String[] {"--op", "t1"}));
    assertThrows(IllegalArgumentException.class, () -> Load.run(new String[] {"--check", "--repeat", "0"}));
    assertThrows(IllegalArgumentException.class, () -> Load.run(new String[] {"--bogus"}));
  }
}
