package demo.cache;

/** A mapped subclass with a reference field of its own (its read cache field and its superclass's). */
public class Pair extends Holder {
  public Holder other;
}
