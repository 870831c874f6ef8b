"""Characteristic roots by collocation + Newton, checked against the Lambert-W closed form."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidcc.errors import ParameterError, ShapeError
from fluidcc.stability.linear import (
    barycentric_row,
    characteristic_roots,
    chebyshev_differentiation,
    chebyshev_points,
    lambert_w_roots,
)


def _scalar(a, b, tau):
    a, b, tau = (np.atleast_1d(np.asarray(v, dtype=float)) for v in (a, b, tau))
    return a[:, None, None], b[:, None, None, None], tau[:, None]


def _nearest(root, candidates):
    """Relative distance from each root to the nearest candidate, (B, m) against (B, c)."""
    d = np.abs(root[..., None] - candidates[:, None, :]) / (1.0 + np.abs(root[..., None]))
    return np.min(np.where(np.isnan(d), np.inf, d), axis=-1)


def test_differentiation_matrix_is_exact_on_polynomials():
    x = chebyshev_points(12)
    d = chebyshev_differentiation(12)
    for degree in range(13):
        np.testing.assert_allclose(d @ x**degree, degree * x ** max(degree - 1, 0) * (degree > 0), atol=1e-11)


def test_barycentric_interpolation_is_exact_on_polynomials_and_at_nodes():
    x = chebyshev_points(9)
    at = np.array([-0.93, -0.2, 0.0, 0.41, 1.0, x[3]])
    rows = barycentric_row(9, at)
    poly = lambda t: 3 * t**9 - t**4 + 0.5 * t - 2  # noqa: E731
    np.testing.assert_allclose(rows @ poly(x), poly(at), atol=1e-12)
    np.testing.assert_array_equal(rows[-1], np.eye(10)[3])


@settings(max_examples=60, deadline=None)
@given(
    a=st.floats(-3.0, 1.0),
    b=st.one_of(st.floats(-6.0, -0.05), st.floats(0.05, 6.0)),
    tau=st.floats(0.05, 3.0),
)
def test_scalar_roots_agree_with_lambert_w(a, b, tau):
    found = characteristic_roots(*_scalar(a, b, tau), n_roots=4)
    exact = lambert_w_roots(a, b, tau, branches=range(-8, 9))[None]
    assert found.converged[0]
    rightmost_exact = exact[0, np.argmax(exact[0].real)]
    # every root found is a Lambert-W root, and the rightmost is the rightmost one
    finite = np.isfinite(found.roots)
    assert np.all(_nearest(found.roots, exact)[finite] <= 1e-10)
    assert abs(found.abscissa[0] - rightmost_exact.real) <= 1e-10 * (1 + abs(rightmost_exact))
    assert found.stable[0] == (rightmost_exact.real < 0)


def test_batch_agrees_with_lambert_w_and_pairs_are_ordered():
    rng = np.random.default_rng(7)
    a, b, tau = rng.uniform(-3, 1, 300), rng.uniform(-5, 5, 300), rng.uniform(0.05, 3, 300)
    found = characteristic_roots(*_scalar(a, b, tau), chunk=64)
    exact = lambert_w_roots(a, b, tau, branches=range(-8, 9))
    principal = lambert_w_roots(a, b, tau, branches=[0])[:, 0]
    assert np.all(found.converged)
    # for real a, b the principal branch carries the rightmost root
    np.testing.assert_allclose(found.abscissa, principal.real, rtol=1e-10, atol=1e-10)
    assert np.all(_nearest(found.roots, exact)[np.isfinite(found.roots)] <= 1e-10)
    complex_first = np.abs(found.rightmost.imag) > 1e-9
    assert np.all(found.rightmost.imag[complex_first] > 0)


def test_stability_boundary_of_pure_delayed_feedback():
    # x' = -b x(t - tau) is stable iff 0 < b tau < pi / 2
    tau = np.full(4, 0.2)
    b = np.array([0.98, 1.02, 0.5, 3.0]) * (np.pi / 2) / 0.2
    found = characteristic_roots(np.zeros((4, 1, 1)), -b[:, None, None, None], tau[:, None])
    assert found.stable.tolist() == [True, False, True, False]
    # on the boundary the roots are +- i pi / (2 tau)
    edge = characteristic_roots(np.zeros((1, 1)), -np.array([[[np.pi / 2 / 0.2]]]), [0.2])
    np.testing.assert_allclose(edge.rightmost[0], 1j * np.pi / 2 / 0.2, atol=1e-10)


def test_two_delays_and_two_states_decoupled():
    # x1' = a1 x1 + b1 x1(t - tau1), x2' = a2 x2 + b2 x2(t - tau2): the roots are the union
    a1, b1, t1, a2, b2, t2 = -0.5, -2.0, 0.7, 0.2, -1.1, 1.9
    a0 = np.diag([a1, a2])
    ad = np.zeros((2, 2, 2))
    ad[0, 0, 0], ad[1, 1, 1] = b1, b2
    found = characteristic_roots(a0, ad, [t1, t2], n_roots=8)
    exact = np.concatenate([lambert_w_roots(a1, b1, t1, range(-8, 9)), lambert_w_roots(a2, b2, t2, range(-8, 9))])[None]
    assert found.converged[0]
    assert np.all(_nearest(found.roots, exact)[np.isfinite(found.roots)] <= 1e-10)
    right = exact[0, np.argmax(exact[0].real)]
    assert abs(found.rightmost[0].real - right.real) <= 1e-10


def test_large_delay_gain_refines_the_nodes():
    # b tau = 60: roots spread far along the imaginary axis; 16 nodes do not resolve them
    found = characteristic_roots(*_scalar(-0.3, -60.0, 1.0), nodes=8)
    exact = lambert_w_roots(-0.3, -60.0, 1.0, range(-12, 13))
    assert found.converged[0] and found.nodes[0] > 8
    np.testing.assert_allclose(found.abscissa[0], exact.real.max(), rtol=1e-10)


@pytest.mark.parametrize(
    "args, field",
    [
        ((np.zeros((1, 1)), np.zeros((1, 1, 1)), [-0.1]), "delays"),
        ((np.zeros((1, 1)), np.zeros((1, 1, 1)), [0.0]), "delays"),
        ((np.zeros((0, 1, 1)), np.zeros((0, 1, 1, 1)), np.zeros((0, 1))), "a0"),
        ((np.zeros((1, 2)), np.zeros((1, 1, 1)), [1.0]), "a0"),
        ((np.zeros((1, 1)), np.zeros((2, 1, 1)), [1.0]), "a_delayed"),
        ((np.full((1, 1), np.nan), np.zeros((1, 1, 1)), [1.0]), "a0"),
    ],
)
def test_bad_input_names_the_field(args, field):
    with pytest.raises(ParameterError) as info:
        characteristic_roots(*args)
    assert info.value.field == field


def test_bad_options_and_lambert_w_delay():
    system = (np.zeros((1, 1)), -np.ones((1, 1, 1)), [1.0])
    with pytest.raises(ParameterError, match="nodes"):
        characteristic_roots(*system, nodes=1)
    with pytest.raises(ParameterError, match="n_roots"):
        characteristic_roots(*system, n_roots=0)
    with pytest.raises(ParameterError, match="tau"):
        lambert_w_roots(0.0, -1.0, -2.0)
    assert issubclass(ShapeError, ParameterError)


def test_units_of_the_states_do_not_change_roots_or_cost():
    # XCP's efficiency loop q' = y - C, y' = -(a/d) y(t-d) - (b/d^2) q(t-d) (queue in packets, rate
    # in packets/s) and the same loop with the rate in packets per 1e6 s: a similarity, same roots.
    alpha, beta, d = 0.4, 0.226, 0.1
    a0 = np.array([[0.0, 1.0], [0.0, 0.0]])
    ad = np.array([[[0.0, 0.0], [-beta / d**2, -alpha / d]]])
    scale = np.diag([1.0, 1e6])
    plain = characteristic_roots(a0, ad, [d])
    scaled = characteristic_roots(np.linalg.inv(scale) @ a0 @ scale, np.linalg.inv(scale) @ ad @ scale, [d])
    np.testing.assert_allclose(scaled.roots, plain.roots, rtol=1e-10)
    assert scaled.nodes[0] == plain.nodes[0] <= 12


def test_guarantee_from_zero_gives_the_same_verdicts_with_fewer_nodes():
    rng = np.random.default_rng(3)
    a, b, tau = rng.uniform(-8, 0.5, 400), rng.uniform(-6, 6, 400), rng.uniform(0.1, 2, 400)
    full = characteristic_roots(*_scalar(a, b, tau))
    verdict = characteristic_roots(*_scalar(a, b, tau), guarantee_from=0.0)
    assert np.all(verdict.converged) and np.all(full.converged)
    np.testing.assert_array_equal(verdict.stable, full.stable)
    assert verdict.nodes.sum() < full.nodes.sum()
    near = full.abscissa > -0.5
    np.testing.assert_allclose(verdict.abscissa[near], full.abscissa[near], rtol=1e-10, atol=1e-12)
    with pytest.raises(ParameterError, match="guarantee_from"):
        characteristic_roots(*_scalar(0.0, -1.0, 1.0), guarantee_from=np.nan)
