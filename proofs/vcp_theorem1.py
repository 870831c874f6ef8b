"""Theorem 1 of "One more bit is enough" (VCP), checked step by step with SymPy.

Theorem 1 (section 5): for N synchronous flows with the same RTT T on one bottleneck, the MIAIMD
fluid model (10)-(12), summed into the delay-differential equation (14), is globally
asymptotically stable when kappa <= 1/2, with the unique equilibrium w* = gamma*C*T + N*alpha/kappa
and per-flow rate r_i* = gamma*C/N + alpha/(kappa*T).

The stability argument itself (Lemmas 1 and 2, Appendix 11.1) is analysis, not algebra; what this
script checks is every algebraic identity and inequality that argument rests on:

1. the equilibrium of (14), the per-flow window and rate from (10), and the load factor from (12);
2. the change of variables y = gamma*C*T/w that turns (14) into (17), and its equilibrium y*;
3. the shifted form (18) of (17);
4. the Lyapunov derivative identity (29) for the functional (28);
5. the inequality 1 + u > exp(1 - exp(-u)) for u > 0 that contradicts (27);
6. that kappa <= 1/2 implies the hypothesis of Lemma 1 or of Lemma 2.

Each step is a function that takes the claimed expressions as arguments, defaulting to the paper's,
and raises AssertionError naming the step when a check fails (never a bare ``assert``, so the
checks survive ``python -O``). Run it as ``python proofs/vcp_theorem1.py``.
"""

from __future__ import annotations

import sys

import mpmath
import sympy as sp

# Model parameters, all positive: target utilization gamma, link capacity C (packets/s), RTT T (s),
# number of flows N, additive increase alpha (packets), stability coefficient kappa.
gamma, C, T, N, alpha, kappa = sp.symbols("gamma C T N alpha kappa", positive=True)

#: gamma*C*T, the target number of packets in flight (packets).
target_window = gamma * C * T

# Constants of (17): k1 and k2 as symbols for steps 3-4, and their values in the model parameters.
k1, k2 = sp.symbols("k1 k2", positive=True)
K1 = kappa / T
K2 = N * alpha / (kappa * gamma * C * T)

# The paper's closed forms.
PAPER_W_STAR = gamma * C * T + N * alpha / kappa
PAPER_W_I_STAR = gamma * C * T / N + alpha / kappa
PAPER_R_I_STAR = gamma * C / N + alpha / (kappa * T)
PAPER_RHO_STAR = 1 + N * alpha / (kappa * gamma * C * T)
PAPER_Y_STAR = 1 / (1 + k2)  # in terms of the symbol k2

_u = sp.Symbol("u", positive=True)
PAPER_G_INTEGRAND = (1 - sp.exp(-_u)) * sp.exp(1 - sp.exp(-_u) - _u)
PAPER_KAPPA_BOUND = sp.Rational(1, 2)


def _check(condition: object, step: str, what: str) -> None:
    """Raise AssertionError("<step>: <what>") unless ``condition`` is exactly True."""
    if condition is not True and condition != sp.true:
        raise AssertionError(f"{step}: {what} (got {condition!r})")


def _is_zero(expr: sp.Expr) -> bool:
    return sp.simplify(sp.expand(expr)) == 0


def _window_rhs_eq14(w_now: sp.Expr, w_delayed: sp.Expr) -> sp.Expr:
    """Right-hand side of eq. (14), dw/dt in packets/s."""
    return (kappa * w_now * (target_window / w_delayed - 1) + N * alpha) / T


def check_equilibrium(
    claimed_w_star: sp.Expr = PAPER_W_STAR,
    claimed_w_i_star: sp.Expr = PAPER_W_I_STAR,
    claimed_r_i_star: sp.Expr = PAPER_R_I_STAR,
    claimed_rho_star: sp.Expr = PAPER_RHO_STAR,
) -> str:
    """Equilibrium of eq. (14); per-flow window and rate from eq. (10); load factor from eq. (12).

    With w(t) = w(t - T) = w and dw/dt = 0, (14) has exactly one positive root
    w* = gamma*C*T + N*alpha/kappa. Setting (10) to zero with rho* from (12) and the MI parameter
    (11) gives w_i* = gamma*C*T/N + alpha/kappa and r_i* = w_i*/T = gamma*C/N + alpha/(kappa*T);
    the load factor is rho* = w*/(gamma*C*T) = 1 + N*alpha/(kappa*gamma*C*T).
    """
    step = "step 1 (eq. 14 equilibrium, eqs. 10-12)"
    w = sp.Symbol("w", positive=True)
    roots = sp.solve(sp.Eq(_window_rhs_eq14(w, w), 0), w)
    _check(len(roots) == 1, step, f"(14) at rest has exactly one positive root, found {roots}")
    w_star = roots[0]
    _check(_is_zero(w_star - claimed_w_star), step, f"w* = {claimed_w_star}, solved {w_star}")

    rho_star = w_star / target_window  # eq. (12) with sum_i w_i(t - T) = w*
    _check(_is_zero(rho_star - claimed_rho_star), step, f"rho* = {claimed_rho_star}")

    w_i = sp.Symbol("w_i", positive=True)
    mi_parameter = kappa * (1 - rho_star) / rho_star  # eq. (11)
    flow_roots = sp.solve(sp.Eq((w_i * mi_parameter + alpha) / T, 0), w_i)  # eq. (10) at rest
    _check(len(flow_roots) == 1, step, f"(10) at rest has one positive root, found {flow_roots}")
    w_i_star = flow_roots[0]
    _check(_is_zero(w_i_star - claimed_w_i_star), step, f"w_i* = {claimed_w_i_star}")
    _check(_is_zero(N * w_i_star - w_star), step, "the N equal windows sum to w*")
    _check(_is_zero(w_i_star / T - claimed_r_i_star), step, f"r_i* = w_i*/T = {claimed_r_i_star}")
    return (f"{step}: w* = {w_star}, w_i* = {w_i_star}, r_i* = {sp.expand(w_i_star / T)}, "
            f"rho* = {sp.expand(rho_star)}")


def check_change_of_variables(
    claimed_k1: sp.Expr = K1,
    claimed_k2: sp.Expr = K2,
    claimed_y_star: sp.Expr = PAPER_Y_STAR,
) -> str:
    """y = gamma*C*T/w turns eq. (14) into eq. (17): y' = k1 y(t) [1 - y(t-T) - k2 y(t)].

    Here k1 = kappa/T and k2 = N*alpha/(kappa*gamma*C*T). By the chain rule
    y' = -gamma*C*T w'/w^2; substituting w' from (14) with w = gamma*C*T/y leaves a difference of
    zero. The positive equilibrium of (17) is y* = 1/(1 + k2), which equals gamma*C*T/w*.
    """
    step = "step 2 (eq. 14 -> eq. 17)"
    t = sp.Symbol("t", real=True)
    w_of_t = sp.Function("w", positive=True)
    y_of_w = target_window / w_of_t(t)
    chain_rule = sp.diff(y_of_w, t) - (-target_window * sp.diff(w_of_t(t), t) / w_of_t(t) ** 2)
    _check(_is_zero(chain_rule), step, "y' = -gamma*C*T w'/w^2")

    y_now, y_delayed = sp.symbols("y y_T", positive=True)
    w_now, w_delayed = target_window / y_now, target_window / y_delayed
    y_dot = -target_window * _window_rhs_eq14(w_now, w_delayed) / w_now**2
    eq17_rhs = claimed_k1 * y_now * (1 - y_delayed - claimed_k2 * y_now)
    _check(_is_zero(y_dot - eq17_rhs), step, "y' from (14) minus the right-hand side of (17) is 0")
    _check(claimed_k1.is_positive and claimed_k2.is_positive, step, "k1 > 0 and k2 > 0")

    y = sp.Symbol("y", positive=True)
    rest_points = sp.solve(sp.Eq(eq17_rhs.subs({y_now: y, y_delayed: y}), 0), y)
    _check(len(rest_points) == 1, step, f"(17) has one positive equilibrium, found {rest_points}")
    y_star = claimed_y_star.subs(k2, claimed_k2)
    _check(_is_zero(rest_points[0] - y_star), step, f"y* = {claimed_y_star}")
    _check(_is_zero(y_star - target_window / PAPER_W_STAR), step, "y* = gamma*C*T/w*")
    return f"{step}: k1 = {claimed_k1}, k2 = {claimed_k2}, y* = 1/(1 + k2) = gamma*C*T/w*"


def check_shifted_form(claimed_y_star: sp.Expr = PAPER_Y_STAR) -> str:
    """Eq. (18): with x = y - y*, eq. (17) becomes x' = -k1 (y* + x(t)) (x(t-T) + k2 x(t)).

    Since x' = y', it suffices that the right-hand side of (17) at y = y* + x equals that of (18),
    which holds because y* (1 + k2) = 1.
    """
    step = "step 3 (eq. 17 -> eq. 18)"
    x_now, x_delayed = sp.symbols("x x_T", real=True)
    y_star = claimed_y_star
    eq17_rhs = k1 * (y_star + x_now) * (1 - (y_star + x_delayed) - k2 * (y_star + x_now))
    eq18_rhs = -k1 * (y_star + x_now) * (x_delayed + k2 * x_now)
    _check(_is_zero(eq17_rhs - eq18_rhs), step, "(17) at y = y* + x equals (18)")
    return f"{step}: x' = -k1 (y* + x(t)) (x(t-T) + k2 x(t))"


def check_lyapunov_derivative(claimed_y_star: sp.Expr = PAPER_Y_STAR) -> str:
    """Eq. (29): the derivative of V in eq. (28) along (17), line by line.

    V(t) = y(t) - y* log y(t) + k1/2 int_{t-T}^t (y(tau) - y*)^2 dtau, so
    dV/dt = y'(1 - y*/y) + k1/2 [x(t)^2 - x(t-T)^2]
          = y' x(t)/y(t) + ...
          = -k1 x(t) [k2 x(t) + x(t-T)] + ...
          = -k1/2 [(2 k2 - 1) x(t)^2 + x(t-T)^2 + 2 x(t) x(t-T)]
          = -k1/2 {2 (k2 - 1) x(t)^2 + [x(t) + x(t-T)]^2}
          <= -k1 (k2 - 1) x(t)^2.
    """
    step = "step 4 (eq. 28 -> eq. 29)"
    y_star = claimed_y_star

    t, tau = sp.symbols("t tau", real=True)
    y_of_t = sp.Function("y", positive=True)
    lyapunov = (
        y_of_t(t)
        - y_star * sp.log(y_of_t(t))
        + k1 / 2 * sp.Integral((y_of_t(tau) - y_star) ** 2, (tau, t - T, t))
    )
    y_now, y_delayed = sp.symbols("y y_T", positive=True)
    y_dot = sp.Symbol("ydot", real=True)
    to_symbols = [(sp.Derivative(y_of_t(t), t), y_dot), (y_of_t(t - T), y_delayed), (y_of_t(t), y_now)]
    dv_dt = sp.diff(lyapunov, t).doit().subs(to_symbols)

    x_now, x_delayed = y_now - y_star, y_delayed - y_star
    integral_term = k1 / 2 * (x_now**2 - x_delayed**2)
    first_line = y_dot * (1 - y_star / y_now) + integral_term
    _check(_is_zero(dv_dt - first_line), step, "dV/dt = y'(1 - y*/y) + k1/2 [x(t)^2 - x(t-T)^2]")

    eq17_rhs = k1 * y_now * (1 - y_delayed - k2 * y_now)
    lines = [
        first_line,
        y_dot * x_now / y_now + integral_term,
        -k1 * x_now * (k2 * x_now + x_delayed) + integral_term,
        -k1 / 2 * ((2 * k2 - 1) * x_now**2 + x_delayed**2 + 2 * x_now * x_delayed),
        -k1 / 2 * (2 * (k2 - 1) * x_now**2 + (x_now + x_delayed) ** 2),
    ]
    for number, (line, next_line) in enumerate(zip(lines, lines[1:]), start=1):
        difference = (line - next_line).subs(y_dot, eq17_rhs)
        _check(_is_zero(difference), step, f"line {number} of (29) equals line {number + 1}")

    # The last line: dropping the square can only increase the right-hand side.
    x, x_t = sp.symbols("x x_T", real=True)
    last = -k1 / 2 * (2 * (k2 - 1) * x**2 + (x + x_t) ** 2)
    slack = sp.factor(last - (-k1 * (k2 - 1) * x**2))
    _check(slack.is_nonpositive, step, f"dV/dt + k1 (k2 - 1) x^2 = {slack} <= 0")
    return f"{step}: dV/dt = -k1/2 {{2(k2 - 1) x(t)^2 + [x(t) + x(t-T)]^2}} <= -k1 (k2 - 1) x(t)^2"


def check_exponential_inequality(
    claimed_integrand: sp.Expr = PAPER_G_INTEGRAND,
    sample_points: tuple[float, ...] = (0.05, 0.5, 1.0, 2.0, 5.0),
) -> str:
    """The inequality that contradicts eq. (27): 1 + u - exp(1 - exp(-u)) > 0 for u > 0.

    g(u) = 1 + u - exp(1 - exp(-u)) has g(0) = 0 and g'(0) = 0, and
    g''(u) = (1 - e^{-u}) e^{1 - e^{-u} - u}, the integrand of the paper's double integral, so
    g(u) = int_0^u int_0^zeta g''(eta) d eta d zeta. The integrand is positive for u > 0: its
    exponential factor is, and 1 - e^{-u} = int_0^u e^{-s} ds with e^{-s} > 0. Hence g(u) > 0.
    The double integral is also evaluated numerically with mpmath and compared with g(u).
    """
    step = "step 5 (eq. 27 inequality)"
    u = _u
    g = 1 + u - sp.exp(1 - sp.exp(-u))
    g_prime = sp.diff(g, u)
    g_second = sp.diff(g, u, 2)
    _check(sp.simplify(g.subs(u, 0)) == 0, step, "g(0) = 0")
    _check(sp.simplify(g_prime.subs(u, 0)) == 0, step, "g'(0) = 0")
    _check(_is_zero(g_second - claimed_integrand), step, "g''(u) equals the double integral's integrand")

    # The double integral reproduces g exactly (fundamental theorem with g(0) = g'(0) = 0).
    eta, zeta = sp.symbols("eta zeta", positive=True)
    inner = sp.integrate(claimed_integrand.subs(u, eta), (eta, 0, zeta))
    _check(_is_zero(inner - g_prime.subs(u, zeta)), step, "int_0^zeta g'' = g'(zeta)")
    outer = sp.integrate(inner, (zeta, 0, u))
    _check(_is_zero(outer - g), step, "int_0^u int_0^zeta g'' = g(u)")

    # Positivity of the integrand for u > 0.
    s = sp.Symbol("s", real=True)
    exponential_factor = sp.exp(1 - sp.exp(-u) - u)
    _check(_is_zero(claimed_integrand - (1 - sp.exp(-u)) * exponential_factor), step,
           "integrand = (1 - e^{-u}) * e^{1 - e^{-u} - u}")
    _check(exponential_factor.is_positive, step, "e^{1 - e^{-u} - u} > 0")
    _check(_is_zero(sp.integrate(sp.exp(-s), (s, 0, u)) - (1 - sp.exp(-u))), step,
           "1 - e^{-u} = int_0^u e^{-s} ds")
    _check(sp.exp(-s).is_positive and u.is_positive, step,
           "e^{-s} > 0 on an interval of positive length u, so 1 - e^{-u} > 0")
    # A positive integrand on (0, zeta) gives g'(zeta) > 0, and then g(u) > 0, for u > 0.

    integrand = sp.lambdify(u, claimed_integrand, "mpmath")
    g_numeric = sp.lambdify(u, g, "mpmath")
    with mpmath.workdps(30):
        for point in sample_points:
            value = mpmath.quad(lambda z: mpmath.quad(integrand, [0, z]), [0, point])
            expected = g_numeric(mpmath.mpf(point))
            _check(mpmath.almosteq(value, expected, rel_eps=mpmath.mpf(10) ** -20), step,
                   f"double integral = g(u) at u = {point}: {value} vs {expected}")
            _check(value > 0, step, f"g({point}) > 0")
    return f"{step}: g(0) = g'(0) = 0, g'' > 0 on u > 0, so 1 + u > exp(1 - exp(-u)); numerics agree"


def check_lemma_cover(kappa_bound: sp.Expr = PAPER_KAPPA_BOUND) -> str:
    """Theorem 1 from Lemmas 1 and 2: kappa <= 1/2 implies kappa <= 1 - a or kappa < a.

    Here a = N*alpha/(gamma*C*T) > 0; Lemma 1 needs kappa <= 1 - a, Lemma 2 needs kappa < a
    (i.e. k2 > 1). Case split: if a <= 1/2 then 1 - a >= 1/2 >= kappa; else kappa <= 1/2 < a.
    Contrapositive: if both failed, adding kappa > 1 - a and kappa >= a would give kappa > 1/2.
    """
    step = "step 6 (Theorem 1 from Lemmas 1 and 2)"
    bound = sp.sympify(kappa_bound)
    a = N * alpha / (gamma * C * T)
    # Lemma 2's hypothesis kappa < a is k2 > 1.
    _check(_is_zero(K2 - a / kappa), step, "k2 = a/kappa, so kappa < a iff k2 > 1")

    # kappa = bound - q with q >= 0 encodes kappa <= bound; split a at 1 - bound (1/2 for the paper).
    q = sp.Symbol("q", nonnegative=True)
    p_nonnegative = sp.Symbol("p", nonnegative=True)
    p_positive = sp.Symbol("p", positive=True)
    kappa_value = bound - q
    split = 1 - bound
    lemma1_margin = sp.simplify((1 - (split - p_nonnegative)) - kappa_value)  # case a <= split
    _check(lemma1_margin.is_nonnegative, step,
           f"case a <= {split}: 1 - a - kappa = {lemma1_margin} >= 0 (Lemma 1 applies)")
    lemma2_margin = sp.simplify((split + p_positive) - kappa_value)  # case a > split
    _check(lemma2_margin.is_positive, step,
           f"case a > {split}: a - kappa = {lemma2_margin} > 0 (Lemma 2 applies)")

    # Contrapositive: (kappa - (1 - a)) + (kappa - a) = 2 kappa - 1 must be <= 0 when kappa <= bound.
    k, a_symbol = sp.symbols("kappa a", positive=True)
    both_fail_sum = sp.simplify((k - (1 - a_symbol)) + (k - a_symbol))
    _check(_is_zero(both_fail_sum - (2 * k - 1)), step, "sum of the failed hypotheses is 2 kappa - 1")
    _check(both_fail_sum.subs(k, kappa_value).is_nonpositive, step,
           f"2 kappa - 1 <= 0 for kappa <= {bound}, so the hypotheses cannot both fail")
    return f"{step}: kappa <= {bound} gives kappa <= 1 - a (a <= {split}) or kappa < a (a > {split})"


STEPS = (
    check_equilibrium,
    check_change_of_variables,
    check_shifted_form,
    check_lyapunov_derivative,
    check_exponential_inequality,
    check_lemma_cover,
)


def main() -> None:
    """Run every step of Theorem 1 in order; the first failure raises AssertionError."""
    for run_step in STEPS:
        print(f"ok  {run_step()}", flush=True)
    print(f"Theorem 1 (VCP): all {len(STEPS)} steps verified", file=sys.stderr)


if __name__ == "__main__":
    main()
