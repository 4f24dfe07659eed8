package org.colors.agent;

import java.lang.instrument.ClassFileTransformer;
import java.security.ProtectionDomain;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.objectweb.asm.ClassReader;
import org.objectweb.asm.ClassVisitor;
import org.objectweb.asm.ClassWriter;
import org.objectweb.asm.FieldVisitor;
import org.objectweb.asm.Label;
import org.objectweb.asm.MethodVisitor;
import org.objectweb.asm.Opcodes;
import org.objectweb.asm.Type;

/**
 * The class file transformer of the agent.
 *
 * <p>A class is <em>mapped</em> when it is annotated {@code @org.colors.Shared}, lies in one of the
 * agent's packages, or extends a mapped class (and is not an interface, enum, record or
 * annotation). A mapped class {@code C} gets:
 * <ul>
 *   <li>if its superclass is not mapped: the fields {@code transient SharedObject $colors$view}
 *       (null for private instances) and {@code transient long $colors$addr} (the shared object's
 *       address for the field fast path; 0 when private, -1 when bound without fast path), and
 *       {@code implements SharedInstance};
 *   <li>per own instance field {@code f} (not static/transient/synthetic): a
 *       {@code static final SharedField $colors$f$f} set by its static initializer (which also
 *       registers the class with its shared name) and two static accessors:
 *       {@code $colors$get$f(C)} and {@code $colors$set$f(C, value)}, which use the shared object
 *       (through the SharedField) when the instance is bound and the Java field otherwise; the
 *       field itself loses {@code final}, since its constructor's stores go through the setter;
 *   <li>per own reference field {@code f}: the read cache's field {@code transient volatile Object
 *       $colors$c$f} (org.colors.ReadCache: the proxy last read from {@code f}, which the getter
 *       hands back while {@code f} still refers to its object; the setter empties it), and a
 *       {@code $colors$forget()} that empties them (the superclass's first); the class with the
 *       binding fields also gets {@code $colors$address()}.
 * </ul>
 * In every class (mapped or not) each {@code GETFIELD}/{@code PUTFIELD} of a mapped field becomes
 * an {@code INVOKESTATIC} of the accessor (same stack effect, so the method's frames stay valid),
 * except a {@code PUTFIELD} naming the constructor's own class before its super/this constructor
 * call (it may store into the object under construction).
 */
final class Rewriter implements ClassFileTransformer {
  static final String VIEW = "$colors$view";
  static final String ADDR = "$colors$addr";
  /** Prefix of the read cache's field per reference field (org.colors.ReadCache). */
  static final String CACHED = "$colors$c$";
  static final String SHARED_INSTANCE_DESC = "Lorg/colors/SharedInstance;";
  static final String SHARED_OBJECT = "org/colors/SharedObject";
  static final String SHARED_OBJECT_DESC = "Lorg/colors/SharedObject;";
  static final String SHARED_FIELD = "org/colors/SharedField";
  static final String SHARED_FIELD_DESC = "Lorg/colors/SharedField;";
  static final String SHARED_INSTANCE = "org/colors/SharedInstance";

  private static final String[] EXCLUDED = {
    "java/", "javax/", "jdk/", "sun/", "com/sun/", "org/colors/agent/", "org/objectweb/asm/", "org/junit/",
    "org/apache/maven/", "org/opentest4j/", "org/apiguardian/",
  };

  /** Packages (internal form, with a trailing '/') whose classes are all mapped. */
  private final List<String> packages = new ArrayList<>();
  private final Map<ClassLoader, Map<String, Optional<ClassInfo>>> infos =
      Collections.synchronizedMap(new WeakHashMap<>());
  private final Map<String, Optional<ClassInfo>> bootInfos = new ConcurrentHashMap<>();
  private final boolean verbose = Boolean.getBoolean("colors.agent.verbose");

  Rewriter(String args) {
    if (args != null) {
      for (String p : args.split("[,;]")) {
        p = p.trim();
        if (!p.isEmpty()) packages.add(p.replace('.', '/') + "/");
      }
    }
  }

  private static boolean excluded(String name) {
    for (String p : EXCLUDED) {
      if (name.startsWith(p)) return true;
    }
    return false;
  }

  private Map<String, Optional<ClassInfo>> cache(ClassLoader loader) {
    if (loader == null) return bootInfos;
    return infos.computeIfAbsent(loader, l -> new ConcurrentHashMap<>());
  }

  ClassInfo info(ClassLoader loader, String name) {
    if (name == null) return null;
    Map<String, Optional<ClassInfo>> c = cache(loader);
    Optional<ClassInfo> i = c.get(name);
    if (i == null) {
      i = Optional.ofNullable(excluded(name) ? null : ClassInfo.read(loader, name));
      c.putIfAbsent(name, i);
    }
    return i.orElse(null);
  }

  boolean isMapped(ClassLoader loader, String name) {
    for (int depth = 0; name != null && depth < 64; depth++) {
      if (excluded(name)) return false;
      ClassInfo i = info(loader, name);
      if (i == null || !i.mappableKind()) return false;
      if (i.annotated) return true;
      for (String p : packages) {
        if (name.startsWith(p) && name.indexOf('/', p.length()) < 0) return true;
      }
      name = i.superName;
    }
    return false;
  }

  /** The mapped class declaring instance field {@code field} as seen from {@code owner}, or null. */
  String declaringMapped(ClassLoader loader, String owner, String field, String desc) {
    for (String c = owner; c != null && !excluded(c); ) {
      ClassInfo i = info(loader, c);
      if (i == null) return null;
      String d = i.declared.get(field);
      if (d != null) {
        return d.equals(desc) && i.fields.containsKey(field) && isMapped(loader, c) ? c : null;
      }
      c = i.superName;
    }
    return null;
  }

  @Override
  public byte[] transform(ClassLoader loader, String className, Class<?> redefined, ProtectionDomain pd,
      byte[] bytes) {
    if (className == null || excluded(className) || redefined != null) return null;
    try {
      ClassInfo self = ClassInfo.parse(bytes);
      cache(loader).put(className, Optional.of(self));
      ClassReader cr = new ClassReader(bytes);
      boolean mapped = isMapped(loader, className) && cr.readShort(6) >= Opcodes.V1_5;
      ClassWriter cw = new ClassWriter(cr, 0);
      ClassTransformer t = new ClassTransformer(cw, loader, self, mapped);
      cr.accept(t, 0);
      if (!mapped && !t.changed) return null;
      if (verbose) System.err.println("colors agent: rewrote " + className + (mapped ? " (mapped)" : ""));
      return cw.toByteArray();
    } catch (Throwable e) {
      System.err.println("colors agent: cannot rewrite " + className + ": " + e);
      if (verbose) e.printStackTrace();
      return null;
    }
  }

  // ---- one class -------------------------------------------------------------------------------

  private final class ClassTransformer extends ClassVisitor {
    final ClassLoader loader;
    final ClassInfo self;
    final boolean mapped;
    final boolean root;
    boolean changed;
    boolean sawClinit;

    ClassTransformer(ClassVisitor cv, ClassLoader loader, ClassInfo self, boolean mapped) {
      super(Opcodes.ASM9, cv);
      this.loader = loader;
      this.self = self;
      this.mapped = mapped;
      this.root = mapped && !isMapped(loader, self.superName);
    }

    @Override
    public void visit(int version, int access, String name, String signature, String superName, String[] itfs) {
      if (root) {
        String[] more = itfs == null ? new String[1] : Arrays.copyOf(itfs, itfs.length + 1);
        more[more.length - 1] = SHARED_INSTANCE;
        itfs = more;
      }
      super.visit(version, access, name, signature, superName, itfs);
    }

    @Override
    public FieldVisitor visitField(int access, String name, String desc, String signature, Object value) {
      // The constructor's stores into a mapped field become calls of its setter, and the JVM
      // refuses a store into a final field from any method but a constructor (IllegalAccessError):
      // a mapped field loses ACC_FINAL. (A final field javac treats as a constant, initialised with
      // a literal, is read as that literal by compiled code, not from the field: nothing to route.)
      if (mapped && (access & Opcodes.ACC_STATIC) == 0 && self.fields.containsKey(name)) {
        access &= ~Opcodes.ACC_FINAL;
        changed = true;
      }
      return super.visitField(access, name, desc, signature, value);
    }

    @Override
    public MethodVisitor visitMethod(int access, String name, String desc, String signature, String[] exceptions) {
      MethodVisitor mv = super.visitMethod(access, name, desc, signature, exceptions);
      if (mapped && "<clinit>".equals(name)) {
        sawClinit = true;
        mv = new ClinitInjector(mv);
      }
      return new FieldRewriter(mv, "<init>".equals(name), this);
    }

    @Override
    public void visitEnd() {
      if (mapped) {
        if (root) addBinding();
        List<String> cached = new ArrayList<>();
        for (Map.Entry<String, String> f : self.fields.entrySet()) {
          super.visitField(Opcodes.ACC_PRIVATE | Opcodes.ACC_STATIC | Opcodes.ACC_FINAL | Opcodes.ACC_SYNTHETIC,
              "$colors$f$" + f.getKey(), SHARED_FIELD_DESC, null, null).visitEnd();
          if (isReference(Type.getType(f.getValue()))) {
            // Private: only this class's generated accessors and $colors$forget use it.
            super.visitField(Opcodes.ACC_PRIVATE | Opcodes.ACC_TRANSIENT | Opcodes.ACC_VOLATILE | Opcodes.ACC_SYNTHETIC,
                CACHED + f.getKey(), "Ljava/lang/Object;", null, null).visitEnd();
            cached.add(f.getKey());
          }
          addGetter(f.getKey(), f.getValue());
          addSetter(f.getKey(), f.getValue());
        }
        if (root || !cached.isEmpty()) addForget(cached);
        if (!sawClinit) {
          MethodVisitor mv = super.visitMethod(Opcodes.ACC_STATIC, "<clinit>", "()V", null, null);
          mv.visitCode();
          emitRegistration(mv);
          mv.visitInsn(Opcodes.RETURN);
          mv.visitMaxs(2, 0);
          mv.visitEnd();
        }
      }
      super.visitEnd();
    }

    private String sharedName() {
      return self.sharedName.isEmpty() ? self.name.replace('/', '.') : self.sharedName;
    }

    void emitRegistration(MethodVisitor mv) {
      Type me = Type.getObjectType(self.name);
      mv.visitLdcInsn(me);
      mv.visitLdcInsn(sharedName());
      mv.visitMethodInsn(Opcodes.INVOKESTATIC, SHARED_FIELD, "register", "(Ljava/lang/Class;Ljava/lang/String;)V", false);
      for (String f : self.fields.keySet()) {
        mv.visitLdcInsn(me);
        mv.visitLdcInsn(f);
        mv.visitMethodInsn(Opcodes.INVOKESTATIC, SHARED_FIELD, "of",
            "(Ljava/lang/Class;Ljava/lang/String;)" + SHARED_FIELD_DESC, false);
        mv.visitFieldInsn(Opcodes.PUTSTATIC, self.name, "$colors$f$" + f, SHARED_FIELD_DESC);
      }
    }

    private void addBinding() {
      // Protected, not public: the view and the address are the binding's (reflection's getField
      // does not reach them), set only through $colors$bind, which checks what it stores. Mapped
      // subclasses' accessors read them through `this`.
      super.visitField(Opcodes.ACC_PROTECTED | Opcodes.ACC_TRANSIENT | Opcodes.ACC_SYNTHETIC, VIEW, SHARED_OBJECT_DESC,
          null, null).visitEnd();
      super.visitField(Opcodes.ACC_PROTECTED | Opcodes.ACC_TRANSIENT | Opcodes.ACC_SYNTHETIC, ADDR, "J", null, null)
          .visitEnd();
      MethodVisitor mv = super.visitMethod(Opcodes.ACC_PUBLIC, VIEW, "()" + SHARED_OBJECT_DESC, null, null);
      mv.visitCode();
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitFieldInsn(Opcodes.GETFIELD, self.name, VIEW, SHARED_OBJECT_DESC);
      mv.visitInsn(Opcodes.ARETURN);
      mv.visitMaxs(1, 1);
      mv.visitEnd();
      mv = super.visitMethod(Opcodes.ACC_PUBLIC, "$colors$address", "()J", null, null);
      mv.visitCode();
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitFieldInsn(Opcodes.GETFIELD, self.name, ADDR, "J");
      mv.visitInsn(Opcodes.LRETURN);
      mv.visitMaxs(2, 1);
      mv.visitEnd();
      mv = super.visitMethod(Opcodes.ACC_PUBLIC, "$colors$bind", "(" + SHARED_OBJECT_DESC + "J)V", null, null);
      mv.visitCode();
      // address = SharedField.bindAddress(view, address, this): throws, before anything is
      // stored, for a binding colors did not make.
      mv.visitVarInsn(Opcodes.ALOAD, 1);
      mv.visitVarInsn(Opcodes.LLOAD, 2);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitMethodInsn(Opcodes.INVOKESTATIC, SHARED_FIELD, "bindAddress",
          "(" + SHARED_OBJECT_DESC + "JLjava/lang/Object;)J", false);
      mv.visitVarInsn(Opcodes.LSTORE, 2);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(Opcodes.ALOAD, 1);
      mv.visitFieldInsn(Opcodes.PUTFIELD, self.name, VIEW, SHARED_OBJECT_DESC);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(Opcodes.LLOAD, 2);
      mv.visitFieldInsn(Opcodes.PUTFIELD, self.name, ADDR, "J");
      mv.visitInsn(Opcodes.RETURN);
      mv.visitMaxs(4, 4);
      mv.visitEnd();
    }

    /**
     * Loads the address into local {@code addrLocal} and jumps to {@code shared} when the instance
     * is bound (address non-zero: positive for the fast path, -1 for the JNI path); falls through
     * for a private instance. One field load on either path.
     */
    private void emitBoundCheck(MethodVisitor mv, int addrLocal, Label shared) {
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitFieldInsn(Opcodes.GETFIELD, self.name, ADDR, "J");
      mv.visitVarInsn(Opcodes.LSTORE, addrLocal);
      mv.visitVarInsn(Opcodes.LLOAD, addrLocal);
      mv.visitInsn(Opcodes.LCONST_0);
      mv.visitInsn(Opcodes.LCMP);
      mv.visitJumpInsn(Opcodes.IFNE, shared);
    }

    /**
     * {@code $colors$forget()}: the superclass's (when it is mapped), then null into each read
     * cache field of this class.
     */
    private void addForget(List<String> cached) {
      MethodVisitor mv = super.visitMethod(Opcodes.ACC_PUBLIC, "$colors$forget", "()V", null, null);
      mv.visitCode();
      if (!root) {
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitMethodInsn(Opcodes.INVOKESPECIAL, self.superName, "$colors$forget", "()V", false);
      }
      for (String f : cached) {
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitInsn(Opcodes.ACONST_NULL);
        mv.visitFieldInsn(Opcodes.PUTFIELD, self.name, CACHED + f, "Ljava/lang/Object;");
      }
      mv.visitInsn(Opcodes.RETURN);
      mv.visitMaxs(2, 1);
      mv.visitEnd();
    }

    /**
     * The getter of a reference field, through the read cache:
     * <pre>
     * if (self.$colors$addr == 0) return self.f;
     * Object c = self.$colors$c$f;
     * Object r = $colors$f$f.getObject(self, addr, c);
     * if (r != c) { Object k = $colors$f$f.cacheable(self, r); if (k != c) self.$colors$c$f = k; }
     * return (T) r;
     * </pre>
     */
    private void addReferenceGetter(String field, String desc) {
      Type t = Type.getType(desc);
      MethodVisitor mv = beginGetter(field, desc);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitFieldInsn(Opcodes.GETFIELD, self.name, CACHED + field, "Ljava/lang/Object;");
      mv.visitVarInsn(Opcodes.ASTORE, 3);
      mv.visitFieldInsn(Opcodes.GETSTATIC, self.name, "$colors$f$" + field, SHARED_FIELD_DESC);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(Opcodes.LLOAD, 1);
      mv.visitVarInsn(Opcodes.ALOAD, 3);
      mv.visitMethodInsn(Opcodes.INVOKEVIRTUAL, SHARED_FIELD, "getObject",
          "(" + SHARED_INSTANCE_DESC + "JLjava/lang/Object;)Ljava/lang/Object;", false);
      mv.visitVarInsn(Opcodes.ASTORE, 4);
      Label same = new Label();
      mv.visitVarInsn(Opcodes.ALOAD, 4);
      mv.visitVarInsn(Opcodes.ALOAD, 3);
      mv.visitJumpInsn(Opcodes.IF_ACMPEQ, same);
      mv.visitFieldInsn(Opcodes.GETSTATIC, self.name, "$colors$f$" + field, SHARED_FIELD_DESC);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(Opcodes.ALOAD, 4);
      mv.visitMethodInsn(Opcodes.INVOKEVIRTUAL, SHARED_FIELD, "cacheable",
          "(" + SHARED_INSTANCE_DESC + "Ljava/lang/Object;)Ljava/lang/Object;", false);
      mv.visitVarInsn(Opcodes.ASTORE, 5);
      mv.visitVarInsn(Opcodes.ALOAD, 5);
      mv.visitVarInsn(Opcodes.ALOAD, 3);
      mv.visitJumpInsn(Opcodes.IF_ACMPEQ, same);  // nothing to keep and nothing kept: no volatile store
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(Opcodes.ALOAD, 5);
      mv.visitFieldInsn(Opcodes.PUTFIELD, self.name, CACHED + field, "Ljava/lang/Object;");
      mv.visitLabel(same);
      mv.visitFrame(Opcodes.F_FULL, 4, new Object[] {self.name, Opcodes.LONG, "java/lang/Object", "java/lang/Object"},
          0, new Object[0]);
      mv.visitVarInsn(Opcodes.ALOAD, 4);
      mv.visitTypeInsn(Opcodes.CHECKCAST, t.getInternalName());
      mv.visitInsn(Opcodes.ARETURN);
      mv.visitMaxs(5, 6);
      mv.visitEnd();
    }

    /**
     * The start of {@code $colors$get$f(C self)}: a private instance returns its Java field; the
     * code after this runs for a bound one, with its address in locals 1-2 (the frame is emitted).
     */
    private MethodVisitor beginGetter(String field, String desc) {
      MethodVisitor mv = super.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC | Opcodes.ACC_SYNTHETIC,
          "$colors$get$" + field, "(L" + self.name + ";)" + desc, null, null);
      mv.visitCode();
      Label shared = new Label();
      emitBoundCheck(mv, 1, shared);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitFieldInsn(Opcodes.GETFIELD, self.name, field, desc);
      mv.visitInsn(Type.getType(desc).getOpcode(Opcodes.IRETURN));
      mv.visitLabel(shared);
      mv.visitFrame(Opcodes.F_FULL, 2, new Object[] {self.name, Opcodes.LONG}, 0, new Object[0]);
      return mv;
    }

    private void addGetter(String field, String desc) {
      Type t = Type.getType(desc);
      if (isReference(t)) {
        addReferenceGetter(field, desc);
        return;
      }
      MethodVisitor mv = beginGetter(field, desc);
      mv.visitFieldInsn(Opcodes.GETSTATIC, self.name, "$colors$f$" + field, SHARED_FIELD_DESC);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(Opcodes.LLOAD, 1);
      mv.visitMethodInsn(Opcodes.INVOKEVIRTUAL, SHARED_FIELD, "get" + accessorSuffix(t),
          "(" + SHARED_INSTANCE_DESC + "J)" + t.getDescriptor(), false);
      mv.visitInsn(t.getOpcode(Opcodes.IRETURN));
      mv.visitMaxs(4, 3);
      mv.visitEnd();
    }

    private void addSetter(String field, String desc) {
      Type t = Type.getType(desc);
      String selfDesc = "L" + self.name + ";";
      int addrLocal = 1 + t.getSize();
      MethodVisitor mv = super.visitMethod(Opcodes.ACC_PUBLIC | Opcodes.ACC_STATIC | Opcodes.ACC_SYNTHETIC,
          "$colors$set$" + field, "(" + selfDesc + desc + ")V", null, null);
      mv.visitCode();
      Label shared = new Label();
      emitBoundCheck(mv, addrLocal, shared);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(t.getOpcode(Opcodes.ILOAD), 1);
      mv.visitFieldInsn(Opcodes.PUTFIELD, self.name, field, desc);
      mv.visitInsn(Opcodes.RETURN);
      mv.visitLabel(shared);
      mv.visitFrame(Opcodes.F_FULL, 3, new Object[] {self.name, frameType(t), Opcodes.LONG}, 0, new Object[0]);
      if (isReference(t)) {  // what the read cache held of the old value goes
        mv.visitVarInsn(Opcodes.ALOAD, 0);
        mv.visitInsn(Opcodes.ACONST_NULL);
        mv.visitFieldInsn(Opcodes.PUTFIELD, self.name, CACHED + field, "Ljava/lang/Object;");
      }
      mv.visitFieldInsn(Opcodes.GETSTATIC, self.name, "$colors$f$" + field, SHARED_FIELD_DESC);
      mv.visitVarInsn(Opcodes.ALOAD, 0);
      mv.visitVarInsn(Opcodes.LLOAD, addrLocal);
      mv.visitVarInsn(t.getOpcode(Opcodes.ILOAD), 1);
      Type arg = isReference(t) ? Type.getType(Object.class) : t;
      mv.visitMethodInsn(Opcodes.INVOKEVIRTUAL, SHARED_FIELD, "set" + accessorSuffix(t),
          "(" + SHARED_INSTANCE_DESC + "J" + arg.getDescriptor() + ")V", false);
      mv.visitInsn(Opcodes.RETURN);
      mv.visitMaxs(4 + t.getSize(), addrLocal + 2);
      mv.visitEnd();
    }
  }

  static boolean isReference(Type t) {
    return t.getSort() == Type.OBJECT || t.getSort() == Type.ARRAY;
  }

  static String accessorSuffix(Type t) {
    switch (t.getSort()) {
      case Type.INT: return "Int";
      case Type.LONG: return "Long";
      case Type.SHORT: return "Short";
      case Type.BYTE: return "Byte";
      case Type.CHAR: return "Char";
      case Type.BOOLEAN: return "Boolean";
      case Type.FLOAT: return "Float";
      case Type.DOUBLE: return "Double";
      default: return "Object";
    }
  }

  static Object frameType(Type t) {
    switch (t.getSort()) {
      case Type.LONG: return Opcodes.LONG;
      case Type.FLOAT: return Opcodes.FLOAT;
      case Type.DOUBLE: return Opcodes.DOUBLE;
      case Type.OBJECT: return t.getInternalName();
      case Type.ARRAY: return t.getDescriptor();
      default: return Opcodes.INTEGER;
    }
  }

  /** Prepends the registration of the class and its fields to an existing static initializer. */
  private final class ClinitInjector extends MethodVisitor {
    ClinitInjector(MethodVisitor mv) {
      super(Opcodes.ASM9, mv);
    }


    @Override
    public void visitMaxs(int maxStack, int maxLocals) {
      super.visitMaxs(Math.max(maxStack, 2), maxLocals);
    }
  }

  /** Turns GETFIELD/PUTFIELD of mapped fields into calls of their accessors. */
  private final class FieldRewriter extends MethodVisitor {
    private final ClassTransformer ct;
    private boolean initDone;

    FieldRewriter(MethodVisitor mv, boolean constructor, ClassTransformer ct) {
      super(Opcodes.ASM9, mv);
      this.ct = ct;
      this.initDone = !constructor;
    }

    @Override
    public void visitCode() {
      super.visitCode();
      if (mv instanceof ClinitInjector) ct.emitRegistration(mv);
    }

    @Override
    public void visitMethodInsn(int opcode, String owner, String name, String desc, boolean itf) {
      super.visitMethodInsn(opcode, owner, name, desc, itf);
      if (opcode == Opcodes.INVOKESPECIAL && "<init>".equals(name)) initDone = true;
    }

    @Override
    public void visitFieldInsn(int opcode, String owner, String name, String desc) {
      // Before its super(...)/this(...) call a constructor may store into fields of the object
      // under construction (which the accessors, taking an initialised instance, cannot receive),
      // and only into those its own class names; it cannot read them (the verifier refuses a
      // GETFIELD on an uninitialised this). Every other access there, e.g. the arguments of a
      // copy constructor's this(o.name, o.salary), is an access to another, possibly bound, object.
      boolean mayBeUnbornThis = !initDone && opcode == Opcodes.PUTFIELD && owner.equals(ct.self.name);
      if (!mayBeUnbornThis && (opcode == Opcodes.GETFIELD || opcode == Opcodes.PUTFIELD) && !name.startsWith("$colors$")) {
        String decl = declaringMapped(ct.loader, owner, name, desc);
        if (decl != null) {
          ct.changed = true;
          String declDesc = "L" + decl + ";";
          if (opcode == Opcodes.GETFIELD) {
            super.visitMethodInsn(Opcodes.INVOKESTATIC, decl, "$colors$get$" + name, "(" + declDesc + ")" + desc, false);
          } else {
            super.visitMethodInsn(Opcodes.INVOKESTATIC, decl, "$colors$set$" + name, "(" + declDesc + desc + ")V", false);
          }
          return;
        }
      }
      super.visitFieldInsn(opcode, owner, name, desc);
    }
  }
}
