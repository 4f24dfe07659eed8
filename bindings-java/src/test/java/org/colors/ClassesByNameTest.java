package org.colors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;

import java.io.IOException;
import java.io.InputStream;
import org.junit.jupiter.api.Test;

/** The readers' memo of Java classes by name: answers, remembered misses, and their expiry. */
class ClassesByNameTest {
  /** The class a {@link GrowingLoader} learns to define. */
  static final class Probe {}

  /** A loader that sees {@link Probe}'s name only once {@code visible} is set (no parent). */
  static final class GrowingLoader extends ClassLoader {
    volatile boolean visible;
    int lookups;

    GrowingLoader() {
      super(null);
    }

    @Override
    protected Class<?> findClass(String name) throws ClassNotFoundException {
      lookups++;
      if (!visible || !name.equals(Probe.class.getName())) throw new ClassNotFoundException(name);
      try (InputStream in = ClassesByNameTest.class.getResourceAsStream("ClassesByNameTest$Probe.class")) {
        byte[] b = in.readAllBytes();
        return defineClass(name, b, 0, b.length);
      } catch (IOException e) {
        throw new ClassNotFoundException(name, e);
      }
    }
  }

  @Test
  void findsClassesThroughTheGivenLoader() {
    assertSame(String.class, ClassesByName.find("java.lang.String", null));
    ClassLoader app = ClassesByNameTest.class.getClassLoader();
    assertSame(Probe.class, ClassesByName.find(Probe.class.getName(), app));
    assertSame(Probe.class, ClassesByName.find(Probe.class.getName(), app));
    assertNull(ClassesByName.find("org.colors.NoSuchClassAnywhere", app));
    assertNull(ClassesByName.find(Probe.class.getName(), null));  // the bootstrap loader does not see it
  }

  @Test
  void aMissIsRememberedUntilItsRetryTime() throws InterruptedException {
    GrowingLoader loader = new GrowingLoader();
    String name = Probe.class.getName();
    assertNull(ClassesByName.find(name, loader));
    int after = loader.lookups;
    loader.visible = true;
    assertNull(ClassesByName.find(name, loader));  // remembered: the loader is not asked again
    assertEquals(after, loader.lookups);
    Thread.sleep(ClassesByName.RETRY_NANOS / 1_000_000 + 50);
    Class<?> c = ClassesByName.find(name, loader);
    assertNotNull(c);
    assertSame(loader, c.getClassLoader());
    assertSame(c, ClassesByName.find(name, loader));
  }
}
