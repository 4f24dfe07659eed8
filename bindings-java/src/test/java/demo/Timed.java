package demo;

import java.time.Instant;

/** A field of a JDK class that cannot be shared. */
public class Timed {
  public Instant when = Instant.EPOCH;
}
