"""Remote references to OO7 objects, as the Java server makes them (fig61/Handles.java):
``class tag << 32 | id``. The tag tells a client the class of an object a call returned (as a
typed stub would); the id is read out of a handle only for the visit-order check."""

MODULE, COMPLEX, BASE, COMPOSITE, PART, CONNECTION = 1, 2, 3, 4, 5, 6


def make(tag: int, oid: int) -> int:
    return (tag << 32) | oid


def tag(h: int) -> int:
    return h >> 32


def oid(h: int) -> int:
    return h & 0xFFFFFFFF
