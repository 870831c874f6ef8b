"""XCP under-utilizes a link whose other flows are bottlenecked elsewhere; iXCP does not.

The iXCP paper's Fig. 1: one short flow on link a (155 Mb/s), n long flows over a and link b
(100 Mb/s). Its section 2.2 (after Low et al.) says XCP gives the short flow r(n) < 55 Mb/s,
decreasing in n, with the utilization of link a falling towards 80 % = alpha / (alpha + gamma);
the short flow then gets about 40 % of its max-min share. iXCP (eq. (3)) is max-min fair.

Steps (each a function raising AssertionError naming the step):

1. `fluidcc.models.xcp_network.two_link_fixed_point("xcp")` solves eqs. (1)-(2) in closed form;
   the root satisfies the short flow's equation and is positive, and the long flows' feedback on
   link a is >= 0 there (they do obey link b), for n = 2 ... 1024 at the paper's numbers;
2. the utilization decreases in n and tends to alpha / (alpha + gamma) whenever
   c_b < alpha c_a / (alpha + gamma) (the radicand is a perfect square); at the paper's numbers
   the limit is exactly 4/5, the short flow's limit rate 24 Mb/s, 24/55 of its max-min share;
3. iXCP's closed form is the max-min allocation: x = c_a - c_b, utilization 1;
4. fluidcc's fluid fixed points (root finding on `XCPNetwork`'s equations, not this algebra)
   equal the closed forms to 1e-9 relative for n = 2, 4, ..., 1024.

Run it as ``python proofs/xcp_two_link.py``.
"""

from __future__ import annotations

import numpy as np
import sympy as sp

from fluidcc import scenarios
from fluidcc.models import xcp_network

PAPER = {"c_a": 155, "c_b": 100, "alpha": sp.Rational(2, 5), "gamma": sp.Rational(1, 10)}
N_VALUES = [2**k for k in range(1, 11)]


def _check(condition: object, step: str, what: str) -> None:
    if condition is not True and condition != sp.true:
        raise AssertionError(f"{step}: {what} (got {condition!r})")


def _at(expr, symbols, n=None, values=PAPER):
    subs = {symbols[k]: v for k, v in values.items()}
    if n is not None:
        subs[symbols["n"]] = n
    return expr.subs(subs)


def check_xcp_root() -> str:
    step = "step 1 (XCP fixed point)"
    fp = xcp_network.two_link_fixed_point("xcp")
    s = fp["symbols"]
    x = fp["short_rate"]
    y = x + s["c_b"]
    phi = s["alpha"] * (s["c_a"] - y)
    h = s["gamma"] * y - phi
    short_feedback = (phi + h) / (s["n"] + 1) - h * x / y
    long_feedback = (phi + h) / (s["n"] + 1) - h * (s["c_b"] / s["n"]) / y
    for n in N_VALUES:
        _check(abs(sp.N(_at(short_feedback, s, n), 50)) < 1e-40, step, f"the short flow's feedback is 0 at n = {n}")
        _check(bool(sp.N(_at(x, s, n)) > 0), step, f"x({n}) > 0")
        _check(bool(sp.N(_at(phi, s, n)) >= 0), step, f"phi_a >= 0 at n = {n} (link a not overloaded)")
        _check(bool(sp.N(_at(h, s, n)) > 0), step, f"h_a > 0 at n = {n} (eq. (2)'s max is its first branch)")
        _check(bool(sp.N(_at(long_feedback, s, n)) >= 0), step, f"long flows' feedback on a >= 0 at n = {n}")
    return f"{step}: x(n) solves eq. (2)'s balance; x(2) = {sp.N(_at(x, s, 2), 8)} Mb/s"


def check_xcp_limit(claimed_limit=None, claimed_short_limit=24) -> str:
    """The claims default to the paper's: alpha / (alpha + gamma) and 24 Mb/s."""
    step = "step 2 (n -> oo)"
    fp = xcp_network.two_link_fixed_point("xcp")
    s = fp["symbols"]
    utilization = [sp.N(_at(fp["utilization"], s, n), 30) for n in N_VALUES]
    _check(all(a > b for a, b in zip(utilization, utilization[1:])), step, "utilization decreases in n")
    # Under c_b < alpha c_a / (alpha + gamma) write c_b = t alpha c_a / (alpha + gamma), 0 < t < 1.
    t = sp.Symbol("t", positive=True)
    limit = fp["limit_utilization"].subs(s["c_b"], t * s["alpha"] * s["c_a"] / (s["alpha"] + s["gamma"]))
    limit = sp.simplify(limit.replace(lambda e: e.is_Pow and e.exp == sp.Rational(1, 2),
                                      lambda e: sp.sqrt(sp.factor(e.base))))
    radicand_root = s["alpha"] * s["c_a"] * (1 - t)  # sqrt((alpha c_a - (alpha + gamma) c_b)^2)
    limit = sp.simplify(limit.subs(sp.sqrt(sp.factor((s["alpha"] * s["c_a"] * (1 - t)) ** 2)), radicand_root))
    limit = sp.simplify(limit.subs(sp.Abs(t - 1), 1 - t))
    target = s["alpha"] / (s["alpha"] + s["gamma"]) if claimed_limit is None else claimed_limit(s)
    _check(sp.simplify(limit - target) == 0, step, f"the limit is alpha/(alpha+gamma), derived {limit}")
    paper_limit = sp.nsimplify(_at(fp["limit_utilization"], s))
    _check(paper_limit == sp.Rational(4, 5), step, "the paper's limit utilization is 4/5")
    short_limit = paper_limit * PAPER["c_a"] - PAPER["c_b"]
    _check(short_limit == claimed_short_limit, step, f"the short flow's limit rate is {claimed_short_limit} Mb/s")
    return f"{step}: utilization -> alpha/(alpha+gamma) = {paper_limit}; short flow -> {short_limit} Mb/s = {short_limit}/55 of max-min"


def check_ixcp(claimed_short=None) -> str:
    """The claim defaults to max-min: x = c_a - c_b."""
    step = "step 3 (iXCP)"
    fp = xcp_network.two_link_fixed_point("ixcp")
    s = fp["symbols"]
    claim = s["c_a"] - s["c_b"] if claimed_short is None else claimed_short(s)
    _check(sp.simplify(fp["short_rate"] - claim) == 0, step, f"x = {claim}")
    _check(fp["utilization"] == 1, step, "link a fully used")
    return f"{step}: x = c_a - c_b (max-min), utilization 1"


def check_fluid_model(tolerance: float = 1e-9) -> str:
    step = "step 4 (fluid fixed points)"
    from fluidcc.units import mbps_to_pps

    worst = 0.0
    for variant in ("xcp", "ixcp"):
        fp = xcp_network.two_link_fixed_point(variant)
        s = fp["symbols"]
        # One short flow and one long flow standing for n identical long flows.
        network = scenarios.ixcp_fig1(1)
        multiplicity = np.array([[1, n] for n in N_VALUES])
        model = xcp_network.XCPNetwork(network, variant)
        params = xcp_network.network_params(network, multiplicity=multiplicity)
        for point, n in enumerate(N_VALUES):
            closed = float(sp.N(_at(fp["short_rate"], s, n)))
            numeric = model.equilibrium(params, point=point)["flow_rate"][0]
            error = abs(numeric / mbps_to_pps(closed) - 1.0)
            worst = max(worst, error)
            _check(error <= tolerance, step, f"{variant} n = {n}: fluid {numeric} vs closed form {mbps_to_pps(closed)}")
    return f"{step}: XCP and iXCP fixed points equal the closed forms (max relative difference {worst:.1e})"


def main() -> None:
    for check in (check_xcp_root, check_xcp_limit, check_ixcp, check_fluid_model):
        print(check())
    print("ok")


if __name__ == "__main__":
    main()
