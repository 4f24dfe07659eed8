package org.colors.agent;

import java.io.IOException;
import java.io.InputStream;
import java.util.LinkedHashMap;
import java.util.Map;
import org.objectweb.asm.AnnotationVisitor;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.FieldVisitor;
import org.objectweb.asm.Opcodes;

/**
 * What the agent knows of a class from its class file, without loading it: its superclass, whether
 * it is annotated {@code @org.colors.Shared} (and the shared name), and its instance fields.
 */
final class ClassInfo {
  static final String SHARED_DESC = "Lorg/colors/Shared;";

  final String name;
  final String superName;
  final int access;
  boolean annotated;
  String sharedName = "";
  /** Instance fields that map to shared fields: not static, not transient, not synthetic. */
  final Map<String, String> fields = new LinkedHashMap<>();
  /** Every declared instance field (name -> descriptor), mapped or not. */
  final Map<String, String> declared = new LinkedHashMap<>();

  private ClassInfo(String name, String superName, int access) {
    this.name = name;
    this.superName = superName;
    this.access = access;
  }

  /** Whether the class itself may be mapped at all (not an interface, enum, record, annotation). */
  boolean mappableKind() {
    if ((access & (Opcodes.ACC_INTERFACE | Opcodes.ACC_ENUM | Opcodes.ACC_ANNOTATION | Opcodes.ACC_MODULE)) != 0) {
      return false;
    }
    return !"java/lang/Record".equals(superName) && !"java/lang/Enum".equals(superName);
  }

  static ClassInfo parse(byte[] bytes) {
    ClassReader cr = new ClassReader(bytes);
    ClassInfo[] out = new ClassInfo[1];
    cr.accept(new ClassVisitor(Opcodes.ASM9) {
      @Override
      public void visit(int version, int access, String name, String signature, String superName, String[] itf) {
        out[0] = new ClassInfo(name, superName, access);
      }

      @Override
      public AnnotationVisitor visitAnnotation(String descriptor, boolean visible) {
        if (!SHARED_DESC.equals(descriptor)) return null;
        out[0].annotated = true;
        return new AnnotationVisitor(Opcodes.ASM9) {
          @Override
          public void visit(String key, Object value) {
            if ("name".equals(key) && value instanceof String) out[0].sharedName = (String) value;
          }
        };
      }

      @Override
      public FieldVisitor visitField(int access, String name, String desc, String signature, Object value) {
        if ((access & Opcodes.ACC_STATIC) == 0) {
          out[0].declared.put(name, desc);
          if ((access & (Opcodes.ACC_TRANSIENT | Opcodes.ACC_SYNTHETIC)) == 0 && !name.startsWith("$colors$")) {
            out[0].fields.put(name, desc);
          }
        }
        return null;
      }
    }, ClassReader.SKIP_CODE | ClassReader.SKIP_DEBUG | ClassReader.SKIP_FRAMES);
    return out[0];
  }

  static ClassInfo read(ClassLoader loader, String name) {
    ClassLoader l = loader != null ? loader : ClassLoader.getPlatformClassLoader();
    try (InputStream in = l.getResourceAsStream(name + ".class")) {
      if (in == null) return null;
      return parse(in.readAllBytes());
    } catch (IOException | RuntimeException e) {
      return null;
    }
  }
}
