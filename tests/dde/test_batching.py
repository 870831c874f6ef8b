"""How a batch is cut into chunks for the devices (`fluidcc.dde._batching.chunk_width`) and its
host-side work into blocks of points."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluidcc.dde import solve
from fluidcc.dde import _batching
from fluidcc.dde._batching import chunk_width
from fluidcc.errors import ParameterError

from dde_systems import Hutchinson


def rounds_of(size: int, devices: int, width: int) -> int:
    """Rounds of chunks when chunks of `width` are dealt to the devices in turn."""
    chunks = -(-size // width)
    return -(-chunks // devices)


@given(size=st.integers(1, 200_000), devices=st.integers(1, 8), cap_log2=st.integers(0, 12),
       smallest=st.sampled_from([1, 16]))
def test_width_respects_the_cap_and_keeps_every_device_busy(size, devices, cap_log2, smallest):
    cap = 1 << cap_log2
    width = chunk_width(size, devices, cap, smallest)
    assert 1 <= width <= cap
    # no more rounds than the cap itself needs: the devices share the batch evenly
    assert rounds_of(size, devices, width) == -(-size // (devices * cap))
    # the padded work per device exceeds its share by at most an eighth of the cap per round
    # (or by the padding up to `smallest`, a power of two, for tiny batches)
    share = -(-size // devices)
    rounds = rounds_of(size, devices, width)
    slack = max(cap // 8, min(smallest, cap), 1)
    assert rounds * width <= share + rounds * slack


@given(size=st.integers(1, 200_000), devices=st.integers(1, 8), cap_log2=st.integers(0, 12))
def test_width_is_a_power_of_two_or_a_multiple_of_an_eighth_of_the_cap(size, devices, cap_log2):
    cap = 1 << cap_log2
    width = chunk_width(size, devices, cap)
    assert width & (width - 1) == 0 or width % max(1, cap // 8) == 0


def test_a_batch_smaller_than_the_smallest_chunk_is_not_padded_up_to_it():
    assert chunk_width(3, 2, 1024, smallest=16) == 4
    assert chunk_width(1, 2, 1024, smallest=16) == 1
    # a larger batch is not cut below `smallest`
    assert chunk_width(40, 2, 1024, smallest=16) == 32


def test_the_refinement_passes_of_the_benchmark_are_balanced():
    # a pass of 2 486 points at 1 024 per chunk on two devices: four chunks of 640, two per
    # device, instead of three of 1 024 (two on one device, one padded on the other)
    assert chunk_width(2486, 2, 1024) == 640
    assert chunk_width(10_000, 2, 1024) == 1024
    assert chunk_width(104, 2, 64) == 56


@pytest.mark.parametrize("method, kwargs", [("chebyshev", {"nodes": 8, "rtol": 1e-9}),
                                            ("rk4", {"steps_per_delay": 8, "rtol": 1e-7})])
def test_host_work_by_blocks_of_points_changes_nothing(monkeypatch, method, kwargs):
    """The host-side work on whole-batch arrays (checking the save grid, the save layout, comparing
    two rungs, natural units) runs by blocks of `ROW_BLOCK` points: blocks of 3 points give the
    same solution, rungs and estimates, bit for bit, as one block."""
    params = {"r": np.linspace(0.4, 1.9, 11)}
    times = np.broadcast_to(np.arange(0.0, 16.0), (11, 16)).copy()
    times[5, 3] = 2.5  # every point saved at the interval ends but one, in the second block
    times[5] = np.sort(times[5])
    whole = solve(Hutchinson(), params, 15.0, times, method=method, **kwargs)
    monkeypatch.setattr(_batching, "ROW_BLOCK", 3)
    blocks = solve(Hutchinson(), params, 15.0, times, method=method, **kwargs)
    np.testing.assert_array_equal(blocks.ys, whole.ys)
    np.testing.assert_array_equal(blocks.error_estimate, whole.error_estimate)
    assert len(set(np.asarray(whole.error_estimate).round(12))) > 3  # the points differ: a real comparison
    if method == "chebyshev":
        np.testing.assert_array_equal(blocks.info["pieces_per_delay"] * blocks.info["nodes"],
                                      whole.info["pieces_per_delay"] * whole.info["nodes"])
    else:
        np.testing.assert_array_equal(blocks.steps_per_delay, whole.steps_per_delay)


@pytest.mark.parametrize("method, kwargs, kernel", [("chebyshev", {"nodes": 7, "pieces_per_delay": 3}, "jit(_kernel)"),
                                                    ("rk4", {"steps_per_delay": 6}, "jit(one)")])
def test_a_batch_on_several_devices_compiles_its_kernel_once_and_solves_as_one_device_does(monkeypatch, method,
                                                                                           kwargs, kernel):
    """A batch of several chunks runs a chunk per device at once, as one program over the devices
    (`_batching.Spread`): its kernel is compiled (or loaded from the cache) once, not once per
    device; each point's solution is the one a single device gives, bit for bit. (The shapes of
    this test are used by no other, so its kernels are new to the process.)"""
    if len(jax.local_devices()) < 2:
        pytest.skip("one JAX device: nothing is spread")
    params = {"r": np.linspace(0.4, 1.9, 37)}
    times = np.broadcast_to(np.arange(0.0, 13.0), (37, 13)).copy()
    made = []

    def listener(event, duration, **info):
        if event == "/jax/core/compile/backend_compile_duration" and info.get("fun_name") == kernel:
            made.append(duration)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        spread = solve(Hutchinson(), params, 12.0, times, method=method, batch_chunk=8, rtol=None, **kwargs)
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert len(made) == 1  # (chunks of at most 8 points, two at a time)
    monkeypatch.setattr(_batching.jax, "local_devices", lambda: jax.devices()[:1])
    alone = solve(Hutchinson(), params, 12.0, times, method=method, batch_chunk=8, rtol=None, **kwargs)
    np.testing.assert_array_equal(spread.ys, alone.ys)
    assert np.all(np.isfinite(spread.ys)) and len(set(np.asarray(spread.ys)[:, -1, 0].round(9))) > 30


def test_a_bad_save_grid_in_a_later_block_is_still_found(monkeypatch):
    monkeypatch.setattr(_batching, "ROW_BLOCK", 2)
    times = np.broadcast_to(np.linspace(0.0, 5.0, 6), (7, 6)).copy()
    times[6, 2], times[6, 3] = times[6, 3], times[6, 2]
    with pytest.raises(ParameterError, match="unsorted"):
        solve(Hutchinson(), {"r": np.ones(7)}, 5.0, times)
    times = np.broadcast_to(np.linspace(0.0, 5.0, 6), (7, 6)).copy()
    times[5, 5] = 6.0
    with pytest.raises(ParameterError, match="t_final"):
        solve(Hutchinson(), {"r": np.ones(7)}, 5.0, times)


def _fake_launch(n_saves: int, n_states: int):
    """A kernel stand-in whose outputs tell which point they belong to."""

    def launch(padded, spread):
        points = spread.put(np.asarray(padded, dtype=float))
        saves = points[:, None, None] + np.arange(n_saves * n_states).reshape(1, n_saves, n_states) / 100.0
        return saves, points + 0.5, -points

    return launch


@pytest.mark.parametrize("size, chunk", [(1, 4), (7, 3), (12, 4), (13, 16)])
def test_chunks_handed_to_a_sink_are_the_gathered_ones(size, chunk):
    points = np.random.default_rng(size).permutation(100)[:size]
    gathered = _batching.run_in_chunks(points, chunk, 5, 2, _fake_launch(5, 2))
    np.testing.assert_array_equal(gathered[1], points + 0.5)  # the padding is dropped
    seen = []
    received = (np.full((size, 5, 2), np.nan), np.full(size, np.nan), np.full(size, np.nan))

    def sink(rows, saves, over, nan):
        seen.append((rows.start, rows.stop))
        received[0][rows], received[1][rows], received[2][rows] = saves, over, nan

    assert _batching.run_in_chunks(points, chunk, 5, 2, _fake_launch(5, 2), sink=sink) is None
    # a launch holds a chunk per device (fewer if the batch has fewer chunks)
    width = chunk * min(len(jax.local_devices()), -(-size // chunk))
    assert seen == [(start, min(start + width, size)) for start in range(0, size, width)]  # in order, once each
    for got, want in zip(received, gathered):
        np.testing.assert_array_equal(got, want)


special = st.sampled_from([0.0, -0.0, np.inf, -np.inf, np.nan, 1e308, -1e308, 1e-300])
values = st.one_of(st.floats(-1e6, 1e6), special)


@given(st.integers(1, 4), st.integers(1, 5), st.integers(1, 3), st.data(), st.booleans())
def test_max_difference_is_inf_wherever_a_save_or_the_quotient_is_not_finite(points, saves, states, data,
                                                                             relative):
    shape = (points, saves, states)
    fine = np.array(data.draw(st.lists(values, min_size=fine_size(shape), max_size=fine_size(shape)))).reshape(shape)
    coarse = np.array(data.draw(st.lists(values, min_size=fine_size(shape), max_size=fine_size(shape)))).reshape(shape)
    scale_of = (lambda f: np.abs(f)) if relative else _batching.largest_magnitude
    got = _batching.max_difference(fine, coarse, scale_of)
    with np.errstate(all="ignore"):
        quotient = np.abs(fine - coarse) / scale_of(fine)
    for i in range(points):
        if np.all(np.isfinite(fine[i]) & np.isfinite(coarse[i]) & np.isfinite(quotient[i])):
            assert got[i] == np.max(quotient[i])
        else:
            assert got[i] == np.inf


def fine_size(shape) -> int:
    return int(np.prod(shape))


def test_climb_refines_each_point_to_its_own_rung_through_chunks():
    """`climb` with a stand-in solver whose error at rung r is known (scale / 4^r): each point stops
    at the first rung whose difference from the rung below is within rtol, and keeps that rung's
    solution; a point that overflows stops there, one that never gets there is flagged. The pending points of later rungs are scattered
    subsets of the batch cut into chunks of 3, so a wrong row offset between chunks would show."""
    size, n_saves, rtol, rungs = 23, 4, 1e-2, 12
    scale = 10.0 ** (np.arange(size) % 4)  # a point's error at rung r: scale / 4^r
    scale[11] = 1e9  # never within rtol on these rungs

    def solution(points, rung):
        return points[:, None, None] + (scale[points] / 4.0**rung)[:, None, None] * np.ones((1, n_saves, 1))

    calls = []

    def run(points, rung, sink, coarse=False):
        calls.append((rung, coarse))

        def launch(padded, spread):
            saves = solution(np.asarray(padded), rung)
            over = np.where((np.asarray(padded) == 7) & (rung >= 1), 1.5, np.inf)  # point 7 overflows at rung 1
            return spread.put(saves), spread.put(over), spread.put(np.full(len(padded), np.inf))

        return _batching.run_in_chunks(points, 3, n_saves, 1, launch, sink=sink)

    estimate = lambda fine, coarse: np.max(np.abs(fine - coarse), axis=(1, 2))  # noqa: E731
    saves, over, nan, rung, error, failed = _batching.climb(run, size, list(range(rungs)), estimate, rtol)
    everyone = np.arange(size)
    # the difference between rungs r - 1 and r is 3 scale / 4^r
    expected = np.array([next((r for r in range(1, rungs) if 3 * scale[p] / 4.0**r <= rtol), rungs - 1)
                         for p in everyone])
    expected[7] = 1
    np.testing.assert_array_equal(rung, expected)
    for p in everyone:
        np.testing.assert_allclose(saves[p], solution(np.array([p]), expected[p])[0], rtol=0, atol=1e-15)
    assert np.isfinite(over[7]) and np.all(np.isinf(np.delete(over, 7)))
    assert len(set(expected.tolist())) >= 4  # the points really end on different rungs
    assert np.flatnonzero(failed).tolist() == [11]
    np.testing.assert_allclose(np.delete(error, 7), np.delete(3 * scale / 4.0**expected, 7), rtol=1e-9)
    # only the first rung, always replaced by the second, is said to be a coarse comparison
    assert calls[0] == (0, True) and not any(coarse for _, coarse in calls[1:]), calls


@pytest.mark.parametrize("rtol, rungs, coarse", [(None, [0, 1], False), (1e-3, [0], False), (1e-3, [0, 1], True)])
def test_climb_says_coarse_only_when_a_second_rung_replaces_the_first(rtol, rungs, coarse):
    # without rtol, or with a single rung, the first solution is returned: it must be computed fully
    calls = []

    def run(points, rung, sink, coarse=False):
        calls.append(coarse)
        out = (np.zeros((len(points), 1, 1)), np.full(len(points), np.inf), np.full(len(points), np.inf))
        if sink is None:
            return out
        sink(slice(0, len(points)), *out)

    _batching.climb(run, 3, rungs, lambda fine, old: np.zeros(len(fine)), rtol)
    assert calls[0] is coarse


def test_climb_compares_again_with_a_full_first_rung_where_the_coarse_one_failed():
    # a coarse first solution (float32 for the Chebyshev method) may overflow where the second
    # rung does not: that point must not end as "tolerance not reached" for want of a comparison
    calls = []

    def run(points, rung, sink, coarse=False):
        calls.append((rung, coarse, points.tolist()))
        saves = np.ones((len(points), 2, 1)) * (1.0 + 1e-9 * rung)
        if coarse:
            saves[points == 1] = np.nan  # the coarse solution of point 1 failed
        out = (saves, np.full(len(points), np.inf), np.full(len(points), np.inf))
        if sink is None:
            return out
        sink(slice(0, len(points)), *out)

    estimate = lambda fine, coarse: np.where(np.all(np.isfinite(coarse), axis=(1, 2)),  # noqa: E731
                                             np.max(np.abs(fine - coarse), axis=(1, 2)), np.inf)
    saves, over, nan, rung, error, failed = _batching.climb(run, 3, [0, 1], estimate, 1e-6)
    assert calls == [(0, True, [0, 1, 2]), (1, False, [0, 1, 2]), (0, False, [1])]
    assert not failed.any() and np.all(error <= 1e-6) and rung.tolist() == [1, 1, 1]
    np.testing.assert_array_equal(saves, np.full((3, 2, 1), 1.0 + 1e-9))  # the second rung is kept
