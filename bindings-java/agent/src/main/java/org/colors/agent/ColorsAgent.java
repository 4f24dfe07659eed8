package org.colors.agent;

import java.lang.instrument.Instrumentation;

/**
 * The colors agent: {@code java -javaagent:colors-agent.jar[=pkg1,pkg2] ...}.
 *
 * <p>Installs {@link Rewriter}, which maps classes annotated {@code @org.colors.Shared} (and their
 * subclasses, and every class of the packages given as arguments) and rewrites every read and
 * write of their instance fields, in every class loaded afterwards, into a check plus a shared
 * read/write when the instance is bound to a shared object. Classes loaded before the agent (the
 * JDK's) are not rewritten; they never access fields of user classes.
 */
public final class ColorsAgent {
  private ColorsAgent() {}

  /**
   * Entry point of {@code -javaagent}.
   *
   * @param args comma- or semicolon-separated package names whose classes are all mapped (optional)
   * @param inst the instrumentation
   */
  public static void premain(String args, Instrumentation inst) {
    inst.addTransformer(new Rewriter(args), false);
  }

  /**
   * Entry point of {@code Launcher-Agent-Class} (an executable jar) and dynamic attach; classes
   * already loaded are not rewritten.
   *
   * @param args as for premain
   * @param inst the instrumentation
   */
  public static void agentmain(String args, Instrumentation inst) {
    premain(args, inst);
  }
}
