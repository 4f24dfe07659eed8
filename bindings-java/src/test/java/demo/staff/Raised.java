package demo.staff;

/** A subclass whose constructor reads another instance inside its super(...) call. */
public class Raised extends Copied {
  public Raised(Copied e) {
    super(e.name, e.salary * 2);
  }
}
