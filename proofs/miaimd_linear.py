"""The linearization of VCP's MIAIMD model, eq. (14) of "One more bit is enough", step by step.

Eq. (14) for the total window w of N flows with one RTT T (`fluidcc.models.miaimd.MIAIMDAggregate`):

    w'(t) = (1/T) { kappa w(t) [gamma C T / w(t - T) - 1] + N alpha }.

Everything symbolic below is derived by `fluidcc.stability.symbolic` from the model's own field;
the steps are

1. the model's equilibrium is Theorem 1's w* = gamma C T + N alpha / kappa;
2. the linearization at w* is u' = -a u(t) - b u(t - T) with a = N alpha / (T w*) and
   b = kappa gamma C / w* (1/s), characteristic equation lambda + a + b e^{-lambda T} = 0;
3. with x = omega T, A = a T, B = b T the D-subdivision conditions are A + B cos x = 0 and
   x = B sin x, so on the first crossing B = sqrt(A^2 + x^2), x in (pi/2, pi), tan x = -x/A; the
   boundary B_b(A) = x / sin x tends to pi/2 as A -> 0, and since A + B = kappa exactly with A -> 0
   and B -> kappa when N alpha << kappa gamma C T, the linear boundary in kappa tends to pi/2;
4. on a grid of per-flow BDPs P = gamma C T / N (alpha = 1), the linear boundary kappa_lin(P)
   computed by `crossing_values` and by `linear_boundary` agree, exceeds Theorem 1's 1/2 (indeed
   pi/2) everywhere and tends to pi/2 for large P;
5. Hayes-type sufficient conditions for u' = -a u - b u(t - T), a, b > 0: stable whenever
   b T < pi/2 whatever a, and stable for every delay iff b <= a; which MIAIMD points meet them.

Each step is a function that takes the claimed expressions as arguments, defaulting to the
paper's, and raises AssertionError naming the step when a check fails (never a bare ``assert``).
Run it as ``python proofs/miaimd_linear.py``.
"""

from __future__ import annotations

import functools

import numpy as np
import sympy as sp

from fluidcc.models import miaimd
from fluidcc.stability import symbolic
from fluidcc.stability.linearize import linear_boundary, linear_roots

# The model's parameter symbols (fluidcc names them after the dataclass fields, positive reals):
# stability coefficient kappa, additive increase alpha (packets/RTT), target utilization gamma,
# capacity C (packets/s), RTT T (s), number of flows N.
kappa, alpha, gamma = sp.symbols("kappa alpha gamma", positive=True)
C = sp.Symbol("capacity_pps", positive=True)
T = sp.Symbol("rtt_s", positive=True)
N = sp.Symbol("n_flows", positive=True)
#: x = omega T, the normalized crossing frequency.
x = sp.Symbol("x", positive=True)
LAMBDA = symbolic.LAMBDA

# The paper's (and the brief's) claims.
PAPER_W_STAR = gamma * C * T + N * alpha / kappa
PAPER_A = N * alpha / (T * PAPER_W_STAR)  # 1/s
PAPER_B = kappa * gamma * C / PAPER_W_STAR  # 1/s
PAPER_KAPPA_LIMIT = sp.pi / 2
THEOREM1_KAPPA = 0.5

#: The numerical grid: per-flow BDPs P = gamma C T / N (packets), alpha = 1, and a fixed N, T, gamma.
BDP_GRID = (1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0, 3000.0, 10000.0)
GRID_ALPHA = 1.0
GRID_FLOWS = 10.0
GRID_RTT_S = 0.1
GRID_GAMMA = 0.98
#: The kappa interval bisected by `linear_boundary` (stable at the low end, unstable at the high end).
BRACKET = (0.1, 10.0)


def _check(condition: object, step: str, what: str) -> None:
    """Raise AssertionError("<step>: <what>") unless ``condition`` is exactly True."""
    if condition is not True and condition != sp.true:
        raise AssertionError(f"{step}: {what} (got {condition!r})")


def _is_zero(expr: sp.Expr) -> bool:
    return sp.simplify(sp.expand(expr)) == 0


def _grid_params(kappa_values, bdp=BDP_GRID):
    """MIAIMD aggregate parameters at per-flow BDPs `bdp` (packets) and the given kappas."""
    capacity = np.asarray(bdp, float) * GRID_FLOWS / (GRID_GAMMA * GRID_RTT_S)
    return miaimd.aggregate_params(kappa=kappa_values, capacity_pps=capacity, rtt_s=GRID_RTT_S,
                                   n_flows=GRID_FLOWS, alpha=GRID_ALPHA, gamma=GRID_GAMMA)


@functools.lru_cache(maxsize=1)
def _model() -> symbolic.SymbolicModel:
    return symbolic.symbolic_model(miaimd.MIAIMDAggregate(), _grid_params(THEOREM1_KAPPA))


def _normalized_on_axis() -> sp.Expr:
    """T (lambda + a + b e^{-lambda T}) / (coefficient of lambda), from fluidcc's quasi-polynomial,
    at lambda = i x / T: A + i x + B e^{-i x} by steps 2-3."""
    derived = sp.expand(symbolic.characteristic_quasipolynomial(_model()))
    lambda_coefficient = derived.coeff(LAMBDA)
    return sp.expand(T * derived / lambda_coefficient).subs(LAMBDA, sp.I * x / T)


def check_equilibrium(claimed_w_star: sp.Expr = PAPER_W_STAR) -> str:
    """The model's field at w(t) = w(t - T) = w vanishes only at w* = gamma C T + N alpha / kappa."""
    step = "step 1 (equilibrium)"
    model = _model()
    for name, symbol in (("kappa", kappa), ("alpha", alpha), ("gamma", gamma), ("capacity_pps", C),
                         ("rtt_s", T), ("n_flows", N)):
        _check(model.symbol(name) == symbol, step, f"the model's symbol for {name} is {symbol}")
    derived = symbolic.equilibrium(model)[model.state[0]]
    _check(_is_zero(derived - claimed_w_star), step, f"w* = {claimed_w_star}, derived {derived}")
    return f"{step}: w* = {derived}"


def check_linearization(claimed_a: sp.Expr = PAPER_A, claimed_b: sp.Expr = PAPER_B) -> str:
    """A_0 = -a and A_1 = -b at w*, and the quasi-polynomial is a positive multiple of
    lambda + a + b e^{-lambda T}."""
    step = "step 2 (linearization)"
    a0_matrix, (a1_matrix,) = symbolic.linearization(_model())
    a0, a1 = a0_matrix[0, 0], a1_matrix[0, 0]
    _check(_is_zero(a0 + claimed_a), step, f"du/dt coefficient of u(t) is -a = -({claimed_a}), derived {a0}")
    _check(_is_zero(a1 + claimed_b), step, f"coefficient of u(t - T) is -b = -({claimed_b}), derived {a1}")
    derived = symbolic.characteristic_quasipolynomial(_model())
    claimed = LAMBDA + claimed_a + claimed_b * sp.exp(-LAMBDA * T)
    factor = sp.factor(sp.simplify(derived / claimed))
    _check(not factor.has(LAMBDA), step, f"derived {derived} / ({claimed}) is free of lambda")
    _check(factor.is_positive, step, f"the factor {factor} is positive")
    _check(_is_zero(derived - factor * claimed), step, f"derived = {factor} * ({claimed})")
    return (f"{step}: u' = -a u - b u(t-T), a = {sp.factor(a0 * -1)}, b = {sp.factor(-a1)}; "
            f"quasi-polynomial = {factor} * (lambda + a + b e^(-lambda T))")


def check_d_subdivision(
    claimed_a: sp.Expr = PAPER_A,
    claimed_b: sp.Expr = PAPER_B,
    claimed_limit: sp.Expr = PAPER_KAPPA_LIMIT,
) -> str:
    """At lambda = i x / T the normalized quasi-polynomial is A + B cos x + i (x - B sin x);
    on it B^2 = A^2 + x^2, and the first crossing (cos x < 0 < sin x) has x in (pi/2, pi) and
    tan x = -x/A, i.e. A(x) = -x cot x, B(x) = x / sin x. A(x) increases from 0 on (pi/2, pi)
    (A'(x) = (2x - sin 2x) / (2 sin^2 x) > 0), so A -> 0 means x -> pi/2+ and B -> pi/2.
    From the model: A + B = kappa exactly, and A -> 0, B -> kappa as alpha -> 0 or C -> oo
    (N alpha << kappa gamma C T), so the boundary kappa = A + B_b(A) tends to claimed_limit."""
    step = "step 3 (D-subdivision)"
    B = sp.Symbol("B", positive=True)
    a_t, b_t = sp.simplify(claimed_a * T), sp.simplify(claimed_b * T)
    on_axis = sp.expand(_normalized_on_axis(), complex=True)
    real_part, imag_part = sp.re(on_axis), sp.im(on_axis)
    _check(_is_zero(real_part - (a_t + b_t * sp.cos(x))), step, f"Re = A + B cos x, derived {real_part}")
    _check(_is_zero(imag_part - (x - b_t * sp.sin(x))), step, f"Im = x - B sin x, derived {imag_part}")

    # On the boundary B cos x = -A and B sin x = x: the sum of squares.
    _check(_is_zero(sp.trigsimp((B * sp.cos(x)) ** 2 + (B * sp.sin(x)) ** 2) - B**2), step,
           "(B cos x)^2 + (B sin x)^2 = B^2, so B^2 = A^2 + x^2")
    second_quadrant = sp.Interval.open(sp.pi / 2, sp.pi)
    first_turn = sp.Interval.open(0, 2 * sp.pi)
    signs = sp.solveset(sp.cos(x) < 0, x, first_turn).intersect(sp.solveset(sp.sin(x) > 0, x, first_turn))
    _check(signs == second_quadrant, step, f"cos x < 0 < sin x on (0, 2 pi) exactly for x in {signs}")
    a_of_x, b_of_x = -x * sp.cot(x), x / sp.sin(x)
    _check(_is_zero(a_of_x + b_of_x * sp.cos(x)), step, "A(x) = -x cot x, B(x) = x / sin x: A + B cos x = 0")
    _check(_is_zero(x - b_of_x * sp.sin(x)), step, "x = B(x) sin x")
    _check(_is_zero(sp.tan(x) + x / a_of_x), step, "tan x = -x / A")
    _check(_is_zero(b_of_x**2 - a_of_x**2 - x**2), step, "B(x) = sqrt(A(x)^2 + x^2)")
    _check(_is_zero(sp.diff(a_of_x, x) - (2 * x - sp.sin(2 * x)) / (2 * sp.sin(x) ** 2)), step,
           "A'(x) = (2x - sin 2x) / (2 sin^2 x)")
    _check(_is_zero(sp.diff(2 * x - sp.sin(2 * x), x) - 4 * sp.sin(x) ** 2), step,
           "(2x - sin 2x)' = 4 sin^2 x >= 0 and 2x - sin 2x = 0 at x = 0, so A' > 0 for x > 0")
    a_limit = sp.limit(a_of_x, x, sp.pi / 2, "+")
    b_limit = sp.limit(b_of_x, x, sp.pi / 2, "+")
    _check(a_limit == 0, step, f"A(x) -> 0 as x -> pi/2+, got {a_limit}")
    _check(_is_zero(b_limit - claimed_limit), step, f"B_b -> {claimed_limit} as A -> 0, got {b_limit}")

    # The model's A and B.
    _check(_is_zero(a_t + b_t - kappa), step, f"A + B = kappa, with A = {a_t}, B = {b_t}")
    for name, variable, point in (("alpha -> 0", alpha, 0), ("C -> oo", C, sp.oo)):
        a_to, b_to = sp.limit(a_t, variable, point), sp.limit(b_t, variable, point)
        _check(a_to == 0, step, f"A -> 0 as {name}, got {a_to}")
        _check(_is_zero(b_to - kappa), step, f"B -> kappa as {name}, got {b_to}")
    # kappa_lin = A + B_b(A) along the boundary, parametrized by x.
    kappa_limit = sp.limit(a_of_x + b_of_x, x, sp.pi / 2, "+")
    _check(_is_zero(kappa_limit - claimed_limit), step, f"kappa_lin = A + B_b(A) -> {claimed_limit}, got {kappa_limit}")
    return (f"{step}: A + B cos x = 0, x = B sin x; B_b(A) = x/sin x with tan x = -x/A, x in (pi/2, pi); "
            f"A = {sp.factor(a_t)}, B = {sp.factor(b_t)}, A + B = kappa; as A -> 0: B_b, kappa_lin -> {b_limit}")


def check_kappa_boundary(
    bdp_grid: tuple[float, ...] = BDP_GRID,
    theorem_kappa: float = THEOREM1_KAPPA,
    claimed_limit: float = float(PAPER_KAPPA_LIMIT),
    agreement: float = 1e-6,
) -> str:
    """kappa_lin(P), the smallest kappa at which a root reaches the imaginary axis, by
    `crossing_values` (first crossing) and by `linear_boundary` bisection (on `BRACKET`): they
    agree, satisfy step 3's conditions, exceed theorem_kappa and claimed_limit, and decrease
    towards claimed_limit (relative gap < 1e-3 at the largest P)."""
    step = "step 4 (kappa_lin vs Theorem 1)"
    model = _model()
    bdp = np.asarray(bdp_grid, float)
    capacity = bdp * GRID_FLOWS / (GRID_GAMMA * GRID_RTT_S)
    first = []
    for c in capacity:
        fixed = {"alpha": GRID_ALPHA, "gamma": GRID_GAMMA, "capacity_pps": float(c),
                 "rtt_s": GRID_RTT_S, "n_flows": GRID_FLOWS}
        crossings = symbolic.crossing_values(model, "kappa", fixed, omega_max=4 * np.pi / GRID_RTT_S)
        _check(crossings.size > 0, step, f"a crossing in kappa at P = {c}")
        first.append(crossings[0])
    first = np.array(first)

    def build(values):
        return miaimd.MIAIMDAggregate(), _grid_params(values, bdp)

    low, high = BRACKET
    bisected = linear_boundary(build, np.full(bdp.shape, low), np.full(bdp.shape, high))
    _check(bool(np.all(np.isfinite(bisected))), step,
           f"the abscissa changes sign between kappa = {low} and {high} at every P: {bisected}")
    relative = np.abs(first / bisected - 1)
    _check(bool(np.all(relative <= agreement)), step, f"crossing_values and linear_boundary agree: {relative}")

    # Step 3's conditions at the boundary: x = sqrt(B^2 - A^2), A + B cos x = 0.
    big_a = first * GRID_ALPHA / (GRID_ALPHA + first * bdp)
    big_b = first**2 * bdp / (GRID_ALPHA + first * bdp)
    x_b = np.sqrt(big_b**2 - big_a**2)
    _check(bool(np.all(np.abs(big_a + big_b * np.cos(x_b)) <= 1e-9 * big_b)), step,
           "A + B cos x = 0 with x = sqrt(B^2 - A^2) at kappa_lin")
    _check(bool(np.all((x_b > np.pi / 2) & (x_b < np.pi))), step, f"x in (pi/2, pi): {x_b}")

    _check(bool(np.all(first > theorem_kappa)), step, f"kappa_lin > {theorem_kappa} on the grid: {first}")
    _check(bool(np.all(first > claimed_limit)), step, f"kappa_lin > {claimed_limit:.6f} on the grid: {first}")
    gap = first - claimed_limit
    _check(bool(np.all(np.diff(gap) < 0)), step, f"kappa_lin decreases with P: gaps {gap}")
    _check(bool(gap[-1] / claimed_limit < 1e-3), step,
           f"kappa_lin({bdp[-1]:g}) within 1e-3 of {claimed_limit:.6f}: {first[-1]}")

    print(f"    {'P (pkts)':>9}  {'kappa_lin':>10}  {'bisection':>10}  {'rel. diff':>9}  "
          f"{'x = omega T':>11}  {'kappa_lin/(1/2)':>15}  {'kappa_lin - pi/2':>16}")
    for row in zip(bdp, first, bisected, relative, x_b, first / theorem_kappa, gap):
        print("    {:9g}  {:10.6f}  {:10.6f}  {:9.1e}  {:11.6f}  {:15.4f}  {:16.3e}".format(*row))
    return (f"{step}: on P = {bdp[0]:g}..{bdp[-1]:g} packets (alpha = {GRID_ALPHA}), kappa_lin from "
            f"{first[0]:.4f} down to {first[-1]:.6f} (pi/2 = {np.pi / 2:.6f}), {first.min() / theorem_kappa:.3f} "
            f"to {first.max() / theorem_kappa:.3f} times Theorem 1's {theorem_kappa}; the two methods agree "
            f"to {relative.max():.1e}")


def check_sufficient_conditions(
    claimed_bound: sp.Expr = sp.pi / 2,
    bdp_grid: tuple[float, ...] = BDP_GRID,
    theorem_kappa: float = THEOREM1_KAPPA,
) -> str:
    """For u' = -a u - b u(t - T), a, b > 0 (Hayes): a root on the imaginary axis needs
    B = sqrt(A^2 + x^2) = B_b(A) with x in (pi/2, pi) (step 3; lambda = 0 is never a root as
    A + B > 0), and B_b(A) = x / sin x > x > pi/2 there, so B < claimed_bound = pi/2 keeps every
    root left of the axis, whatever A (the roots move continuously from T = 0, where the only one
    is -(a + b) < 0). B > A is needed for any crossing (x = sqrt(B^2 - A^2) > 0), so b <= a gives
    stability for every delay; b > a loses it at T = arccos(-a/b) / sqrt(b^2 - a^2), where
    lambda = i sqrt(b^2 - a^2) is a root. For MIAIMD, B = kappa - A < kappa, so every point with
    kappa <= pi/2 (Theorem 1's kappa <= 1/2 in particular) has B < pi/2; B <= A iff kappa P <= alpha."""
    step = "step 5 (sufficient conditions)"
    boundary_points = sp.Interval.open(sp.pi / 2, sp.pi)
    _check(sp.solveset(sp.sin(x) >= 1, x, boundary_points) == sp.EmptySet, step, "sin x < 1 on (pi/2, pi)")
    _check(sp.solveset(sp.sin(x) <= 0, x, boundary_points) == sp.EmptySet, step, "sin x > 0 on (pi/2, pi)")
    # On (pi/2, pi), x / sin x > x > pi/2 >= claimed_bound would be needed; check the last link.
    _check(sp.simplify(sp.pi / 2 - sp.sympify(claimed_bound)).is_nonnegative, step,
           f"the bound {claimed_bound} is at most pi/2 = inf of B_b(A) = x / sin x over x in (pi/2, pi)")

    # b > a > 0 written as b = sqrt(a^2 + omega0^2), omega0 > 0; at T = arccos(-a/b) / omega0,
    # exp(-i omega0 T) = cos(theta) - i sin(theta) with theta = arccos(-a/b) in (pi/2, pi).
    a_, omega0 = sp.symbols("a omega0", positive=True)
    b_ = sp.sqrt(a_**2 + omega0**2)
    theta = sp.acos(-a_ / b_)
    at_crossing = sp.I * omega0 + a_ + b_ * (sp.cos(theta) - sp.I * sp.sin(theta))
    _check(_is_zero(at_crossing), step,
           "lambda = i sqrt(b^2 - a^2) is a root at T = arccos(-a/b) / sqrt(b^2 - a^2) (b > a)")

    # The MIAIMD points: B = kappa - A with A > 0, and B <= A iff kappa P <= alpha.
    a_t, b_t = sp.simplify(PAPER_A * T), sp.simplify(PAPER_B * T)
    _check(sp.factor(b_t - kappa).is_negative, step, f"B - kappa = {sp.factor(b_t - kappa)} < 0")
    per_flow_bdp = sp.Symbol("P", positive=True)
    in_p = {C: per_flow_bdp * N / (gamma * T)}
    ratio = sp.simplify((b_t / a_t).subs(in_p))
    _check(_is_zero(ratio - kappa * per_flow_bdp / alpha), step, f"B / A = kappa P / alpha, got {ratio}")

    bdp = np.asarray(bdp_grid, float)
    big_a = theorem_kappa * GRID_ALPHA / (GRID_ALPHA + theorem_kappa * bdp)
    big_b = theorem_kappa**2 * bdp / (GRID_ALPHA + theorem_kappa * bdp)
    bound = float(claimed_bound)
    _check(bool(np.all(big_b < bound)), step, f"B = bT < {bound:.6f} on the grid at kappa = {theorem_kappa}: {big_b}")
    delay_independent = bdp[big_b <= big_a]
    _, roots = linear_roots(miaimd.MIAIMDAggregate(), _grid_params(theorem_kappa, bdp))
    _check(bool(np.all(roots.converged) and np.all(roots.stable)), step,
           f"linear_roots: stable at kappa = {theorem_kappa} on the grid, abscissa {roots.abscissa}")
    return (f"{step}: b T < pi/2 suffices for any a; b <= a iff stable for every delay. At kappa = "
            f"{theorem_kappa}, alpha = {GRID_ALPHA}: bT = {big_b.min():.4f}..{big_b.max():.4f} < pi/2 on the whole "
            f"grid; b <= a (delay-independent) only for P <= alpha/kappa = {GRID_ALPHA / theorem_kappa:g}: "
            f"P = {', '.join(f'{p:g}' for p in delay_independent) or 'none'}")


STEPS = (
    check_equilibrium,
    check_linearization,
    check_d_subdivision,
    check_kappa_boundary,
    check_sufficient_conditions,
)


def main() -> None:
    """Run every step in order; the first failure raises AssertionError (exit code 1)."""
    for run_step in STEPS:
        print(f"ok  {run_step()}", flush=True)
    print(f"ok  MIAIMD linearization (eq. 14): all {len(STEPS)} steps verified")


if __name__ == "__main__":
    main()
