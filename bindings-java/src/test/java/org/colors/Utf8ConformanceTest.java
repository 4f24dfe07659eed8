package org.colors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Java's UTF-8 encoder ({@link BulkWriter#utf8}: the bulk copies (rpc arguments and replies included) hand
 * its bytes to the natives as they are) against the JNI library's ({@code java_to_utf8}, every
 * other string store), byte for byte: the same bytes in the heap for every string, and the same
 * refusal of a lone surrogate.
 */
@ExtendWith(ColorsServer.class)
class Utf8ConformanceTest {
  /** The bytes the JNI path stored for {@code s}, read from the heap as they are. */
  private static byte[] storedByJni(SharedObject so, String s) {
    so.set("s", s);
    Direct.View v = Direct.viewFor(so.handle);
    long obj = so.handle.raw;
    long slot = v.slotAddress(obj, (int) Direct.resolve(v.classOf(obj), "s")[0]);
    long w = v.load(slot);
    int n = (int) v.loadRelaxed(w + v.offStringLength);
    byte[] b = new byte[n];
    for (int i = 0; i < n; i++) b[i] = v.loadByte(w + v.offStringBytes + i);
    return b;
  }

  private static byte[] encodedInJava(String s) {
    byte[] b = new byte[3 * s.length()];
    int end = BulkWriter.utf8(s, b, 0);
    return end < 0 ? null : Arrays.copyOf(b, end);
  }

  @Test
  void bothEncodersWriteTheSameBytesAndRefuseTheSameStrings() {
    Map<String, SharedType.Kind> fields = new LinkedHashMap<>();
    fields.put("s", SharedType.Kind.STRING);
    SharedObject so = SharedMemory.allocateObject(SharedMemory.defineClass("test.Utf8Probe", fields));
    List<String> strings = new ArrayList<>(List.of("", "a", "\0", "\u007f", "\u0080", "\u07ff", "\u0800", "\uffff",
        "\ud800\udc00", "\udbff\udfff", "x\ud83d\ude00y", "\ud800", "\udc00", "a\ud800", "\udc00\ud800", "\ud800\ud800"));
    // Random strings over every UTF-16 unit, surrogates included (so lone ones too), and over the
    // units near each encoding's boundaries.
    SplittableRandom rnd = new SplittableRandom(20261128);
    char[] near = {0, 0x7f, 0x80, 0x7ff, 0x800, 0xd7ff, 0xd800, 0xdbff, 0xdc00, 0xdfff, 0xe000, 0xfffe, 0xffff};
    for (int k = 0; k < 3000; k++) {
      char[] c = new char[rnd.nextInt(12)];
      for (int i = 0; i < c.length; i++) {
        c[i] = rnd.nextBoolean() ? (char) rnd.nextInt(0x10000) : near[rnd.nextInt(near.length)];
      }
      strings.add(new String(c));
    }
    int refused = 0;
    for (String s : strings) {
      byte[] java = encodedInJava(s);
      if (java == null) {
        refused++;
        assertThrows(InvalidArgumentException.class, () -> so.set("s", s), "JNI stored a string Java refuses");
      } else {
        assertArrayEquals(storedByJni(so, s), java, () -> "encodings differ for " + s.chars().boxed().toList());
        assertEquals(s, so.get("s"));
      }
    }
    assertEquals(true, refused > 0 && refused < strings.size(), "the sample holds both kinds");
  }
}
