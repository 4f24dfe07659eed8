"""Unit tests of the call-aggregation layer of Figure 6-1 (oo7/fig61/python/fig61/aggregate.py):
lazy futures, deferral, one request per value need, chained futures as operands, and errors
raised where a value is used. The server here is a recording fake that runs plans by the rules of
fig61.PlanExecutor (the Java executor itself is exercised end to end by test_fig61_smoke.py)."""

from __future__ import annotations

import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "fig61" / "python"))

import colors_shm  # noqa: E402

from fig61.aggregate import Aggregator, DeferredCallError, DependencyError, Lazy  # noqa: E402


class Graph:
    """A tiny object graph: node n has children 10n+1 and 10n+2 (for n below 100), and a weight n*n."""

    def children(self, n):
        if n <= 0:
            raise ValueError(f"no node {n}")
        return [10 * n + 1, 10 * n + 2] if n < 100 else []

    def weight(self, n):
        if n <= 0:
            raise ValueError(f"no node {n}")
        return n * n

    def first(self, n):
        return self.children(n)[0]

    def add(self, a, b):
        return a + b


class FakeTransport:
    """Runs plans over Graph by PlanExecutor's encoding and rules; records every request."""

    def __init__(self):
        self.graph = Graph()
        self.names = sorted(["children", "weight", "first", "add"])
        self.requests: list[list[int]] = []
        self.fail_next = None

    def methods(self):
        return self.names

    def run(self, plan):
        self.requests.append(list(plan))
        if self.fail_next is not None:
            e, self.fail_next = self.fail_next, None
            raise e
        out = []
        i = 0
        while i < len(plan):
            m, argc = plan[i], plan[i + 1]
            i += 2
            args, failure = [], None
            for _ in range(argc):
                tag, v = plan[i], plan[i + 1]
                i += 2
                if tag == 0:
                    args.append(v)
                elif out[2 * v] is not None:
                    failure = failure or f"DependencyError: call {v} failed ({out[2 * v]})"
                else:
                    args.append(out[2 * v + 1])
            value = None
            if failure is None:
                try:
                    value = getattr(self.graph, self.names[m])(*args)
                except Exception as e:  # noqa: BLE001
                    failure = f"{type(e).__name__}: {e}"
            out += [failure, value]
        return out


@pytest.fixture
def fake():
    return FakeTransport()


@pytest.fixture
def agg(fake):
    return Aggregator(fake)


def test_calls_are_deferred_until_a_value_is_needed(agg, fake):
    root = agg.ref(1)
    kids = root.children()
    w = root.weight()
    assert isinstance(kids, Lazy) and isinstance(w, Lazy)
    assert not kids.resolved() and not w.resolved()
    assert fake.requests == [] and agg.pending() == 2
    assert w.value() == 1                      # one value needed: the whole batch goes, once
    assert len(fake.requests) == 1 and agg.round_trips == 1 and agg.calls == 2
    assert kids.resolved() and agg.pending() == 0
    assert [int(k) for k in kids] == [11, 12]  # already resolved: nothing more is sent
    assert len(fake.requests) == 1


def test_a_future_is_the_receiver_of_a_later_call_in_the_same_request(agg, fake):
    first = agg.ref(1).first()                 # 11, not known yet
    grand = first.first()                      # 111: its receiver is call 0's result
    w = grand.weight()
    assert fake.requests == []
    assert w.value() == 111 * 111
    (plan,) = fake.requests
    idx = {n: i for i, n in enumerate(fake.names)}
    assert plan == [idx["first"], 1, 0, 1,
                    idx["first"], 1, 1, 0,     # operand: the result of call 0
                    idx["weight"], 1, 1, 1]    # operand: the result of call 1
    assert int(first) == 11 and int(grand) == 111


def test_every_kind_of_use_sends_the_pending_calls(agg, fake):
    lists = [lambda x: x.value(), lambda x: list(x), lambda x: len(x), lambda x: x[0], lambda x: x == [11, 12],
             lambda x: bool(x)]
    scalars = [lambda x: hash(x), lambda x: {x}, lambda x: int(x), lambda x: [0] * 20 * x, lambda x: x == 1]
    uses = [("children", u) for u in lists] + [("weight", u) for u in scalars]
    for k, (method, use) in enumerate(uses):
        f = agg.ref(1).call(method)
        assert len(fake.requests) == k
        use(f)
        assert len(fake.requests) == k + 1, f"use #{k} did not send the deferred call"


def test_futures_compare_and_hash_by_value(agg):
    a, b = agg.ref(1).first(), agg.ref(2).first()
    c = agg.ref(11)
    assert a == c and a != b and hash(a) == hash(c)
    assert len({a, b, c}) == 2
    assert a == 11


def test_list_elements_are_futures_that_take_calls(agg, fake):
    kids = agg.ref(1).children()
    weights = [k.weight() for k in kids]       # iterating sends children(); the weights wait
    assert len(fake.requests) == 1 and all(not w.resolved() for w in weights)
    assert [w.value() for w in weights] == [121, 144]
    assert len(fake.requests) == 2 and agg.calls == 3


def test_a_failing_call_raises_where_its_value_is_used(agg, fake):
    bad = agg.ref(-5).weight()                 # the server will raise ValueError
    good = agg.ref(2).weight()
    dependent = agg.call("add", bad, 1)        # uses bad's result: cannot run
    assert good.value() == 4                   # the batch went; nothing raised here
    assert len(fake.requests) == 1
    with pytest.raises(DeferredCallError) as e:
        bad.value()
    assert e.value.remote_type == "ValueError" and "no node -5" in e.value.remote_message
    assert e.value.method == "weight"
    assert isinstance(e.value, colors_shm.SharedMemoryError)
    with pytest.raises(DependencyError) as d:
        int(dependent)
    assert "call 0 failed" in str(d.value)
    with pytest.raises(DeferredCallError):     # raised again at every use
        hash(bad)


def test_a_call_on_a_failed_future_is_not_sent_and_fails_at_use(agg, fake):
    bad = agg.ref(0).weight()
    with pytest.raises(DeferredCallError):
        bad.value()
    n = len(fake.requests)
    later = agg.call("add", bad, 2)            # no error yet: only a use raises
    assert len(fake.requests) == n and agg.pending() == 0
    with pytest.raises(DependencyError):
        later.value()


def test_a_failed_request_fails_each_future_of_its_batch_at_use(agg, fake):
    a, b = agg.ref(1).weight(), agg.ref(2).weight()
    fake.fail_next = ConnectionError("server gone")
    with pytest.raises(DeferredCallError) as e:
        a.value()
    assert e.value.remote_type == "ConnectionError" and "server gone" in e.value.remote_message
    with pytest.raises(DeferredCallError):
        b.value()
    assert agg.ref(3).weight().value() == 9   # the aggregator goes on


def test_an_interrupt_during_a_request_propagates_and_leaves_no_future_pending(agg, fake):
    a, b = agg.ref(1).weight(), agg.ref(2).weight()
    fake.fail_next = KeyboardInterrupt()
    with pytest.raises(KeyboardInterrupt):
        a.value()
    assert a.resolved() and b.resolved() and agg.pending() == 0
    with pytest.raises(DeferredCallError, match="KeyboardInterrupt"):
        b.value()
    assert agg.ref(4).weight().value() == 16


def test_local_mistakes_raise_at_the_call(agg, fake):
    with pytest.raises(AttributeError, match="no plan method 'nosuch'"):
        agg.ref(1).nosuch()
    with pytest.raises(TypeError, match="integers"):
        agg.call("add", 1, "two")
    with pytest.raises(TypeError):
        agg.call("add", 1, 2.5)
    other = Aggregator(FakeTransport()).ref(1).first()
    with pytest.raises(ValueError, match="another aggregator"):
        agg.call("add", other, 1)
    assert fake.requests == [] and agg.pending() == 0


def test_repr_does_not_send(agg, fake):
    f = agg.ref(1).first()
    assert "pending" in repr(f) and fake.requests == []
    f.value()
    assert "11" in repr(f)
