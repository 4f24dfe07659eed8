"""Call aggregation over remote calls (Yeung and Kelly, "Optimising Java RMI Programs by
Communication Restructuring"; Bogle and Liskov's batched futures): a call is not sent when it is
made but deferred, and its result is a lazy future; the deferred calls go to the server together,
as one request, when the program needs a value. A future can be the receiver or an operand of a
later call before it is resolved: the server then passes the earlier call's result on itself, so
a reference that is only called on never travels to the client and back within a batch.

Generic: nothing here knows the remote objects. A server offers methods whose operands are 64-bit
integers (references to its objects, or plain integers) and a plan executor (the Java
``fig61.PlanExecutor``); a :class:`Transport` names those methods and runs a plan.

Semantics (what the tests check):

- ``agg.call(method, receiver, *args)`` (or ``future.method(*args)``) sends nothing and returns a
  :class:`Lazy` at once. An unknown method name or an operand that is no integer is a local
  mistake and raises at once.
- A value is needed when a future is used: ``value()``, iteration, ``len``, indexing, ``==``,
  hashing (a set or dict), ``bool``, ``int``. Then every deferred call (of this aggregator, not
  only the one needed) is sent, in the order made, as one request, and every future of the batch
  is resolved.
- A failing call fails only its future and the futures of calls that used its result (with
  :class:`DependencyError`); its error is raised where such a future's value is used, not where the
  call was made or when the batch went out. A request that fails as a whole (the server died, the
  plan was refused) fails every future of the batch the same way.
- Results that are lists iterate (and index) as resolved futures, so their elements can receive
  calls in turn.
"""

from __future__ import annotations

from typing import Any, Protocol, Sequence

from colors_shm.rpc import RemoteError

_PENDING, _DONE, _FAILED = 0, 1, 2


class DeferredCallError(RemoteError):
    """A deferred call failed on the server; raised where its future's value is used.
    ``remote_type`` and ``remote_message`` are the server's, ``method`` the call's."""

    def __init__(self, method: str, remote_type: str, remote_message: str):
        super().__init__(f"{method}: {remote_type}: {remote_message}")
        self.method = method
        self.remote_type = remote_type
        self.remote_message = remote_message


class DependencyError(DeferredCallError):
    """A deferred call could not run because an operand was the result of a failed call."""


class Transport(Protocol):
    """What an :class:`Aggregator` needs of the server."""

    def methods(self) -> Sequence[str]:
        """The methods a plan can call; a plan names a method by its index here."""

    def run(self, plan: list[int]) -> Sequence[Any]:
        """Runs a plan (``fig61.PlanExecutor``'s encoding) in one request: for call k,
        ``[2k]`` None or its failure ``"Type: message"``, ``[2k+1]`` its value (an int or a list
        of ints). Raises if the request as a whole fails."""


def _split_failure(text: str) -> tuple[str, str]:
    t, sep, m = str(text).partition(": ")
    return (t, m) if sep else ("Error", str(text))


class Lazy:
    """A remote value: a deferred call's future, or a value already known (a reference handed out
    by the server). Calls on it are deferred too; using it resolves it (see the module doc)."""

    __slots__ = ("_agg", "_slot", "_state", "_value", "__weakref__")

    def __init__(self, agg: Aggregator, state: int, value: Any, slot: int = -1):
        self._agg = agg
        self._state = state
        self._value = value
        self._slot = slot

    def resolved(self) -> bool:
        """True once the value (or the failure) is known; does not send anything."""
        return self._state != _PENDING

    def value(self) -> Any:
        """The value; sends the pending calls first if this one is among them. Raises the call's
        :class:`DeferredCallError` if it failed."""
        if self._state == _PENDING:
            self._agg.flush()
        if self._state == _FAILED:
            raise self._value
        return self._value

    def call(self, method: str, *args) -> Lazy:
        """Defers ``method(self, *args)`` (the same as ``self.method(*args)``)."""
        return self._agg.call(method, self, *args)

    def __getattr__(self, method: str):
        if method.startswith("_"):
            raise AttributeError(method)
        agg = self._agg
        return lambda *args: agg.call(method, self, *args)

    def __iter__(self):
        agg = self._agg
        return iter([Lazy(agg, _DONE, x) for x in self.value()])

    def __len__(self) -> int:
        return len(self.value())

    def __getitem__(self, i):
        return Lazy(self._agg, _DONE, self.value()[i])

    def __hash__(self) -> int:
        return hash(self.value())

    def __eq__(self, other) -> bool:
        if isinstance(other, Lazy):
            other = other.value()
        return self.value() == other

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __bool__(self) -> bool:
        return bool(self.value())

    def __int__(self) -> int:
        return int(self.value())

    __index__ = __int__

    def __repr__(self) -> str:
        state = {_PENDING: "pending", _DONE: "=", _FAILED: "failed:"}[self._state]
        return f"<Lazy {state}{'' if self._state == _PENDING else ' ' + repr(self._value)}>"


class Aggregator:
    """Defers calls over one :class:`Transport` and sends them in batches (see the module doc).
    ``round_trips`` counts the requests sent, ``calls`` the calls they carried. Not thread-safe:
    one aggregator per thread."""

    def __init__(self, transport: Transport):
        self._transport = transport
        self._names = list(transport.methods())
        self._index = {n: i for i, n in enumerate(self._names)}
        self._plan: list[int] = []
        self._pending: list[tuple[Lazy, str]] = []
        self.round_trips = 0
        self.calls = 0

    def ref(self, value: Any) -> Lazy:
        """A known value (e.g. a root reference) as a :class:`Lazy` that calls can be made on."""
        return Lazy(self, _DONE, value)

    def pending(self) -> int:
        """The number of deferred calls not sent yet."""
        return len(self._pending)

    def call(self, method: str, receiver: Any, *args) -> Lazy:
        """Defers ``method(receiver, *args)`` and returns its future."""
        m = self._index.get(method)
        if m is None:
            raise AttributeError(f"the server has no plan method {method!r} (it has {', '.join(self._names)})")
        words = [m, 1 + len(args)]
        failed = None
        for x in (receiver, *args):
            if isinstance(x, Lazy):
                if x._agg is not self:
                    raise ValueError("a future of another aggregator cannot be an operand")
                if x._state == _PENDING:
                    words += (1, x._slot)
                    continue
                if x._state == _FAILED:
                    failed = failed or x._value
                    continue
                x = x._value
            if not isinstance(x, int) or isinstance(x, bool):
                raise TypeError(f"operands of {method} are integers (references or numbers), not {type(x).__name__}")
            words += (0, x)
        if failed is not None:
            # Never sent: its operand's failure is known. Raised when this value is used.
            return Lazy(self, _FAILED, DependencyError(method, "DependencyError", f"an operand failed ({failed})"))
        lz = Lazy(self, _PENDING, None, len(self._pending))
        self._plan += words
        self._pending.append((lz, method))
        return lz

    def flush(self) -> None:
        """Sends the deferred calls now (one request) and resolves their futures."""
        if not self._pending:
            return
        plan, pending = self._plan, self._pending
        self._plan, self._pending = [], []
        self.round_trips += 1
        self.calls += len(pending)
        try:
            out = self._transport.run(plan)
        except BaseException as e:
            # The whole request failed: each future carries the failure (none is left pending:
            # its plan is gone). An interrupt still propagates, after that.
            t, msg = type(e).__name__, str(e)
            for lz, method in pending:
                lz._state, lz._value = _FAILED, DeferredCallError(method, t, msg)
            if not isinstance(e, Exception):
                raise
            return
        if len(out) != 2 * len(pending):
            for lz, method in pending:
                lz._state, lz._value = _FAILED, DeferredCallError(
                    method, "ProtocolError", f"{len(out)} outcome words for {len(pending)} calls")
            return
        for k, (lz, method) in enumerate(pending):
            err = out[2 * k]
            if err is None:
                lz._state, lz._value = _DONE, out[2 * k + 1]
            else:
                t, msg = _split_failure(err)
                cls = DependencyError if t == "DependencyError" else DeferredCallError
                lz._state, lz._value = _FAILED, cls(method, t, msg)


class ColorsPlanTransport:
    """:class:`Transport` over a colors rpc client of an endpoint serving ``planMethods()`` and
    ``runPlan(long[])`` (``fig61.ColorsEndpoint``). The reply's lists are read out of the heap
    once, here."""

    def __init__(self, client):
        self._client = client
        self._methods = list(client.planMethods())

    def methods(self) -> list[str]:
        return self._methods

    def run(self, plan: list[int]) -> list[Any]:
        return [v if v is None or isinstance(v, (int, str)) else list(v) for v in self._client.runPlan(plan)]
