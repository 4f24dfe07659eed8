package demo.staff;

/** A superclass the agent does not bind (no @Shared), with instance fields. */
public class PlainBase {
  public int baseX;
  public String baseS;
}
