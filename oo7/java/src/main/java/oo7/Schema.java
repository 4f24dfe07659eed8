package oo7;

import java.util.List;

/**
 * What the builder, the fingerprint and the tests read of either model: one interface per SPEC
 * class, implemented by the shared classes ({@code oo7.shared}, bound by the agent: every getter
 * reads the shared object) and by their POJO twins ({@code oo7.plain}). The timed operations do
 * not go through these interfaces: {@link oo7.shared.SharedOps} and {@link oo7.plain.PlainOps}
 * read the fields directly.
 */
public final class Schema {
  private Schema() {}

  public interface Module {
    long id();
    String type();
    long buildDate();
    ComplexAssembly designRoot();
  }

  public interface Assembly {
    long id();
    String type();
    long buildDate();
    ComplexAssembly superAssembly();
  }

  public interface ComplexAssembly extends Assembly {
    List<? extends Assembly> subAssemblies();
  }

  public interface BaseAssembly extends Assembly {
    List<? extends CompositePart> components();
  }

  public interface CompositePart {
    long id();
    String type();
    long buildDate();
    String document();
    AtomicPart rootPart();
    List<? extends AtomicPart> parts();
    List<? extends BaseAssembly> usedIn();
  }

  public interface AtomicPart {
    long id();
    long x();
    long y();
    long buildDate();
    String type();
    List<? extends Connection> to();
    List<? extends Connection> from_();
    CompositePart partOf();
  }

  public interface Connection {
    long id();
    String type();
    long length();
    AtomicPart from_();
    AtomicPart to();
  }

  public interface Database {
    Module module();
    List<? extends CompositePart> composites();
    List<? extends Assembly> assemblies();
  }
}
