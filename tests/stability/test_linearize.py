"""Linearization by automatic differentiation, linear boundaries, and linear stability maps."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.models import MIAIMDAggregate, miaimd
from fluidcc.stability.linearize import linear_boundary, linear_roots, linearize
from fluidcc.sweep import SweepSpec, linear_map, parse_grid
from fluidcc.sweep._stability import near_boundary


def _miaimd(kappa, alpha=1.0, capacity=18750.0, rtt=0.08, flows=50):
    return MIAIMDAggregate(), miaimd.aggregate_params(
        kappa=kappa, alpha=alpha, capacity_pps=capacity, rtt_s=rtt, n_flows=flows)


def test_miaimd_linearization_matches_the_derivatives_of_eq_14():
    kappa = np.array([0.1, 0.25, 1.0, 2.5])
    system, params = _miaimd(kappa, rtt=np.array([0.01, 0.08, 0.2, 1.0]), flows=np.array([10, 50, 200, 1000]))
    lin = linearize(system, params)
    # By hand from eq. (14): at w*, d/dw = kappa (gamma C T / w* - 1) / T = -N alpha / (T w*) and
    # d/dw(t - T) = -kappa gamma C / w*.
    rtt, flows, capacity = np.array([0.01, 0.08, 0.2, 1.0]), np.array([10, 50, 200, 1000.0]), 18750.0
    w_star = 0.98 * capacity * rtt + flows / kappa
    np.testing.assert_allclose(lin.equilibrium[:, 0], w_star, rtol=1e-14)
    np.testing.assert_allclose(lin.a0[:, 0, 0], -flows / (rtt * w_star), rtol=1e-12)
    np.testing.assert_allclose(lin.a_delayed[:, 0, 0, 0], -kappa * 0.98 * capacity / w_star, rtol=1e-12)
    np.testing.assert_allclose(lin.delays[:, 0], rtt)
    assert np.all(lin.residual < 1e-12)


def test_boundary_without_additive_increase_is_pi_over_two():
    # alpha = 0: w' = -(kappa / T) (w(t - T) - w*) near w* = gamma C T, stable iff kappa < pi / 2.
    rtts = np.array([0.01, 0.1, 0.7])
    boundary = linear_boundary(lambda k: _miaimd(k, alpha=0.0, rtt=rtts), np.full(3, 0.5), np.full(3, 3.0))
    np.testing.assert_allclose(boundary, np.pi / 2, rtol=1e-10)


def test_boundary_without_sign_change_is_nan_and_verdicts_follow_it():
    boundary = linear_boundary(lambda k: _miaimd(k), np.array([0.1, 0.1]), np.array([0.5, 3.0]))
    assert np.isnan(boundary[0]) and 1.5 < boundary[1] < 2.0
    _, roots = linear_roots(*_miaimd(np.array([boundary[1] * 0.999, boundary[1] * 1.001])))
    assert roots.stable.tolist() == [True, False]


def test_equilibrium_shape_is_checked():
    system, params = _miaimd(np.array([0.2, 0.3]))
    with pytest.raises(ParameterError, match="equilibrium"):
        linearize(system, params, equilibrium=np.ones((3, 1)))


def test_linear_map_over_a_grid():
    spec = SweepSpec(model="miaimd", axes=(parse_grid("miaimd", "kappa=0.2:3:15"), parse_grid("miaimd", "rtt=20ms,200ms")))
    lin = linear_map(spec, chunk_points=7)
    stable = lin["stable"].reshape(15, 2)
    assert np.all(lin["converged"])
    # stability is lost once, as kappa grows, at every RTT
    assert np.all(np.diff(stable.astype(int), axis=0) <= 0) and stable[0].all() and not stable[-1].any()


def test_near_boundary_marks_both_sides_within_the_margin():
    stable = np.zeros((100, 3), dtype=bool)
    stable[:40] = True
    near = near_boundary(stable, margin=0.02)
    assert near[:, 0].nonzero()[0].tolist() == [38, 39, 40, 41]
    assert not near_boundary(np.ones((5, 5), dtype=bool)).any()
