package oo7;

/**
 * What an operation returns: {@code count} (parts visited; Q7: parts scanned) and {@code check}
 * (T1/T2: the fold of the visited parts' ids in visit order; T6: the fold of the root parts' ids;
 * Q7: the sum of {@code x}), so the two models' runs can be compared exactly.
 */
public record OpResult(long count, long check) {}
