package bench;

/**
 * How the server derives each new element from the corresponding input element, the same for
 * every framework (the Python side checks replies with the same rules, see python/workload.py):
 * bool: negated; int: +1; float: *0.5 + 1; string: reversed; tree node: each scalar field derived
 * alike, children mirrored.
 */
final class Derive {
    private Derive() {}

    static boolean bool(boolean b) {
        return !b;
    }

    static long integer(long v) {
        return v + 1;
    }

    static double real(double v) {
        return v * 0.5 + 1.0;
    }

    static String string(String s) {
        return new StringBuilder(s).reverse().toString();
    }
}
