"""The SymPy layer: derived from the models' own code, and consistent with the numerical layer."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import brentq

from fluidcc.errors import ParameterError
from fluidcc.models import MIAIMD, MIAIMDAggregate, QCPAggregate, RCPAggregate, XCPAggregate, miaimd, qcp, rcp, xcp
from fluidcc.stability import symbolic
from fluidcc.stability.linear import characteristic_matrix
from fluidcc.stability.linearize import linear_boundary, linearize


def _cases():
    return {
        "xcp": (XCPAggregate(), lambda v: xcp.aggregate_params(capacity_pps=v["c"], rtt_s=v["d"], alpha=v["a"], beta=v["b"])),
        "qcp": (QCPAggregate(), lambda v: qcp.aggregate_params(capacity_pps=v["c"], rtt_s=v["d"], alpha=v["a"], beta=v["b"])),
        "rcp": (RCPAggregate(), lambda v: rcp.aggregate_params(capacity_pps=v["c"], rtt_s=v["d"], n_flows=v["n"],
                                                               alpha=v["a"], beta=v["b"])),
        "miaimd": (MIAIMDAggregate(), lambda v: miaimd.aggregate_params(kappa=v["a"], capacity_pps=v["c"], rtt_s=v["d"],
                                                                        n_flows=v["n"], alpha=v["b"])),
    }


@pytest.fixture(scope="module")
def models():
    point = {"a": 0.5, "b": 0.5, "c": 1e4, "d": 0.1, "n": 10.0}
    return {name: (system, build, symbolic.symbolic_model(system, build(point)))
            for name, (system, build) in _cases().items()}


@settings(max_examples=15, deadline=None)
@given(a=st.floats(0.05, 2.0), b=st.floats(0.05, 2.0), c=st.floats(100.0, 1e6), d=st.floats(0.001, 2.0),
       n=st.integers(1, 2000))
def test_symbolic_linearization_equals_automatic_differentiation(models, a, b, c, d, n):
    point = {"a": a, "b": b, "c": c, "d": d, "n": float(n)}
    for name, (system, build, model) in models.items():
        params = build(point)
        lin = linearize(system, params)
        values = {field: np.asarray(getattr(params, field)) for field in model.parameters}
        a0, ak = symbolic.numeric_matrices(model)(values)
        scale = 1.0 + np.max(np.abs(lin.a0)) + np.max(np.abs(lin.a_delayed))
        np.testing.assert_allclose(a0, lin.a0, atol=1e-12 * scale, err_msg=name)
        np.testing.assert_allclose(ak, lin.a_delayed, atol=1e-12 * scale, err_msg=name)
        # the symbolic equilibrium is the model's own
        eq = symbolic.equilibrium(model)
        subs = {model.parameters[f]: float(values[f][0]) for f in model.parameters}
        derived = np.array([float(eq[s].subs(subs)) for s in model.state])
        np.testing.assert_allclose(derived, system.equilibrium_state(params)[0], rtol=1e-12, atol=1e-9, err_msg=name)


def test_equilibria_and_quasipolynomial_of_the_efficiency_loop(models):
    model = models["xcp"][2]
    p = model.parameters
    assert symbolic.equilibrium(model) == {model.state[0]: 0, model.state[1]: p["capacity_pps"]}
    lam, d = symbolic.LAMBDA, p["rtt_s"]
    expected = lam**2 + (p["alpha"] / d) * lam * sp.exp(-lam * d) + (p["beta"] / d**2) * sp.exp(-lam * d)
    # the same up to a positive factor free of lambda (the cleared denominator)
    for name in ("xcp", "rcp"):  # RCP's smooth form has the same equation (y = N R(t - d))
        ratio = sp.simplify(symbolic.characteristic_quasipolynomial(models[name][2]) / expected)
        assert not ratio.has(lam) and ratio.is_positive, (name, ratio)


@pytest.mark.parametrize("name", ["xcp", "rcp"])
def test_d_subdivision_curve_puts_a_root_on_the_imaginary_axis(models, name):
    system, build, model = models[name]
    curve = symbolic.d_subdivision(model, ("alpha", "beta"))
    d = 0.08
    omega = np.linspace(0.05, 1.5, 30) / d
    alpha, beta = curve.evaluate(omega, {"rtt_s": d, "capacity_pps": 1e4, "n_flows": 7})
    params = build({"a": alpha, "b": beta, "c": 1e4, "d": d, "n": 7.0})
    lin = linearize(system, params)
    delta, _ = characteristic_matrix((1j * omega * d)[:, None], lin.a0 * d, lin.a_delayed * d, np.ones((30, 1)))
    np.testing.assert_allclose(np.abs(np.linalg.det(delta[:, 0])), 0.0, atol=1e-10)
    # lambda = 0 is a root only when beta = 0 (the other edge of the region)
    assert sp.simplify(curve.real_root[0].subs(model.parameters["beta"], 0)) == 0


def test_linear_boundary_agrees_with_closed_form_d_subdivision():
    # For fixed alpha, bisection on the sign of the spectral abscissa along beta must land on the
    # D-subdivision curve alpha = w sin w, beta = w^2 cos w (w = omega d) derived by SymPy.
    d = 0.05
    model = symbolic.symbolic_model(XCPAggregate(), xcp.aggregate_params(capacity_pps=1e4, rtt_s=d))
    curve = symbolic.d_subdivision(model, ("alpha", "beta"))
    alphas = np.array([0.05, 0.2, 0.4, 0.8, 1.2, 1.5])
    f_alpha = sp.lambdify(symbolic.OMEGA, curve.curve[model.parameters["alpha"]].subs(model.parameters["rtt_s"], d))
    f_beta = sp.lambdify(symbolic.OMEGA, curve.curve[model.parameters["beta"]].subs(model.parameters["rtt_s"], d))
    expected = []
    for a in alphas:  # the branch 0 < omega d < pi / 2, where beta > 0
        w = brentq(lambda om: f_alpha(om) - a, 1e-9 / d, (np.pi / 2) / d, xtol=1e-15, rtol=1e-15)
        expected.append(f_beta(w))
    expected = np.array(expected)

    def build(beta):
        return XCPAggregate(), xcp.aggregate_params(capacity_pps=1e4, rtt_s=d, alpha=alphas, beta=beta)

    found = linear_boundary(build, np.full(6, 1e-3), np.full(6, 1.2))
    np.testing.assert_allclose(found, expected, rtol=1e-6)


def test_numerical_d_subdivision_of_miaimd_agrees_with_bisection():
    params = miaimd.aggregate_params(kappa=0.5, capacity_pps=18750.0, rtt_s=0.08, n_flows=50)
    model = symbolic.symbolic_model(MIAIMDAggregate(), params)
    fixed = {"alpha": 1.0, "gamma": 0.98, "capacity_pps": 18750.0, "rtt_s": 0.08, "n_flows": 50.0,
             "initial_window": 1.0}
    crossing = symbolic.crossing_values(model, "kappa", fixed, omega_max=2 * np.pi / 0.08)[0]

    def build(kappa):
        return MIAIMDAggregate(), miaimd.aggregate_params(kappa=kappa, capacity_pps=18750.0, rtt_s=0.08, n_flows=50)

    bisected = linear_boundary(build, np.array([0.1]), np.array([3.0]))[0]
    assert abs(crossing - bisected) <= 1e-6 * bisected
    # above Hutchinson's pi/2, which it approaches from above as the per-flow BDP grows (here 29 packets)
    assert np.pi / 2 < crossing < 1.7


def test_bad_input(models):
    model = models["xcp"][2]
    with pytest.raises(ParameterError, match="kappa"):
        model.symbol("kappa")
    with pytest.raises(ParameterError, match="two parameter names"):
        symbolic.d_subdivision(model, ("alpha",))
    per_flow = miaimd.flow_params(kappa=0.5, capacity_pps=1e4, rtt_s=[0.05, 0.1])
    with pytest.raises(symbolic.SymbolicError, match="no symbolic form"):
        symbolic.symbolic_model(MIAIMD(), per_flow)
