"""RCP's and QCP's equilibria, and why QCP's efficient sharing fills a link, checked with SymPy.

1. RCP (RCP paper, eq. (2)): letting the update interval T -> 0 with d0 = d, N flows of RTT d
   that all send R (y = N R) follow R' = R/(d C) [alpha (C - y) - beta q/d], q' = y - C. The only
   rest point with R > 0 and q >= 0 is R* = C/N, q* = 0, and there RCP's estimate N^ = C/R* is N.
2. QCP (QCP paper, eqs. (5)-(6)): when flow i puts n_i bytes into the interval d at its rate
   R_i = w_i/RTT_i, i.e. n_i/d = w_i/RTT_i, the denominator of eq. (4) over d,
   (1/d) sum_j 1/R_j = (1/d) sum_i n_i/R_i, is N (for N = 1 ... 6 with symbolic w_i, RTT_i, d);
   eq. (4) is then (alpha C - beta q/d)/N, and C/N at alpha = 1, q = 0.
3. ES (QCP paper, Definition 1): eq. (8) with eq. (7) at X = 100, rates 10, 50, 70 and
   R(t - d) = 40 counts 9/4 flows and gives exactly 400/9 (the paper's 44.44), above PS's 100/3;
   `fluidcc.sharing.efficient_sharing` gives the same Fraction.
4. QCP with eq. (12) fills the link: x/max(x, R) = min(x, R)/R, so R = (alpha C - beta q/d) /
   ((1/d) sum_j 1/Ř_j) holds iff sum_k min(x_k, R) = alpha C - beta q/d (work-conserving). With m
   flows bottlenecked elsewhere at x_k < R and n local flows at R the unique root is
   R = (alpha C - beta q/d - sum_k x_k)/n, so at q = 0 the load sum_k x_k + n R is alpha C; and
   every such configuration is a fixed point. `fluidcc.sharing` agrees on an example.

Each step is a function taking the claims as arguments, defaulting to the papers', and raising
AssertionError naming the step when a check fails (never a bare ``assert``).
Run it as ``python proofs/rcp_qcp_equilibria.py``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Callable, Sequence

import sympy as sp

from fluidcc import sharing

# Link capacity C (units/s), RTT or control interval d (s), number of flows N, gains alpha, beta.
C, d, N, alpha, beta = sp.symbols("C d N alpha beta", positive=True)
#: The queue (units), >= 0 (step 1 solves for it as a plain real unknown).
q = sp.Symbol("q", nonnegative=True)

PAPER_RCP_RATE = C / N
PAPER_ES_EXAMPLE = sp.Rational(400, 9)


def _check(condition: object, step: str, what: str) -> None:
    """Raise AssertionError("<step>: <what>") unless ``condition`` is exactly True."""
    if condition is not True and condition != sp.true:
        raise AssertionError(f"{step}: {what} (got {condition!r})")


def _is_zero(expr: sp.Expr) -> bool:
    return sp.simplify(sp.expand(expr)) == 0


def rcp_vector_field(rate: sp.Expr, queue: sp.Expr, n_flows: sp.Expr = N) -> tuple[sp.Expr, sp.Expr]:
    """(R', q') of RCP's fluid model on one link: y = N R (RCP paper, eq. (2) with T -> 0, d0 = d)."""
    load = n_flows * rate
    return rate / (d * C) * (alpha * (C - load) - beta * queue / d), load - C


def check_rcp_equilibrium(claimed_rate: sp.Expr = PAPER_RCP_RATE, claimed_queue: sp.Expr = 0) -> str:
    """RCP's only rest point with R > 0, q >= 0 is R* = C/N, q* = 0, where N^ = C/R* = N.

    Eq. (2), R(t) = R(t - T) [1 + (T/d0) (alpha (C - y) - beta q/d0) / C], gives
    (R(t) - R(t - T)) / T = R(t - T) (alpha (C - y) - beta q/d0) / (d0 C), the fluid R' at d0 = d.
    q' = 0 forces y = N R = C; then R' = 0 with R > 0 forces beta q/d = alpha (C - y) = 0.
    """
    step = "step 1 (RCP equilibrium)"
    rate, queue, interval, previous = sp.symbols("R q T R_prev", real=True)
    eq2 = previous * (1 + interval / d * (alpha * (C - N * previous) - beta * queue / d) / C)
    _check(_is_zero((eq2 - previous) / interval - rcp_vector_field(previous, queue)[0]), step,
           "eq. (2)'s difference quotient is the fluid R' = R/(d C) [alpha (C - y) - beta q/d]")

    rate_dot, queue_dot = rcp_vector_field(rate, queue)
    solutions = sp.solve([rate_dot, queue_dot], [rate, queue], dict=True)
    admissible = [s for s in solutions if s[rate].is_positive and s[queue].is_nonnegative]
    _check(len(admissible) == 1 and len(solutions) == 1, step,
           f"exactly one rest point, with R > 0 and q >= 0 (found {solutions})")
    rest = admissible[0]
    _check(_is_zero(rest[rate] - claimed_rate), step, f"R* = {claimed_rate} (derived {rest[rate]})")
    _check(_is_zero(rest[queue] - claimed_queue), step, f"q* = {claimed_queue} (derived {rest[queue]})")
    at_claim = [sp.simplify(v.subs({rate: claimed_rate, queue: claimed_queue})) for v in (rate_dot, queue_dot)]
    _check(at_claim == [0, 0], step, f"R' = q' = 0 at the claimed point (got {at_claim})")
    _check(_is_zero(C / rest[rate] - N), step, "RCP's estimate N^ = C/R* equals N")
    return f"{step}: R* = {rest[rate]}, q* = {rest[queue]}, N^ = C/R* = N"


def check_qcp_counts_flows(claimed_count: sp.Expr = N, claimed_rate: sp.Expr = PAPER_RCP_RATE,
                           max_flows: int = 6) -> str:
    """Eqs. (5)-(6): (1/d) sum_j 1/R_j = (1/d) sum_i n_i RTT_i/w_i = N when n_i/d = w_i/RTT_i.

    The claims are expressions in the symbol N, checked at N = 1 ... max_flows; eq. (4) is then
    (alpha C d - beta q) / sum_j 1/R_j = (alpha C - beta q/d)/N, which is C/N at alpha = 1, q = 0.
    """
    step = "step 2 (QCP counts N flows, eqs. 5-6)"
    for n in range(1, max_flows + 1):
        windows = sp.symbols(f"w1:{n + 1}", positive=True)
        rtts = sp.symbols(f"RTT1:{n + 1}", positive=True)
        rates = [w / rtt for w, rtt in zip(windows, rtts)]
        sent = [d * w / rtt for w, rtt in zip(windows, rtts)]  # eq. (6): n_i / d = w_i / RTT_i
        over_bytes = sum(n_i / r_i for n_i, r_i in zip(sent, rates)) / d  # n_i bytes, each carrying 1/R_i
        eq5_middle = sum(n_i * rtt / w for n_i, rtt, w in zip(sent, rtts, windows)) / d
        _check(_is_zero(over_bytes - eq5_middle), step, f"the two forms of eq. (5) agree at N = {n}")
        _check(_is_zero(over_bytes - claimed_count.subs(N, n)), step,
               f"(1/d) sum_j 1/R_j = {claimed_count} at N = {n} (derived {sp.simplify(over_bytes)})")
        eq4 = (alpha * C * d - beta * q) / (d * over_bytes)
        _check(_is_zero(eq4 - (alpha * C - beta * q / d) / n), step, f"eq. (4) is (alpha C - beta q/d)/N at N = {n}")
        _check(_is_zero(eq4.subs({alpha: 1, q: 0}) - claimed_rate.subs(N, n)), step,
               f"eq. (4) at alpha = 1, q = 0 is {claimed_rate} at N = {n}")
    return f"{step}: (1/d) sum_j 1/R_j = N for N = 1..{max_flows}, so eq. (4) gives (alpha C - beta q/d)/N, C/N"


def check_es_example(claimed_share: sp.Expr = PAPER_ES_EXAMPLE) -> str:
    """Definition 1 at the paper's numbers: 100 / (10/40 + 50/50 + 70/70) = 100/2.25 = 400/9."""
    step = "step 3 (ES example, eq. 8)"
    capacity, rates, previous, interval = 100, (10, 50, 70), 40, 1
    sent = [r * interval for r in rates]  # n_k = R_k tau
    checked = [sp.Max(r, previous) for r in rates]  # eq. (7)
    count = sum(sp.Rational(n_k, interval) / c for n_k, c in zip(sent, checked))
    _check(count == sp.Rational(9, 4), step, f"the count is 2.25 flows (got {count})")
    share = sp.Rational(capacity) / count
    _check(_is_zero(share - claimed_share), step, f"the efficient share is {claimed_share} (derived {share})")
    _check(sp.Abs(share - sp.Rational(4444, 100)) < sp.Rational(1, 200), step, "it rounds to 44.44")
    _check(share > sp.Rational(capacity, len(rates)), step, "it exceeds PS's 100/3")
    library = sharing.efficient_sharing(capacity, list(rates), previous)
    _check(library == Fraction(int(share.p), int(share.q)), step,
           f"fluidcc.sharing.efficient_sharing gives {library}")
    return f"{step}: 100 / (9/4) = {share} ~ {float(share):.2f} > 100/3 (PS)"


def _paper_fixed_point(available: sp.Expr, remote: Sequence[sp.Expr], n_local: int) -> sp.Expr:
    return (available - sum(remote)) / n_local


def check_qcp_fills_link(
    claimed_rate: Callable[[sp.Expr, Sequence[sp.Expr], int], sp.Expr] = _paper_fixed_point,
    sizes: Sequence[tuple[int, int]] = ((1, 1), (1, 2), (2, 1), (2, 3), (3, 2)),
) -> str:
    """Eq. (4) with eq. (12) at a fixed point uses the whole available rate X = alpha C - beta q/d.

    claimed_rate(X, [x_1 ... x_m], n) is the fixed point claimed for m flows bottlenecked
    elsewhere at x_k < R and n local flows at R (default (X - sum_k x_k)/n); `sizes` lists (m, n).
    A flow sending x_k all interval puts x_k d bytes in, each carrying Ř = max(x_k, R), so it
    counts x_k / max(x_k, R) = min(x_k, R) / R and R = X / count iff sum_k min(x_k, R) = X.
    """
    step = "step 4 (QCP with eq. 12 fills the link)"
    x, rate = sp.symbols("x R", positive=True)
    gap = sp.Symbol("g", nonnegative=True)
    for case, (flow_rate, share) in (("x = R + g >= R", (rate + gap, rate)), ("x <= x + g = R", (x, x + gap))):
        _check(_is_zero(flow_rate / sp.Max(flow_rate, share) - sp.Min(flow_rate, share) / share), step,
               f"x/max(x, R) = min(x, R)/R when {case}")

    available = sp.Symbol("X", positive=True)  # alpha C - beta q/d, units/s
    for m, n in sizes:
        remote = sp.symbols(f"x1:{m + 1}", positive=True)
        per_flow = [x_k * d / (d * sp.Max(x_k, rate)) for x_k in remote] + [rate * d / (d * rate)] * n
        count = sum(per_flow)
        # Hypothesis x_k < R: eq. (12)'s max is R for the flows bottlenecked elsewhere.
        on_region = count.subs({sp.Max(x_k, rate): rate for x_k in remote})
        roots = sp.solve(sp.Eq(rate * on_region, available), rate)
        claim = claimed_rate(available, list(remote), n)
        _check(len(roots) == 1 and _is_zero(roots[0] - claim), step,
               f"m = {m}, n = {n}: R = X / count has the one root {claim} (derived {roots})")
        load = sum(remote) + n * roots[0]
        _check(_is_zero(load.subs(available, alpha * C - beta * q / d).subs(q, 0) - alpha * C), step,
               f"m = {m}, n = {n}: at q = 0 the load sum x_k + n R is alpha C")

        # Converse: any R = r above every x_k (x_k = r/(1 + g_k)) with X = sum x_k + n r is a fixed point.
        r = sp.Symbol("r", positive=True)
        gaps = sp.symbols(f"g1:{m + 1}", positive=True)
        below = {x_k: r / (1 + g_k) for x_k, g_k in zip(remote, gaps)}
        at_r = {**below, rate: r}
        target = sum(below.values()) + n * r
        _check(_is_zero(target / count.subs(at_r) - r), step,
               f"m = {m}, n = {n}: R = r solves eq. (4) with eq. (12) when X = sum x_k + n r")
        _check(_is_zero(claimed_rate(target, list(below.values()), n) - r), step,
               f"m = {m}, n = {n}: the claimed rate gives r back at X = sum x_k + n r")

    # The library on an example: C = 100, remote flows at 10 and 20, two local flows, q = 0: R* = 35.
    rate_star = Fraction(100 - 10 - 20, 2)
    flows = [10, 20, rate_star, rate_star]
    library = sharing.qcp_rate(100, 0, Fraction(1, 10), flows, previous_rate=rate_star)
    _check(library == rate_star, step, f"fluidcc.sharing.qcp_rate keeps R* = 35 (got {library})")
    fixed = sharing.efficient_share_fixed_point(100, [10, 20, 100, 100], method="direct")
    _check(fixed.rate == rate_star and fixed.load == 100, step, f"the ES fixed point is R* = 35 (got {fixed.rate})")
    return f"{step}: sum_k min(x_k, R) = alpha C - beta q/d; R = (alpha C - sum x_k)/n, load alpha C at q = 0"


STEPS = (check_rcp_equilibrium, check_qcp_counts_flows, check_es_example, check_qcp_fills_link)


def main() -> None:
    """Run every step in order; the first failure raises AssertionError."""
    for run_step in STEPS:
        print(run_step(), flush=True)
    print("ok")


if __name__ == "__main__":
    main()
