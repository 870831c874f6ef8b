"""Packet-simulation metrics: the processor-sharing and slow-start references of the RCP paper,
slowdown, AFCT by size, Jain's index and the run summary."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidcc.errors import ParameterError, ShapeError
from fluidcc.packet.metrics import afct_by_size, jain_fairness, ps_fct, slow_start_fct, slowdown, summary


# ------------------------------------------------------------------- processor sharing
def test_ps_fct_by_hand():
    # 1.5 RTPD + L / (C (1 - rho)): 0.15 + 25 / (1000 * 0.5)
    assert ps_fct(25, 1000.0, 0.5, 0.1) == pytest.approx(0.2)
    assert ps_fct(25, 1000.0, 0.0, 0.0) == pytest.approx(0.025)
    np.testing.assert_allclose(ps_fct(np.array([1.0, 10.0]), 100.0, 0.9, np.array([0.2, 0.0])),
                               [0.3 + 0.1, 1.0])


@pytest.mark.parametrize("load", [1.0, 1.2, -0.1, math.nan, math.inf])
def test_ps_needs_a_load_below_one(load):
    with pytest.raises(ParameterError) as error:
        ps_fct(10, 1000.0, load, 0.1)
    assert error.value.field == "load"
    assert "a load < 1 for a processor-sharing comparison" in error.value.allowed
    with pytest.raises(ParameterError):
        slowdown(1.0, 10, 1000.0, load, 0.1)


def test_ps_bad_sizes_capacity_delay():
    with pytest.raises(ParameterError, match=r"size_packets\[1\]"):
        ps_fct([1, 0], 1000.0, 0.5, 0.1)
    with pytest.raises(ParameterError, match="capacity_pps"):
        ps_fct(1, 0.0, 0.5, 0.1)
    with pytest.raises(ParameterError, match="rtpd_s"):
        ps_fct(1, 10.0, 0.5, -0.1)


def test_slowdown_is_one_at_the_ps_time_and_nan_when_unfinished():
    sizes = np.array([1.0, 30.0, 4000.0])
    fct = ps_fct(sizes, 2000.0, 0.8, 0.05)
    np.testing.assert_allclose(slowdown(fct, sizes, 2000.0, 0.8, 0.05), 1.0)
    result = slowdown(np.array([2 * fct[0], np.nan, fct[2]]), sizes, 2000.0, 0.8, 0.05)
    assert result[0] == pytest.approx(2.0) and math.isnan(result[1]) and result[2] == pytest.approx(1.0)
    with pytest.raises(ParameterError, match="fct_s"):
        slowdown(-1.0, 1, 10.0, 0.5, 0.1)


@settings(deadline=None)
@given(st.floats(1, 1e6), st.floats(1, 1e9), st.floats(0, 0.99), st.floats(0, 1))
def test_ps_fct_is_at_least_the_idle_minimum(size, capacity, load, rtpd):
    fct = ps_fct(size, capacity, load, rtpd)
    assert fct >= (1.5 * rtpd + size / capacity) * (1 - 1e-12)
    assert fct == pytest.approx(ps_fct(size, capacity, 0.0, rtpd) + size / capacity * load / (1 - load))


# -------------------------------------------------------------------------- slow start
RTPD, C = 0.1, 1000.0


@pytest.mark.parametrize("w0, size, rounds", [
    # w0 = 1: windows 1, 2, 4 -> 1, 3, 7 packets after 1, 2, 3 rounds
    (1, 1, 1), (1, 2, 2), (1, 3, 2), (1, 7, 3), (1, 8, 4),
    # w0 = 2: windows 2, 4, 8 -> 2, 6, 14 packets after 1, 2, 3 rounds
    (2, 1, 1), (2, 2, 1), (2, 3, 2), (2, 7, 3), (2, 14, 3), (2, 15, 4),
])
def test_slow_start_by_hand(w0, size, rounds):
    # handshake (1 RTPD) + (rounds - 1) RTPD + half an RTPD for the last round + L/C
    expected = (1 + (rounds - 1) + 0.5) * RTPD + size / C
    assert slow_start_fct(size, RTPD, C, initial_window=w0) == pytest.approx(expected, rel=1e-12)


def test_one_packet_takes_the_idle_minimum_and_default_window_is_two():
    assert slow_start_fct(1, RTPD, C, 1) == pytest.approx(ps_fct(1, C, 0.0, RTPD))
    assert slow_start_fct(2, RTPD, C) == slow_start_fct(2, RTPD, C, initial_window=2)


@pytest.mark.parametrize("size", [1, 3, 7, 15, 1023])
def test_continuous_form_is_the_rcp_paper_curve(size):
    # [log2(L + 1) + 1/2] RTPD + L/C; equals the integer form when L + 1 is a power of two
    paper = (math.log2(size + 1) + 0.5) * RTPD + size / C
    assert slow_start_fct(size, RTPD, C, 1, continuous=True) == pytest.approx(paper, rel=1e-12)
    assert slow_start_fct(size, RTPD, C, 1) == pytest.approx(paper, rel=1e-12)
    assert slow_start_fct(2, RTPD, C, 1, continuous=True) < slow_start_fct(2, RTPD, C, 1)


def rounds_by_simulation(size: int, w0: int) -> int:
    sent, window, rounds = 0, w0, 0
    while sent < size:
        sent, window, rounds = sent + window, 2 * window, rounds + 1
    return rounds


@settings(deadline=None)
@given(st.integers(1, 10**7), st.integers(1, 64))
def test_slow_start_rounds_match_a_window_doubling_simulation(size, w0):
    fct = slow_start_fct(size, 1.0, 1e300, initial_window=w0)
    assert fct == pytest.approx(rounds_by_simulation(size, w0) + 0.5, abs=1e-9)
    continuous = slow_start_fct(size, 1.0, 1e300, initial_window=w0, continuous=True)
    assert continuous - 1e-9 <= fct < continuous + 1.0


def test_slow_start_vectorized_and_bad_window():
    sizes = np.array([1, 2, 3, 7])
    np.testing.assert_allclose(slow_start_fct(sizes, RTPD, C, 1), (np.array([1, 2, 2, 3]) + 0.5) * RTPD + sizes / C)
    for w0 in (0, 1.5, -1, math.nan):
        with pytest.raises(ParameterError, match="initial_window"):
            slow_start_fct(3, RTPD, C, w0)


# ---------------------------------------------------------------------------- fairness
def test_jain_by_hand():
    assert jain_fairness([3.0, 3.0, 3.0]) == pytest.approx(1.0)
    assert jain_fairness([0.0, 0.0, 0.0, 5.0]) == pytest.approx(0.25)
    assert jain_fairness([1.0, 3.0]) == pytest.approx(16 / 20)
    np.testing.assert_allclose(jain_fairness(np.array([[1.0, 1.0], [0.0, 2.0]])), [1.0, 0.5])


@settings(deadline=None)
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50).filter(lambda xs: max(xs) > 1e-200), st.floats(1e-3, 1e3))
def test_jain_bounds_and_scale_invariance(throughputs, factor):
    index = jain_fairness(throughputs)
    assert 1 / len(throughputs) - 1e-12 <= index <= 1 + 1e-12
    assert jain_fairness(np.array(throughputs) * factor) == pytest.approx(index, rel=1e-9)


@pytest.mark.parametrize("bad", [[], [1.0, -1.0], [0.0, 0.0], [1.0, math.nan]])
def test_jain_bad_input(bad):
    with pytest.raises(ParameterError, match="throughputs"):
        jain_fairness(bad)


# --------------------------------------------------------------------------- AFCT by size
def test_afct_by_size_power_of_two_bins():
    sizes = np.array([1, 1, 3, 3, 3, 12, 20])
    fct = np.array([0.1, 0.3, 0.2, 0.4, np.nan, 1.0, 2.0])
    frame = afct_by_size(sizes, fct, min_flows=2)
    np.testing.assert_array_equal(frame["bin_low"], [1, 2, 4, 8, 16])
    np.testing.assert_array_equal(frame["bin_high"], [2, 4, 8, 16, 32])
    np.testing.assert_array_equal(frame["flows"], [2, 2, 0, 1, 1])
    np.testing.assert_array_equal(frame["unfinished"], [0, 1, 0, 0, 0])
    np.testing.assert_allclose(frame["afct_s"], [0.2, 0.3, np.nan, 1.0, 2.0])
    np.testing.assert_array_equal(frame["enough"], [True, True, False, False, False])
    assert "ps_afct_s" not in frame


def test_afct_by_size_with_ps_reference_and_edges():
    sizes = np.array([1.0, 5.0, 10.0, 100.0])
    fct = ps_fct(sizes, 1000.0, 0.5, 0.1) * 2
    frame = afct_by_size(sizes, fct, bins=[1, 10, 100], capacity_pps=1000.0, load=0.5, rtpd_s=0.1)
    np.testing.assert_array_equal(frame["flows"], [2, 2])  # [1, 10) and the closed last bin [10, 100]
    np.testing.assert_allclose(frame["mean_size_packets"], [3.0, 55.0])
    np.testing.assert_allclose(frame["ps_afct_s"], ps_fct(np.array([3.0, 55.0]), 1000.0, 0.5, 0.1))
    np.testing.assert_allclose(frame["afct_s"], 2 * frame["ps_afct_s"])
    counted = afct_by_size(sizes, fct, bins=3)
    assert counted["flows"].sum() == 4 and counted["bin_low"].iloc[0] == 1 and counted["bin_high"].iloc[-1] == 100


@settings(deadline=None)
@given(st.lists(st.integers(1, 10**6), min_size=1, max_size=60))
def test_default_bins_cover_every_flow(sizes):
    sizes = np.array(sizes, dtype=float)
    frame = afct_by_size(sizes, sizes / 1000)
    assert frame["flows"].sum() == sizes.size
    assert frame["bin_low"].iloc[0] <= sizes.min() and frame["bin_high"].iloc[-1] > sizes.max()


def test_afct_by_size_bad_input():
    with pytest.raises(ShapeError):
        afct_by_size([1, 2], [0.1])
    with pytest.raises(ParameterError, match="all three"):
        afct_by_size([1, 2], [0.1, 0.2], capacity_pps=1000.0)
    with pytest.raises(ParameterError, match="load"):
        afct_by_size([1, 2], [0.1, 0.2], capacity_pps=1000.0, load=1.0, rtpd_s=0.1)
    with pytest.raises(ParameterError, match="bins"):
        afct_by_size([1, 2], [0.1, 0.2], bins=[10, 1])
    with pytest.raises(ParameterError, match="min_flows"):
        afct_by_size([1, 2], [0.1, 0.2], min_flows=0)


# ------------------------------------------------------------------------------- summary
def test_summary_by_hand():
    result = summary(start_s=[0.0, 1.0, 2.0], finish_s=[1.0, np.nan, 4.0], size_packets=[5, np.inf, 3],
                     delivered_packets=[5, 7, 3], end_s=10.0, capacity_pps=10.0, load=0.5, rtpd_s=0.1)
    assert result["flows"] == 3 and result["finished"] == 2
    assert result["afct_s"] == pytest.approx(1.5)
    np.testing.assert_allclose(result["throughput_pps"], [5.0, 7 / 9, 1.5])
    expected = np.mean([1.0 / ps_fct(5, 10.0, 0.5, 0.1), 2.0 / ps_fct(3, 10.0, 0.5, 0.1)])
    assert result["mean_slowdown"] == pytest.approx(expected)


def test_summary_without_end_or_ps_and_errors():
    result = summary([0.0, 1.0], [np.nan, np.nan], [3, 4], [1, 2])
    assert result["finished"] == 0 and math.isnan(result["afct_s"]) and "mean_slowdown" not in result
    assert np.all(np.isnan(result["throughput_pps"]))
    with pytest.raises(ParameterError, match=r"finish_s\[0\]"):
        summary([2.0], [1.0], [3], [3])
    with pytest.raises(ShapeError):
        summary([0.0, 1.0], [1.0], [3, 3], [3, 3])
    with pytest.raises(ParameterError, match="end_s"):
        summary([0.0, 5.0], [1.0, np.nan], [3, 3], [3, 1], end_s=2.0)


def test_ps_of_a_sample_by_hand():
    from fluidcc.packet.metrics import ps_fct_of
    # C = 10: two flows of 10 and 20 packets at t = 0 share 5 + 5 until the first is done at 2 s,
    # then the second has 10 left alone: 3 s; a flow alone takes L / C
    assert np.allclose(ps_fct_of([0.0, 0.0], [10, 20], 10.0, 0.0), [2.0, 3.0])
    assert np.allclose(ps_fct_of([0.0, 1.0], [10, 10], 10.0, 0.2), [1.3, 1.3])
    # a flow arriving mid-way slows the first: 0..1 alone (10 of 15 done), then 5 + 5
    assert np.allclose(ps_fct_of([1.0, 0.0], [10, 15], 10.0, 0.0), [1.5, 2.0])


def test_ps_of_a_long_sample_has_the_mg1_ps_mean():
    """M/M/1-PS: the sojourn time of a flow of L packets has mean L / (C (1 - rho)) (at the
    sample's own load, 20 000 s of arrivals at rho = 0.6)."""
    from fluidcc.packet.metrics import ps_fct, ps_fct_of
    from fluidcc.packet.workloads import Exponential, PoissonArrivals
    table = PoissonArrivals.for_load(0.6, Exponential(5.0), 100.0, duration_s=20_000.0, seed=4).table()
    load = table.size_packets.sum() / (100.0 * 20_000.0)
    sample = ps_fct_of(table.start_s, table.size_packets, 100.0, 0.1)
    assert np.mean(sample) == pytest.approx(np.mean(ps_fct(table.size_packets, 100.0, load, 0.1)), rel=0.03)


def test_ps_of_a_sample_bad_input():
    from fluidcc.packet.metrics import ps_fct_of
    with pytest.raises(ParameterError, match="size_packets"):
        ps_fct_of([0.0], [0.0], 10.0, 0.1)
    with pytest.raises(ParameterError, match="start_s"):
        ps_fct_of([np.nan], [1.0], 10.0, 0.1)
    with pytest.raises(ShapeError):
        ps_fct_of([0.0, 1.0], [1.0], 10.0, 0.1)


def test_link_capacity_packets_follows_the_schedule():
    from fluidcc.network import Flow, Link, Network
    from fluidcc.packet.metrics import link_capacity_packets

    network = Network((Link("a", 100.0, 0.01, schedule=((2.0, 300.0), (5.0, 50.0))), Link("b", 40.0, 0.01)),
                      (Flow("f", ("a", "b")),))
    got = link_capacity_packets(network, [0.0, 1.0, 3.0, 6.0, 8.0])
    # a: 100/s to 2 s, 300/s to 5 s, then 50/s; b: 40/s throughout
    np.testing.assert_allclose(got[:, 0], [100.0, 100.0 + 300.0, 2 * 300.0 + 50.0, 100.0])
    np.testing.assert_allclose(got[:, 1], [40.0, 80.0, 120.0, 80.0])
    with pytest.raises(ParameterError, match="edges_s"):
        link_capacity_packets(network, [2.0, 1.0])
