package demo;

/** A record: read back through its canonical constructor. */
public record Point(long x, long y, String label) {}
