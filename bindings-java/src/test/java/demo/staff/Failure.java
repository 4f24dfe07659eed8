package demo.staff;

import org.colors.Shared;

/** A mapped class extending a JDK class with instance fields (Throwable's message, cause...): refused. */
@Shared
public class Failure extends RuntimeException {
  public int code;

  public Failure(String message, int code) {
    super(message);
    this.code = code;
  }
}
