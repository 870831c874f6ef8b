"""The exponential Chebyshev method of steps: exactness, spectral convergence, saves between nodes,
refinement, statuses, batching, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.polynomial import Polynomial

from fluidcc.dde import Status, solve
from fluidcc.dde._chebyshev import integration_matrix, lobatto_nodes, resolution_ladder, save_slots, saves_at_ends
from fluidcc.errors import ParameterError
from fluidcc.models import MIAIMDAggregate, miaimd

from dde_systems import Growth, Hutchinson, LinearDelay, SingleDelay, SquareRootOfPast, exact_single_delay

T3 = np.linspace(0.0, 3.0, 31)  # most of these fall between nodes: read by interpolation


@pytest.mark.parametrize("n", [4, 9, 16, 32, 48, 64, 96, 128])  # up to the most nodes the refinement uses
def test_integration_matrix_integrates_polynomials_of_degree_below_n_exactly(n):
    x = lobatto_nodes(n)
    rng = np.random.default_rng(n)
    poly = Polynomial(rng.normal(size=n))  # degree n - 1
    integral = poly.integ()
    np.testing.assert_allclose(integration_matrix(n) @ poly(x), integral(x) - integral(0.0), atol=1e-12)


@pytest.mark.parametrize("a", [0.5, 1.5])
@pytest.mark.parametrize("pieces", [1, 3])
def test_polynomial_solution_is_exact_at_and_between_nodes(a, pieces):
    params = {"a": np.array([a]), "tau": np.array([1.0])}
    sol = solve(SingleDelay(), params, 3.0, T3, method="chebyshev", pieces_per_delay=pieces, nodes=8)
    assert sol.status[0] == Status.OK
    np.testing.assert_allclose(sol.ys[0, :, 0], exact_single_delay(a, T3), rtol=0, atol=1e-12)


def test_each_point_keeps_its_own_delay():
    # x' = -a x(t - tau): with time in units of tau this is the tau = 1 solution at t / tau
    taus = np.array([0.3, 1.0, 2.5])
    params = {"a": np.full(3, 0.8), "tau": taus}
    grid = taus[:, None] * T3[None, :]
    sol = solve(SingleDelay(), params, 3.0 * taus, grid, method="chebyshev")
    expected = exact_single_delay(0.8 * taus[:, None], T3[None, :])  # a tau is the scaled gain
    np.testing.assert_allclose(sol.ys[..., 0], expected, atol=1e-12)


def test_spectral_convergence_on_a_nonlinear_equation():
    params = {"r": np.array([1.2])}
    times = np.linspace(0.0, 10.0, 41)
    ref = solve(Hutchinson(), params, 10.0, times, method="scipy")
    errors = []
    for nodes in (6, 10, 16):
        sol = solve(Hutchinson(), params, 10.0, times, method="chebyshev", nodes=nodes)
        errors.append(np.max(np.abs(sol.ys[0, :, 0] / ref.ys[0, :, 0] - 1)))
    assert errors[0] > 30 * errors[1] > 30 * 30 * errors[2] or errors[2] < 1e-10, errors
    assert errors[2] < 1e-9, errors


def test_constant_coefficient_growth_is_exact_and_overflow_is_a_status():
    times = np.linspace(0.0, 1.0, 11)
    sol = solve(Growth(), {"g": np.array([1.0, 5000.0])}, 1.0, times, method="chebyshev", nodes=4)
    assert sol.status.tolist() == [Status.OK, Status.OVERFLOW]
    assert sol.ys[0, -1, 0] == pytest.approx(np.e, rel=1e-14)  # at a node: exact whatever the nodes
    fine = solve(Growth(), {"g": np.array([1.0])}, 1.0, times, method="chebyshev", nodes=16)
    np.testing.assert_allclose(fine.ys[0, :, 0], np.exp(times), rtol=1e-12)  # between nodes: interpolated
    # e^{5000 t} overflows float64 at t = 0.142: the message names the first node beyond it (the
    # four Lobatto nodes of [0, 1] are 0, 0.25, 0.75, 1)
    time_of_overflow = float(sol.messages[1].split("t = ")[1].split(" s")[0])
    assert time_of_overflow == pytest.approx(0.25), sol.messages[1]
    assert np.all(np.isnan(sol.ys[1, 2:, 0]))  # never a wrong number after the failure


def test_nan_is_a_status_with_its_time():
    sol = solve(SquareRootOfPast(), {"unused": np.zeros(2)}, 2.0, np.linspace(0, 2, 21), method="chebyshev")
    assert np.all(sol.status == Status.NONFINITE)
    time_of_nan = float(sol.messages[0].split("t = ")[1].split(" s")[0])
    assert 1.5 < time_of_nan < 1.6, sol.messages[0]  # the first node where sqrt(x(t - 1)) is NaN
    np.testing.assert_allclose(sol.ys[0, :11, 0], 1 - 2 * np.linspace(0, 1, 11), atol=1e-12)


def test_results_do_not_depend_on_how_the_batch_is_cut():
    params = {"r": np.linspace(0.5, 1.5, 7)}
    times = np.linspace(0.0, 20.0, 81)
    whole = solve(Hutchinson(), params, 20.0, times, method="chebyshev", batch_chunk=1024)
    cut = solve(Hutchinson(), params, 20.0, times, method="chebyshev", batch_chunk=2)
    np.testing.assert_allclose(cut.ys, whole.ys, rtol=1e-13)


def test_saves_at_interval_ends_are_recognised():
    tau = np.array([0.5, 2.0])
    assert saves_at_ends(tau, tau[:, None] * np.arange(5)[None, :]).tolist() == [True, True]
    assert saves_at_ends(tau, np.array([[0.0, 1.0, 3.0], [2.0, 6.0, 6.0]])).tolist() == [True, True]  # skipped, repeats
    assert saves_at_ends(tau, np.array([[0.0, 0.75], [2.0, 4.0]])).tolist() == [False, True]  # 1.5 delays
    assert saves_at_ends(tau, np.array([[0.0, 0.25], [2.0, 4.0]])).tolist() == [False, True]  # inside the first
    assert saves_at_ends(tau, np.array([[0.0, 1e-14], [2.0, 4.0 + 1e-13]])).tolist() == [False, True]  # 0 < t << tau
    assert saves_at_ends(tau, np.array([[0.5, 1.0 + 1e-10], [2.0, 4.0]])).tolist() == [False, True]  # beyond the snap


@given(fine=st.lists(st.floats(-1e3, 1e3), min_size=12, max_size=12),
       change=st.lists(st.floats(-1.0, 1.0), min_size=12, max_size=12),
       positive=st.tuples(st.booleans(), st.booleans()))
def test_relative_difference_is_relative_to_the_value_or_to_the_largest_magnitude(fine, change, positive):
    from fluidcc.dde._chebyshev import relative_difference

    fine = np.array(fine).reshape(2, 3, 2)
    coarse = fine + np.array(change).reshape(2, 3, 2)
    got = relative_difference(fine, coarse, positive)
    for point in range(2):
        scale = np.where(positive, np.abs(fine[point]), np.maximum(np.abs(fine[point]).max(axis=0), 1e-300))
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):  # (a tiny scale)
            quotient = np.abs(fine[point] - coarse[point]) / scale
        expected = np.max(quotient) if np.all(np.isfinite(quotient)) else np.inf
        assert got[point] == expected


def test_saves_at_interval_ends_equal_the_general_reading():
    # one save per delay is read from the kept interval ends; adding a save between nodes makes
    # the kernel look each save up in its interval instead: the common saves must agree
    params = {"r": np.linspace(0.5, 1.8, 5)}
    ends = np.arange(0.0, 21.0)
    both = np.sort(np.concatenate([ends, [7.3]]))
    at_ends = solve(Hutchinson(), params, 20.0, ends, method="chebyshev")
    general = solve(Hutchinson(), params, 20.0, both, method="chebyshev")
    np.testing.assert_allclose(at_ends.ys, general.ys[:, both != 7.3], rtol=1e-13)


@pytest.mark.parametrize("times", [np.linspace(0.0, 2.0, 21), np.arange(0.0, 3.0)], ids=["general", "at-ends"])
def test_failure_statuses_are_the_same_on_both_readings_of_the_saves(times):
    overflow = solve(Growth(), {"g": np.array([1.0, 5000.0])}, 2.0, times, method="chebyshev", nodes=4)
    assert overflow.status.tolist() == [Status.OK, Status.OVERFLOW]
    assert "t = 0.25 s" in overflow.messages[1]
    assert np.all(np.isnan(overflow.ys[1, times > 0.25, 0])) and overflow.ys[1, 0, 0] == 1.0
    nan = solve(SquareRootOfPast(), {"unused": np.zeros(1)}, 2.0, times, method="chebyshev")
    assert nan.status[0] == Status.NONFINITE
    assert 1.5 < float(nan.messages[0].split("t = ")[1].split(" s")[0]) < 1.6
    np.testing.assert_allclose(nan.ys[0, times <= 1.0, 0], 1 - 2 * times[times <= 1.0], atol=1e-12)
    assert np.all(np.isnan(nan.ys[0, times > 1.5, 0]))


def test_save_at_zero_and_final_state_only():
    params = {"a": np.array([0.5]), "tau": np.array([1.0])}
    sol = solve(SingleDelay(), params, 2.5, [0.0, 2.5], method="chebyshev")
    np.testing.assert_allclose(sol.ys[0, :, 0], exact_single_delay(0.5, np.array([0.0, 2.5])), atol=1e-12)
    final = solve(SingleDelay(), params, 2.5, None, method="chebyshev")
    np.testing.assert_allclose(final.ys[0, -1, 0], exact_single_delay(0.5, np.array([2.5]))[0], atol=1e-12)


def test_save_slots_count_the_most_saves_of_one_interval():
    tau = np.array([0.1, 1.0])
    grid = np.array([[0.0, 0.05, 0.1, 0.1 * 3, 0.25], [0.0, 0.5, 1.0, 1.5, 2.0]])
    # point 0: (0, tau] holds 0.05 and 0.1 (t = k tau closes interval k - 1), (2 tau, 3 tau] 0.25 and 0.3
    assert save_slots(tau, grid, 3) == 2
    assert save_slots(tau[:1], np.array([[0.0, 0.01, 0.02, 0.03, 0.1]]), 3) == 4
    assert save_slots(tau[:1], np.array([[0.0]]), 3) == 1


def test_many_saves_per_interval_between_nodes_and_pieces():
    params = {"a": np.array([0.7]), "tau": np.array([1.0])}
    times = np.sort(np.random.default_rng(1).uniform(0.0, 3.0, 200))
    sol = solve(SingleDelay(), params, 3.0, times, method="chebyshev", pieces_per_delay=4, nodes=6)
    np.testing.assert_allclose(sol.ys[0, :, 0], exact_single_delay(0.7, times), atol=1e-12)


def test_ladder_adds_nodes_then_pieces():
    assert resolution_ladder(1, 16, 8) == [(1, 16), (1, 24), (1, 32), (1, 48), (1, 64), (1, 96), (1, 128), (2, 128),
                                           (4, 128), (8, 128)]
    assert resolution_ladder(1, 16, 4, max_nodes=32) == [(1, 16), (1, 24), (1, 32), (2, 32), (4, 32)]
    assert resolution_ladder(1, 4, 1, max_nodes=16) == [(1, 4), (1, 6), (1, 8), (1, 12), (1, 16)]
    assert resolution_ladder(1, 40, 1) == [(1, 40), (1, 48), (1, 64), (1, 96), (1, 128)]
    assert resolution_ladder(2, 40, 2, max_nodes=40) == [(2, 40)]
    assert resolution_ladder(1, 100, 2, max_nodes=150) == [(1, 100), (1, 128), (1, 150), (2, 150)]


def _spiky_miaimd():
    """kappa = 1.8 and a per-flow BDP of 200 packets: MIAIMD oscillates with start-up-like spikes."""
    return miaimd.aggregate_params(kappa=[0.25, 1.8], capacity_pps=[18750.0, 20000.0], rtt_s=[0.08, 0.1],
                                   n_flows=[50, 10])


def test_rtol_refines_the_points_that_need_it_and_meets_the_reference():
    params = _spiky_miaimd()
    rtt = np.array([0.08, 0.1])
    grid = rtt[:, None] * np.arange(61)[None, :]
    ref = solve(MIAIMDAggregate(), params, 60 * rtt, grid, method="scipy")
    sol = solve(MIAIMDAggregate(), params, 60 * rtt, grid, method="chebyshev", rtol=1e-8)
    assert np.all(sol.status == Status.OK) and np.all(ref.status == Status.OK)
    relative = np.max(np.abs(sol.ys[..., 0] / ref.ys[..., 0] - 1), axis=1)
    assert np.all(relative <= 1e-6), relative
    assert np.all(sol.error_estimate <= 1e-8)
    pieces = sol.info["pieces_per_delay"] * sol.info["nodes"]
    assert pieces[1] > pieces[0]  # the oscillating point needed a finer resolution
    coarse = solve(MIAIMDAggregate(), params, 60 * rtt, grid, method="chebyshev")
    assert np.max(np.abs(coarse.ys[1, :, 0] / ref.ys[1, :, 0] - 1)) > 1e-6  # ... which the first one misses


def _random_miaimd(size: int, seed: int):
    """Points drawn like the throughput benchmark's (log-uniform kappa, T, C, N)."""
    rng = np.random.default_rng(seed)
    draw = lambda low, high: np.exp(rng.uniform(np.log(low), np.log(high), size))  # noqa: E731
    rtt = draw(0.01, 1.0)
    params = miaimd.aggregate_params(kappa=draw(0.05, 2.0), capacity_pps=draw(1250.0, 125000.0), rtt_s=rtt,
                                     n_flows=np.round(draw(10.0, 1000.0)))
    return params, rtt


def test_loose_tolerance_solves_only_the_first_rung_in_float32(monkeypatch):
    """From rtol 1e-6 on, the first rung, which every point's second rung replaces, is solved in
    float32 and the later rungs in float64; below 1e-6, and without rtol, everything is float64."""
    from fluidcc.dde import _chebyshev

    kernel_of, seen = _chebyshev._kernel_of, []

    def recording(*args):
        seen.append((args[2], args[7]))  # nodes per piece, dtype
        return kernel_of(*args)

    monkeypatch.setattr(_chebyshev, "_kernel_of", recording)
    params, rtt = _random_miaimd(8, 0)
    grid = rtt[:, None] * np.arange(41)[None, :]
    for rtol, first in ((5e-5, "float32"), (1e-6, "float32"), (9e-7, "float64"), (None, "float64")):
        seen.clear()
        solve(MIAIMDAggregate(), params, 40 * rtt, grid, method="chebyshev", rtol=rtol, nodes=12)
        assert {dtype for nodes, dtype in seen if nodes == 12} == {first}, (rtol, seen)  # (one kernel per rung)
        assert {dtype for nodes, dtype in seen if nodes != 12} <= {"float64"}, (rtol, seen)
        assert len(seen) > 2 or rtol is None


def test_float32_first_rung_changes_the_estimates_but_not_the_kept_solutions(monkeypatch):
    """The kept solutions are float64 whatever the first rung: a point that ends on the same rung
    keeps the same numbers, bit for bit, and every point meets the reference as before."""
    from fluidcc.dde import _chebyshev

    params, rtt = _random_miaimd(96, 1)
    grid = rtt[:, None] * np.arange(101)[None, :]

    def solve_at(rtol):
        return solve(MIAIMDAggregate(), params, 100 * rtt, grid, method="chebyshev", rtol=rtol, nodes=12)

    mixed = solve_at(5e-5)
    reference = solve_at(1e-10)
    monkeypatch.setattr(_chebyshev, "COARSE_FLOAT32_RTOL", np.inf)
    double = solve_at(5e-5)
    np.testing.assert_array_equal(mixed.status, double.status)
    same = ((mixed.info["nodes"] == double.info["nodes"])
            & (mixed.info["pieces_per_delay"] == double.info["pieces_per_delay"]))
    assert same.mean() > 0.8
    second = same & (mixed.info["nodes"] == 16)  # kept at the second rung: the same chunks in both runs
    assert second.any()
    np.testing.assert_array_equal(mixed.ys[second], double.ys[second])
    # later rungs run on subsets that may be cut into chunks of other widths (other kernels)
    np.testing.assert_allclose(mixed.ys[same], double.ys[same], rtol=1e-13)
    ok = mixed.status == Status.OK
    first_rung = ok & (mixed.info["nodes"] == 16)  # estimated against the first rung
    assert first_rung.any() and not np.array_equal(mixed.error_estimate[first_rung], double.error_estimate[first_rung])
    for sol in (mixed, double):
        error = np.abs(sol.ys[ok, 5:, 0] / reference.ys[ok, 5:, 0] - 1)
        assert np.max(error) <= 1e-6


@pytest.mark.parametrize("system, params", [
    (Hutchinson(), {"r": np.array([0.5, 1.2, 1.8])}),
    (SingleDelay(), {"a": np.array([0.5, 1.5]), "tau": np.array([1.0, 0.7])}),
    (SquareRootOfPast(), {"unused": np.zeros(2)}),
])
@pytest.mark.parametrize("saves", [np.linspace(0.0, 3.0, 31), np.arange(4.0)], ids=["general", "at-ends"])
def test_float32_rung_of_any_linear_system_is_its_float64_solution_to_float32_rounding(system, params, saves):
    # the models' own constants are float64 (jnp.full(1, 0.5), jnp.zeros(1)): the kernel casts
    from fluidcc.dde import _chebyshev
    from fluidcc.dde._solve import take

    system, seen = _recording_dtypes(system)
    size = len(next(iter(params.values())))
    tau = params.get("tau", np.ones(size))  # (the delay of each point)
    grid = tau[:, None] * saves[None, :]  # in delays: between nodes (interpolated), or interval ends
    runner = _chebyshev.ChebyshevRunner(system, params, tau, 3.0 * tau, grid, 1, 1024, None, take,
                                        coarse_float32=True)
    single, over32, nan32 = runner.run(np.arange(size), (1, 12), coarse=True)
    assert set(seen) == {np.dtype(np.float32)}  # the model's own code ran in float32
    seen.clear()
    double, over64, nan64 = runner.run(np.arange(size), (1, 12))
    assert set(seen) == {np.dtype(np.float64)}
    np.testing.assert_array_equal(np.isfinite(single), np.isfinite(double))
    np.testing.assert_array_equal(np.isfinite(nan32), np.isfinite(nan64))
    finite = np.isfinite(double)
    np.testing.assert_allclose(single[finite], double[finite], rtol=1e-5, atol=1e-6)
    if saves_at_ends(tau, grid).all():  # the saves are the float32 nodes themselves
        values = single[finite]
        np.testing.assert_array_equal(values, values.astype(np.float32))
        # where float32 cannot hold the float64 solution, the float32 rung must differ from it
        # (not compared where both are exact: SquareRootOfPast's x(1) = -1 is exactly -1 in
        # float64 or 4.4e-16 away, depending on the vector instructions XLA compiles for)
        unrepresentable = double[finite] != double[finite].astype(np.float32)
        assert np.all(values[unrepresentable] != double[finite][unrepresentable])


def _recording_dtypes(system):
    """The same system, as a class of its own (so the kernel is traced anew), noting the floating
    type its `linear_form` is evaluated in."""
    seen = []
    base = type(system)

    class Recording(base):
        def linear_form(self, t, x_delayed, params):
            seen.append(np.dtype(x_delayed.dtype))
            return base.linear_form(self, t, x_delayed, params)

    return Recording(), seen


def test_a_first_rung_that_overflows_only_in_float32_does_not_fail_the_point():
    # e^{100 t} passes float32's range (3.4e38) within the first delay, not float64's: with two
    # rungs only, the estimate comes from the first rung solved again in float64
    sol = solve(Growth(), {"g": np.array([1.0, 100.0])}, 1.0, [0.0, 1.0], method="chebyshev", rtol=1e-5,
                nodes=96, max_pieces_per_delay=1)
    assert sol.status.tolist() == [Status.OK, Status.OK], sol.messages
    assert np.all(sol.error_estimate <= 1e-5)
    np.testing.assert_allclose(sol.ys[:, -1, 0], np.exp([1.0, 100.0]), rtol=1e-12)


def test_tolerance_not_reached_is_a_status():
    params = _spiky_miaimd()
    rtt = np.array([0.08, 0.1])
    sol = solve(MIAIMDAggregate(), params, 60 * rtt, rtt[:, None] * np.arange(61)[None, :], method="chebyshev",
                rtol=1e-13, nodes=8, max_pieces_per_delay=1)
    assert sol.status[1] == Status.TOLERANCE_NOT_REACHED
    assert "tolerance" in sol.messages[1]


@settings(max_examples=10, deadline=None)
@given(kappa=st.floats(0.05, 1.0), per_flow_bdp=st.floats(0.5, 50.0), rtt=st.floats(0.01, 1.0))
def test_agrees_with_rk4_on_miaimd(kappa, per_flow_bdp, rtt):
    flows = 20
    capacity = per_flow_bdp * flows / (0.98 * rtt)
    params = miaimd.aggregate_params(kappa=[kappa], capacity_pps=[capacity], rtt_s=[rtt], n_flows=[flows])
    grid = rtt * np.arange(0, 101)
    cheb = solve(MIAIMDAggregate(), params, 100 * rtt, grid, method="chebyshev", rtol=1e-9)
    rk4 = solve(MIAIMDAggregate(), params, 100 * rtt, grid, steps_per_delay=64, rtol=1e-9)
    assert cheb.status[0] == rk4.status[0] == Status.OK
    np.testing.assert_allclose(cheb.ys, rk4.ys, rtol=1e-7)


@pytest.mark.parametrize(
    "system, params, kwargs, field",
    [
        (LinearDelay(), {"a": np.ones(1), "b": np.ones(1), "tau2": np.ones(1)}, {}, "method"),
        (SingleDelay(), {"a": np.ones(1), "tau": np.ones(1)}, {"nodes": 3}, "nodes"),
        (SingleDelay(), {"a": np.ones(1), "tau": np.ones(1)}, {"pieces_per_delay": 0}, "pieces_per_delay"),
        (SingleDelay(), {"a": np.ones(1), "tau": np.ones(1)}, {"rtol": 0.0}, "rtol"),
        (SingleDelay(), {"a": np.ones(1), "tau": np.array([-1.0])}, {}, "delay"),
    ],
)
def test_bad_input_names_the_field(system, params, kwargs, field):
    with pytest.raises(ParameterError) as info:
        solve(system, params, 3.0, None, method="chebyshev", **kwargs)
    assert field in str(info.value) and "allowed" in str(info.value)
