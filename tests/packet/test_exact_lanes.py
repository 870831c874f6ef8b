"""Lanes: the exact engine simulates a run's flows on lanes, a flow holding one from its start until
nothing of it is left, so that a step costs what the active flows cost. No result may depend on
how many lanes a run has; a run with too few says so and how many flows found none."""

from __future__ import annotations

import numpy as np
import pytest

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import RCP, TCP, OpenLoop
from fluidcc.packet.workloads import FlowTable, Pareto, PoissonArrivals

C = 5000.0  # packets/s


def bottleneck(buffer: int = 60) -> Network:
    return Network((Link("b", C, 0.02, buffer_packets=buffer),),
                   (Flow("f", ("b",), access_delay_s=1e-5, interface_pps=20 * C),))


def short_flows(load: float = 0.8, seconds: float = 2.0, seed: int = 5) -> FlowTable:
    return PoissonArrivals.for_load(load, Pareto(1.2, 8.0), C, duration_s=seconds, seed=seed).table()


#: Outputs that tell how the lanes were used, not what the run did.
LANE_OUTPUTS = ("lanes_peak", "flows_without_lane")


def assert_same_run(a, b):
    """Every output of two datasets equal (NaN where NaN), but those about the lanes."""
    for name in a.data_vars:
        if name in LANE_OUTPUTS:
            continue
        x, y = a[name].values, b[name].values
        if x.dtype.kind in "fc":
            np.testing.assert_array_equal(x, y, err_msg=name)  # equal_nan: NaN == NaN here
        else:
            assert (x == y).all(), name


def test_short_flows_on_few_lanes_are_those_on_one_lane_per_flow(conserved):
    """Some 800 flows, at most a few dozen at once: on as many lanes as the most in use at once
    (measured with a lane per flow) every output is the same, and one lane fewer is a status."""
    network, table, tcp = bottleneck(), short_flows(), TCP(initial_window=4)
    full = simulate_exact(network, tcp, table, duration_s=3.0, lanes=len(table))
    assert int(full.status[0]) == 0 and full.attrs["lanes"] == len(table)
    assert np.isfinite(full.fct.values).mean() > 0.9 and int(full.dropped.sum()) > 0  # they end, with losses
    peak = int(full.lanes_peak[0])
    assert 0 < peak < len(table) / 4  # lanes are given again
    few = simulate_exact(network, tcp, table, duration_s=3.0, lanes=peak)
    assert int(few.status[0]) == 0 and int(few.lanes_peak[0]) == peak
    assert_same_run(full, few)
    conserved(few)
    short = simulate_exact(network, tcp, table, duration_s=3.0, lanes=peak - 1).isel(run=0)
    assert int(short.status) == 5 and int(short.flows_without_lane) >= 1
    assert f"{int(short.flows_without_lane)} flows found no free lane" in str(short.message.values)
    assert int(short.sent.sum()) > 0  # what ran until then is kept


def test_the_default_lanes_give_the_same_run_and_grow_when_short(monkeypatch):
    """By default a run has `lanes_for` its flows' starts; where a flow finds no lane the runs are
    simulated again with twice as many, up to a lane per flow: the same outputs."""
    from fluidcc.packet import _run_exact

    network, tcp = bottleneck(), TCP(initial_window=4)
    tables = [short_flows(seed=5), short_flows(0.6, seed=6)]
    full = simulate_exact(network, tcp, tables, duration_s=3.0, seeds=[0, 1], lanes=max(map(len, tables)))
    default = simulate_exact(network, tcp, tables, duration_s=3.0, seeds=[0, 1])
    assert default.attrs["lanes"] < max(map(len, tables)) and default.attrs["attempts"] == 1
    assert_same_run(full, default)
    # one lane fewer than the most a run used: one doubling is enough (each lane count is a program
    # to compile; the test above compiled this one for the first table)
    peak = int(full.lanes_peak.max())
    monkeypatch.setattr(_run_exact, "lanes_for", lambda starts, rtt, width, end: peak - 1)
    grown = simulate_exact(network, tcp, tables, duration_s=3.0, seeds=[0, 1])
    assert grown.attrs["attempts"] == 2 and grown.attrs["lanes"] == 2 * (peak - 1)
    assert (grown.status == 0).all()
    assert_same_run(full, grown)


def test_explicit_rate_flows_and_open_loop_sources_do_not_depend_on_the_lanes(conserved):
    """RCP's senders (handshake, rate from the routers) and Poisson sources whose rates and random
    gaps are per flow: a lane takes both from its flow's index in the run, not from its own."""
    network, table = bottleneck(), short_flows(0.6, seed=7)
    for protocol in (RCP(), OpenLoop("poisson", rate_pps=np.linspace(50.0, 400.0, len(table)))):
        sized = FlowTable(table.start_s, np.minimum(table.size_packets, 40.0), table.stop_s, table.route)
        full = simulate_exact(network, protocol, sized, duration_s=3.0, lanes=len(table))
        peak = int(full.lanes_peak[0])
        assert int(full.status[0]) == 0 and peak < len(table) / 4, protocol.name
        few = simulate_exact(network, protocol, sized, duration_s=3.0, lanes=peak)
        assert int(few.status[0]) == 0, protocol.name
        assert_same_run(full, few)
        conserved(few)


def test_the_default_lanes_leave_out_flows_that_start_at_or_after_the_end():
    """Flows that start at or after the run's end (a batch's padding, a table longer than the run)
    never take a lane, so they do not count in the guess: 500 of them at 10^9 s would otherwise
    make one busy window of 500 starts, and a lane per flow."""
    from fluidcc.packet.exact import lanes_for

    starts = np.concatenate([np.arange(10.0), np.full(500, 1e9), np.full(40, 20.0), np.full(3, np.inf)])[None]
    assert lanes_for(starts, 0.1, starts.size, 20.0) == 64  # the least: ten starts a second apart
    assert lanes_for(starts, 0.1, starts.size, 20.5) == 128  # the 40 at 20 s start within the run
    assert lanes_for(starts, 0.1, starts.size) == starts.size  # without the end: 500 in one window


def test_long_lived_flows_keep_their_lanes_to_the_end():
    """Flows that never end keep their lanes: as many lanes as flows are in use at the end, and
    their counts at the end are written out. (Three long-lived flows in a table as wide as
    `short_flows()`'s, the others starting after the end, on a lane per flow: the program the
    first test compiled.)"""
    width = len(short_flows())
    start = np.concatenate([[0.0, 0.1, 0.2], np.full(width - 3, 5.0)])
    table = FlowTable(start, np.full(width, np.inf))
    run = simulate_exact(bottleneck(), TCP(), table, duration_s=1.0, lanes=width).isel(run=0)
    assert int(run.status) == 0 and int(run.lanes_peak) == 3
    assert (run.sent.values[:3] > 0).all() and (run.sent.values[3:] == 0).all() and int(run.in_flight.sum()) > 0


def test_bad_lane_counts_are_refused():
    for bad in (0, -3, 2.5, True, "8"):
        with pytest.raises(ParameterError, match="lanes"):
            simulate_exact(bottleneck(), TCP(), short_flows(), duration_s=1.0, lanes=bad)
