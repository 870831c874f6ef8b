"""Symbolic stability analysis with SymPy, derived from each model's own vector field.

A model that writes its field once through `DDESystem.field_terms(t, x, x_delayed, params, ops)`
is evaluated here with SymPy symbols in place of its state, delayed states and parameters, so
nothing below is retyped by hand:

* `symbolic_model(system, params)`: the field f(x, x(t - tau_1), ...; p) as a SymPy matrix, for
  the model's smooth form (`system.linearizable()`: projections at q = 0 dropped);
* `equilibrium(model)`: the solution of f(x*, x*, ..., x*) = 0;
* `linearization(model)`: A_0 = df/dx and A_k = df/dx(t - tau_k) at x*;
* `characteristic_quasipolynomial(model)`: det(lambda I - A_0 - sum_k A_k exp(-lambda tau_k));
* `d_subdivision(model, (p1, p2))`: the D-subdivision boundary, where a root crosses the
  imaginary axis: lambda = i omega substituted, real and imaginary parts solved for two parameters
  in closed form as functions of omega (plus the lambda = 0 boundary), where SymPy can;
* `crossing_values(model, parameter, fixed)`: the same boundary numerically along one parameter
  (every other parameter a number), where no closed form exists.

Parameters are the fields of the model's parameter dataclass, as positive real symbols named like
the fields (``alpha``, ``capacity_pps``, ``rtt_s``, ...); states are named like the model's
`state_names`, delayed states ``<name>_d<k>``. Float constants in a model's field are read as the
rationals they spell (1.0 -> 1, 0.5 -> 1/2), so the algebra is exact.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import sympy as sp
from scipy.optimize import brentq

from ..dde import DDESystem
from ..errors import FluidccError, ParameterError


class SymbolicError(FluidccError, RuntimeError):
    """SymPy could not carry out a derivation (no unique equilibrium, no closed form, ...)."""


class SympyOps:
    """The operations `field_terms` may use, as SymPy expressions (the twin of `JAX_OPS`)."""

    exp = staticmethod(sp.exp)
    log = staticmethod(sp.log)

    @staticmethod
    def maximum(a, b):
        return sp.Max(a, b)

    @staticmethod
    def minimum(a, b):
        return sp.Min(a, b)

    @staticmethod
    def where(condition, if_true, if_false):
        return sp.Piecewise((if_true, condition), (if_false, True))

    @staticmethod
    def positive(value):
        return value > 0


SYMPY_OPS = SympyOps()

#: The Laplace variable of characteristic equations and the frequency of the D-subdivision.
LAMBDA = sp.Symbol("lambda")
OMEGA = sp.Symbol("omega", positive=True)


@dataclass(frozen=True)
class SymbolicModel:
    """A model's smooth vector field in SymPy.

    system: the smooth form that was evaluated. parameters: field name -> symbol. state: the n
    state symbols; delayed[k][i]: state i delayed by delays[k]. field: (n, 1) matrix of dx/dt.
    """

    system: DDESystem
    parameters: dict[str, sp.Symbol]
    state: tuple[sp.Symbol, ...]
    delayed: tuple[tuple[sp.Symbol, ...], ...]
    delays: tuple[sp.Expr, ...]
    field: sp.Matrix

    def symbol(self, name: str) -> sp.Symbol:
        """The symbol of a parameter field (raises ParameterError naming the known fields)."""
        try:
            return self.parameters[name]
        except KeyError:
            raise ParameterError("parameter", name, f"a parameter of {self.system.name}: "
                                 f"{', '.join(self.parameters)}") from None


def symbolic_model(system: DDESystem, params: Any) -> SymbolicModel:
    """Evaluate `system.linearizable().field_terms` with symbols.

    params: any parameter batch of the model (only its type and field names are used).
    """
    smooth = system.linearizable()
    if not dataclasses.is_dataclass(params):
        raise ParameterError("params", type(params).__name__, "a model parameter dataclass")
    names = [f.name for f in dataclasses.fields(params)]
    symbols = {name: sp.Symbol(name, positive=True) for name in names}
    symbolic_params = type(params)(**symbols)
    point = type(params)(**{name: np.asarray(getattr(params, name))[0] for name in names})
    state_names = smooth.state_names(point)
    state = tuple(sp.Symbol(name, real=True) for name in state_names)
    try:
        delays = tuple(sp.sympify(d) for d in smooth.delay_terms(symbolic_params))
        delayed = tuple(tuple(sp.Symbol(f"{name}_d{k}", real=True) for name in state_names)
                        for k in range(len(delays)))
        terms = smooth.field_terms(sp.Symbol("t", real=True), state, delayed, symbolic_params, SYMPY_OPS)
    except NotImplementedError as error:
        raise SymbolicError(f"{smooth.name} has no symbolic form: {error}") from None
    return SymbolicModel(smooth, symbols, state, delayed, delays, sp.Matrix([sp.nsimplify(sp.sympify(t), rational=True) for t in terms]))


def _at_steady_state(model: SymbolicModel, expr):
    """Substitute x(t - tau_k) = x(t) in expr."""
    return expr.subs({d: s for row in model.delayed for d, s in zip(row, model.state)})


def equilibrium(model: SymbolicModel) -> dict[sp.Symbol, sp.Expr]:
    """The unique solution of f(x*, x*, ..., x*) = 0 (raises SymbolicError otherwise)."""
    equations = list(_at_steady_state(model, model.field))
    solutions = sp.solve(equations, list(model.state), dict=True)
    if len(solutions) != 1 or set(solutions[0]) != set(model.state):
        raise SymbolicError(f"{model.system.name}: expected one equilibrium, SymPy found {solutions}")
    return {s: sp.simplify(solutions[0][s]) for s in model.state}


def linearization(model: SymbolicModel, at: Mapping[sp.Symbol, sp.Expr] | None = None):
    """(A_0, [A_1, ..., A_K]) at the equilibrium (or at `at`), simplified SymPy matrices."""
    at = equilibrium(model) if at is None else at
    point = {**{s: at[s] for s in model.state},
             **{d: at[s] for row in model.delayed for d, s in zip(row, model.state)}}
    a0 = sp.simplify(model.field.jacobian(list(model.state)).subs(point))
    ak = [sp.simplify(model.field.jacobian(list(row)).subs(point)) for row in model.delayed]
    return a0, ak


def characteristic_quasipolynomial(model: SymbolicModel, at: Mapping[sp.Symbol, sp.Expr] | None = None) -> sp.Expr:
    """det(lambda I - A_0 - sum_k A_k exp(-lambda tau_k)) in the symbol `LAMBDA`, expanded and
    multiplied by its denominator, a positive product of parameters (d^2 for XCP's loop,
    T (N alpha + kappa gamma C T) for MIAIMD), so it has the same roots as the determinant."""
    a0, ak = linearization(model, at)
    n = a0.shape[0]
    delta = LAMBDA * sp.eye(n) - a0
    for a, tau in zip(ak, model.delays):
        delta -= a * sp.exp(-LAMBDA * tau)
    # Cleared of denominators that are positive at the equilibrium (parameters and exponentials),
    # so the roots are unchanged; exponential factors of the denominator are moved back up as
    # exp(-lambda tau), the usual form.
    numerator, denominator = sp.fraction(sp.together(sp.simplify(delta.det())))
    exponentials = [f for f in sp.Mul.make_args(sp.factor(denominator)) if f.has(LAMBDA)]
    for factor in exponentials:
        numerator = numerator / factor
    return sp.expand(sp.powsimp(sp.expand(numerator)))


@dataclass(frozen=True)
class DSubdivision:
    """The D-subdivision boundary of two parameters in closed form.

    curve: {p1: p1(omega), p2: p2(omega)} where lambda = i omega (omega > 0, rad/s) is a root;
    real_root: expressions (the quasi-polynomial at lambda = 0) that vanish where lambda = 0 is a
        root — the other boundary.
    """

    parameters: tuple[sp.Symbol, sp.Symbol]
    curve: dict[sp.Symbol, sp.Expr]
    real_root: tuple[sp.Expr, ...]
    quasipolynomial: sp.Expr

    def evaluate(self, omega: np.ndarray, values: Mapping[str, float] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The curve (p1, p2) at frequencies omega (rad/s) with the other parameters given numerically."""
        subs = {sp.Symbol(k, positive=True): v for k, v in (values or {}).items()}
        out = []
        for p in self.parameters:
            expr = self.curve[p].subs(subs)
            free = expr.free_symbols - {OMEGA}
            if free:
                raise ParameterError("values", sorted(str(s) for s in free), "numbers for every other parameter")
            f = sp.lambdify(OMEGA, expr, "numpy")
            out.append(np.broadcast_to(np.asarray(f(np.asarray(omega, dtype=float)), dtype=float), np.shape(omega)))
        return out[0], out[1]


def d_subdivision(model: SymbolicModel, parameters: Sequence[str]) -> DSubdivision:
    """Substitute lambda = i omega in the characteristic quasi-polynomial and solve its real and
    imaginary parts for two parameters, in closed form (raises SymbolicError where SymPy cannot)."""
    if len(parameters) != 2:
        raise ParameterError("parameters", list(parameters), "two parameter names")
    p1, p2 = (model.symbol(name) for name in parameters)
    char = characteristic_quasipolynomial(model)
    on_axis = sp.expand(char.subs(LAMBDA, sp.I * OMEGA), complex=True)
    re, im = sp.re(on_axis), sp.im(on_axis)
    solutions = sp.solve([re, im], [p1, p2], dict=True)
    solutions = [s for s in solutions if set(s) == {p1, p2}]
    if len(solutions) != 1:
        raise SymbolicError(f"{model.system.name}: no unique closed-form D-subdivision in "
                            f"({p1}, {p2}); SymPy found {solutions}")
    curve = {p: sp.simplify(solutions[0][p]) for p in (p1, p2)}
    at_zero = sp.simplify(char.subs(LAMBDA, 0))
    return DSubdivision((p1, p2), curve, (at_zero,), char)


def crossing_values(
    model: SymbolicModel,
    parameter: str,
    fixed: Mapping[str, float],
    omega_max: float,
    *,
    samples: int = 4000,
) -> np.ndarray:
    """Values of one parameter at which a root crosses the imaginary axis, every other parameter
    fixed numerically: the numerical D-subdivision where no closed form exists.

    The characteristic function at lambda = i omega is sampled on omega in (0, omega_max] (rad/s);
    for each omega, the parameter value that zeroes the real part is found, and the crossings are
    where the imaginary part vanishes too (found by bracketing and Brent's method). Returns the
    sorted crossing values (the parameter's units) of roots with omega > 0, every branch: the
    first is the stability boundary of a family stable at small values.
    """
    p = model.symbol(parameter)
    char = characteristic_quasipolynomial(model)
    subs = {model.symbol(k): v for k, v in fixed.items() if k != parameter}
    expr = char.subs(subs).subs(LAMBDA, sp.I * OMEGA)
    free = expr.free_symbols - {OMEGA, p}
    if free:
        raise ParameterError("fixed", sorted(str(s) for s in free), "numbers for every other parameter")
    re_f = sp.lambdify((p, OMEGA), sp.re(sp.expand(expr, complex=True)), "numpy")
    im_f = sp.lambdify((p, OMEGA), sp.im(sp.expand(expr, complex=True)), "numpy")
    # Along the curve Re = 0 solved for the parameter, look for sign changes of Im.
    re_solutions = sp.solve(sp.re(sp.expand(expr, complex=True)), p)
    found: list[float] = []
    omegas = np.linspace(omega_max / samples, omega_max, samples)
    for branch in re_solutions:
        value_of = sp.lambdify(OMEGA, branch, "numpy")
        with np.errstate(all="ignore"):
            values = np.broadcast_to(np.asarray(value_of(omegas), dtype=float), omegas.shape)
            imag = np.asarray(im_f(values, omegas), dtype=float)
        ok = np.isfinite(imag) & np.isfinite(values) & (values > 0)
        for j in np.flatnonzero(ok[:-1] & ok[1:] & (np.sign(imag[:-1]) != np.sign(imag[1:]))):
            g = lambda w: float(im_f(float(value_of(w)), w))  # noqa: E731
            w = brentq(g, omegas[j], omegas[j + 1], xtol=1e-15, rtol=1e-15)
            value = float(value_of(w))
            # Re = 0 holds on the branch by construction; this guards against a branch that is
            # not real there, relative to the size of the function near the crossing.
            scale = max(abs(float(imag[j])), abs(float(imag[j + 1])), 1.0)
            if abs(float(re_f(value, w))) <= 1e-8 * scale:
                found.append(value)
    return np.array(sorted(found))


def numeric_matrices(model: SymbolicModel) -> callable:
    """A function (values: {field: array (B,)}) -> (A_0 (B, n, n), A_k (B, K, n, n)) from the
    symbolic linearization, for checking the automatic differentiation in `linearize`."""
    a0, ak = linearization(model)
    args = list(model.parameters.values())
    f0 = sp.lambdify(args, a0, "numpy")
    fk = [sp.lambdify(args, a, "numpy") for a in ak]

    def evaluate(values: Mapping[str, Iterable[float]]):
        arrays = [np.asarray(values[name], dtype=float) for name in model.parameters]
        size = max(a.size for a in arrays)
        arrays = [np.broadcast_to(a, (size,)) for a in arrays]
        n = a0.shape[0]
        m0 = np.empty((size, n, n))
        mk = np.empty((size, len(fk), n, n))
        for b in range(size):
            point = [a[b] for a in arrays]
            m0[b] = np.asarray(f0(*point), dtype=float)
            for k, f in enumerate(fk):
                mk[b, k] = np.asarray(f(*point), dtype=float)
        return m0, mk

    return evaluate
