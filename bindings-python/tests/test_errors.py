"""errors.cpp: the SharedMemoryError hierarchy and the messages users see."""

import pytest

import colors_shm as cs
import subprocess

from conftest import Server, run, spawn


def test_hierarchy():
    for name in ["NotAttachedError", "ServerGoneError", "VersionMismatchError", "AddressInUseError",
                 "RefusedError", "OutOfMemoryError", "TypeMismatchError", "SharedOverflowError",
                 "OwnerDiedError", "NotOwnerError", "SharedIndexError", "SharedKeyError",
                 "InvalidArgumentError", "SharedInterruptedError", "CorruptHeapError"]:
        cls = getattr(cs, name)
        assert issubclass(cls, cs.SharedMemoryError), name
        assert cls.__module__ == "colors_shm"
    assert issubclass(cs.TypeMismatchError, TypeError)
    assert issubclass(cs.SharedOverflowError, OverflowError)
    assert issubclass(cs.SharedIndexError, IndexError)
    assert issubclass(cs.SharedKeyError, KeyError)
    assert issubclass(cs.InvalidArgumentError, ValueError)
    assert issubclass(cs.NotOwnerError, RuntimeError)
    assert cs.OverflowError is cs.SharedOverflowError


@pytest.mark.parametrize("big", [2**63, -(2**63) - 1, 2**100, -(10**40)])
def test_int_overflow(big):
    with pytest.raises(cs.SharedOverflowError, match="64-bit"):
        cs.copy_to(big)
    lst = cs.allocate(list)
    with pytest.raises(cs.SharedMemoryError, match="does not fit a shared integer"):
        lst.append(big)
    with pytest.raises(cs.SharedOverflowError):
        cs.copy_to([1, big])
    assert len(lst) == 0


@pytest.mark.parametrize("private", [[1], (1,), {"a": 1}, {1}, frozenset({1})])
def test_private_container_stored(private):
    shared = cs.copy_to({"k": []})
    with pytest.raises(cs.TypeMismatchError, match="copy_to"):
        shared["x"] = private
    with pytest.raises(cs.TypeMismatchError, match="copy_to"):
        shared["k"].append(private)
    with pytest.raises(cs.TypeMismatchError, match="copy_to"):
        cs.repository("errors-private").set(private)
    assert "x" not in shared


def test_unsupported_types():
    with pytest.raises(cs.TypeMismatchError, match="'complex'"):
        cs.copy_to(1j)
    with pytest.raises(cs.TypeMismatchError, match="'object'"):
        cs.copy_to([object()])
    with pytest.raises(UnicodeEncodeError):
        cs.copy_to("\ud800")


def test_slice_assignment_checks_before_changing():
    lst = cs.copy_to([1, 2, 3])
    with pytest.raises(cs.TypeMismatchError):
        lst[0:2] = [5, [6]]
    assert lst == [1, 2, 3]


def test_index_and_key_errors_are_builtin_kinds():
    lst = cs.copy_to([1])
    with pytest.raises(IndexError):
        lst[5]
    with pytest.raises(IndexError):
        lst[-2]
    d = cs.copy_to({})
    with pytest.raises(KeyError):
        d["missing"]
    with pytest.raises(TypeError, match="cannot be created directly"):
        cs.SharedList()


def test_no_server_running(tmp_path):
    r = run(f"""
        import colors_shm as cs
        try:
            cs.copy_to([1])
        except cs.ServerGoneError as e:
            print("ServerGoneError:", e)
    """, socket=str(tmp_path / "nobody.sock"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("ServerGoneError:")
    assert "colors-server" in r.stdout or "server" in r.stdout


def test_use_after_server_gone():
    srv = Server(heap="8M")
    try:
        child = spawn("""
            import sys, colors_shm as cs
            lst = cs.copy_to([1, 2])
            ch = cs.channel("gone")
            print("attached", flush=True)
            sys.stdin.readline()
            try:
                ch.receive(timeout=10)
                print("no error")
            except cs.ServerGoneError as e:
                print("ServerGoneError:", e)
        """, socket=srv.socket, stdin=subprocess.PIPE)
        assert child.stdout.readline().strip() == "attached"
        srv.stop()
        out, err = child.communicate("go\n", timeout=20)
        assert child.returncode == 0, err
        assert out.startswith("ServerGoneError:"), out + err
        assert "restart" in out
    finally:
        srv.stop()
