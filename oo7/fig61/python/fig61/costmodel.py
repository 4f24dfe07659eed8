"""The cost model of Thor's thesis (chapter 6, eq. 6.1): T = X·C + N·S + R_C + R_S, where the
client makes N calls to the server, costing S each (communication, safety checks, marshaling),
over X pairs of domain crossings costing C each, and R_C, R_S are the client's and the server's
own computation.

How each term is obtained here (all in the same run as the times):

- T: the row's measured time (median of its timed rounds).
- X: the requests the server received (counted by the Java server); 0 for the direct row.
- N: the calls the server ran (the server's count: per access, the object accesses; aggregated,
  the deferred calls its plans carried; hand-batched, one per composite visit plus the assembly
  tree's accesses); for the direct row the object accesses T1 makes (counted by DirectAccess).
- C: the round trip of a null call (``ping``: an integer each way) over the row's transport,
  measured by a loop of such calls in every round (median over the rounds): what a pair of
  crossings costs with the least work a call can carry. 0 for the direct row.
- R_S: the server's time inside its handlers (from a request's arrival in the handler to its
  result, summed by the server), so it leaves out the transport's own (un)marshaling.
- R_C: T1 over the private Python copy of the database (oo7py's ``__dict__`` objects) in the
  client process, in every round (median): the traversal's own work (recursion, visited sets, the visit fold) when every
  access is a plain attribute read.
- S: solved from the equation, (T − X·C − R_C − R_S) / N: what a call costs beyond its share of
  a null round trip and the two computations, i.e. the stubs on both sides, (un)marshaling the
  references, and for aggregation the deferral machinery. Where that is small against X·C (the
  per-access rows) it is within the noise of C on a shared machine and can come out negative.
"""

from __future__ import annotations


def terms(t: float, x: int, n: int, c: float, r_c: float, r_s: float) -> dict:
    s = (t - x * c - r_c - r_s) / n if n else 0.0
    return {"T": t, "X": x, "N": n, "C": c, "S": s, "XC": x * c, "NS": n * s, "R_C": r_c, "R_S": r_s}
