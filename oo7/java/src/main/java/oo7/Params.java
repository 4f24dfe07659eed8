package oo7;

/** The SPEC's size parameters (small, medium). */
public record Params(String name, int numAtomicPerComp, int numConnPerAtomic, int documentSize, int numCompPerModule,
    int numAssmPerAssm, int numAssmLevels, int numCompPerAssm) {

  public static final Params SMALL = new Params("small", 20, 3, 2000, 500, 3, 7, 3);
  public static final Params MEDIUM = new Params("medium", 200, 3, 20000, 500, 3, 7, 3);

  /** SMALL or MEDIUM by name; IllegalArgumentException otherwise. */
  public static Params of(String size) {
    switch (size) {
      case "small": return SMALL;
      case "medium": return MEDIUM;
      default: throw new IllegalArgumentException("unknown size '" + size + "': small or medium");
    }
  }

  /** The repository the loader publishes the database in: oo7.small / oo7.medium. */
  public String repository() {
    return "oo7." + name;
  }
}
