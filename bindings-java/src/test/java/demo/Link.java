package demo;

/** A record that can refer to another Link (a shared cycle through it cannot be read). */
public record Link(Link next) {}
