"""The exact engine: results that do not depend on the step, exact conservation, queues that
match queueing theory, headers, capacity schedules, two-way traffic, and its errors."""

from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet._run_exact import simulate_exact
from fluidcc.packet.exact import (DATA, LATEST_S, TIME_GRID_S, ExactProtocol, Packet, _first_set, _grid_offsets,
                                  _latest_fitting, _lex_order, on_grid)
from fluidcc.packet.exact_protocols import TCP, XCP
from fluidcc.packet.workloads import FlowTable, Pareto, PoissonArrivals

C = 5000.0  # packets/s: one packet time is 0.2 ms
PACKET_TIME = 1.0 / C
POOL = 512  # packets and ACKs a run may hold: enough here (a full pool is a run's status, checked)


def dumbbell(n: int, buffer: int = 40, capacity: float = C, delay_s: float = 0.02, access_s: float = 1e-5) -> Network:
    bottleneck = Link("b", capacity, delay_s, buffer_packets=buffer)
    return Network((bottleneck,), tuple(Flow(f"f{i}", ("b",), access_delay_s=access_s, interface_pps=20 * capacity)
                                        for i in range(n)))


def three_links() -> Network:
    """A - B - C with both directions as links; A->C flows against C->A flows, and the B->C link's
    capacity halves and comes back."""
    links = (Link("ab", C, 0.021, buffer_packets=30, source="A", target="B"),
             Link("bc", C, 0.025, buffer_packets=30, source="B", target="C",
                  schedule=((0.6, C / 2), (1.3, C))),
             Link("cb", C, 0.025, buffer_packets=30, source="C", target="B"),
             Link("ba", C, 0.021, buffer_packets=30, source="B", target="A"))
    flows = (Flow("east", ("ab", "bc"), access_delay_s=1e-5, interface_pps=20 * C),
             Flow("west", ("cb", "ba"), access_delay_s=1e-5, interface_pps=20 * C),
             Flow("east2", ("bc",), access_delay_s=1e-5, interface_pps=20 * C))
    return Network(links, flows)


def _same(runs: dict, names=("sent", "delivered", "dropped", "in_flight", "control_dropped", "acks_received")):
    reference = next(iter(runs.values()))
    for step, run in runs.items():
        assert (run.status == 0).all(), str(run.message.values)
        for name in names:
            np.testing.assert_array_equal(run[name].values, reference[name].values, err_msg=f"{name} at step {step}")
        np.testing.assert_allclose(run["fct"].values, reference["fct"].values, atol=1e-9, rtol=0, equal_nan=True,
                                   err_msg=f"fct at step {step}")
        np.testing.assert_allclose(run["queue_mean"].values, reference["queue_mean"].values, rtol=1e-9)


STEPS = (None, PACKET_TIME, 10 * PACKET_TIME, 100 * PACKET_TIME)


def test_tcp_dumbbell_does_not_depend_on_the_step(conserved):
    network = dumbbell(4)
    table = FlowTable(np.array([0.0, 0.05, 0.05, 0.3]), np.array([600, 90, np.inf, 1500.0]), route=np.arange(4))
    runs = {step: simulate_exact(network, TCP(), table, duration_s=1.5, step_s=step, pool_size=POOL) for step in STEPS}
    _same(runs)
    run = runs[None]
    assert run.attrs["step_s"] == pytest.approx(0.04 - 1e-9, abs=1e-4)  # the lookahead: the ACKs' way back
    assert int(run.dropped.sum()) > 0 and int(run.timeouts.sum() + run.recoveries.sum()) > 0  # losses happened
    assert np.isfinite(run.fct.values[0, [0, 1]]).all()
    conserved(run)


def test_short_flows_do_not_depend_on_the_step(conserved):
    network = dumbbell(1, buffer=60)
    table = PoissonArrivals.for_load(0.8, Pareto(8.0, 1.2), C, duration_s=1.0, seed=3).table()
    # some 3 000 flows on 2 048 lanes: the senders' stage takes its busy lanes in blocks, and the
    # ACKs of later blocks hold their slots while earlier ones send: more than POOL at once
    runs = {step: simulate_exact(network, TCP(initial_window=4), table, duration_s=1.6, step_s=step,
                                 pool_size=4 * POOL) for step in STEPS}
    _same(runs)
    run = runs[None]
    assert len(table) > 100 and np.isfinite(run.fct.values).mean() > 0.8
    conserved(run)


def test_two_way_traffic_with_a_capacity_schedule_does_not_depend_on_the_step(conserved):
    network = three_links()
    assert network.reverse_route_indices(0) == [2, 3] and network.reverse_route_indices(1) == [0, 1]
    table = FlowTable(np.array([0.0, 0.02, 0.1]), np.full(3, np.inf), route=np.arange(3))
    steps = (None, PACKET_TIME, 10 * PACKET_TIME, 100 * PACKET_TIME)
    runs = {step: simulate_exact(network, TCP(), table, duration_s=1.8, step_s=step, pool_size=POOL) for step in steps}
    _same(runs)
    run = runs[None].isel(run=0)
    # the ACKs of each direction queue behind the other direction's data
    assert int(run.link_accepted.sel(link="cb")) > int(run.link_data_accepted.sel(link="cb"))
    assert int(run.link_accepted.sel(link="ab")) > int(run.link_data_accepted.sel(link="ab"))
    conserved(runs[None])


@pytest.mark.parametrize("protocol", ["tcp", "xcp"])
def test_per_flow_series_add_up_to_each_flows_deliveries_and_change_nothing(protocol):
    """`flow_series`: each flow's data at its receiver per sample sums to its `delivered`, whether its
    links take rounds in one pass (TCP) or event by event (XCP's routers), with lanes reused by
    later flows (short flows on fewer lanes than flows); its samples up to 0.25 s add up to what a
    run that ends at 0.25 s delivered; the counts, FCTs and queues are the same as without it. (In
    a vmapped batch: `test_a_run_is_the_same_alone_and_batched_beside_another`.)"""
    network = dumbbell(1, buffer=60)
    proto = TCP(initial_window=4) if protocol == "tcp" else XCP()
    tables = [PoissonArrivals.for_load(0.4, Pareto(8.0, 1.2), C, duration_s=0.3, seed=seed).table() for seed in (3, 4)]
    on = simulate_exact(network, proto, tables, seeds=[0, 1], duration_s=0.5, sample_s=0.025, pool_size=4 * POOL,
                        lanes=300, flow_series=True)
    assert (on.status == 0).all() and on.attrs["lanes"] < len(tables[0])
    series = on.delivered_series
    assert series.dims == ("run", "sample", "flow") and series.shape[1] == 20
    np.testing.assert_array_equal(series.sum("sample").values, on.delivered.values)
    # the engine is deterministic: a run to 0.25 s is the longer run's beginning (20 samples of
    # 0.0125 s: the program of `off` below, without compiling one more)
    early = simulate_exact(network, proto, tables, seeds=[0, 1], duration_s=0.25, sample_s=0.0125,
                           pool_size=4 * POOL, lanes=300)
    np.testing.assert_array_equal(series.values[:, :10].sum(axis=1), early.delivered.values)
    assert early.delivered.values.sum() > 0
    off = simulate_exact(network, proto, tables, seeds=[0, 1], duration_s=0.5, sample_s=0.025,
                         pool_size=4 * POOL, lanes=300)
    assert "delivered_series" not in off
    _same({"on": on, "off": off})
    with pytest.raises(ParameterError, match="flow_series"):
        simulate_exact(network, proto, tables[0], duration_s=0.1, flow_series="yes")


def test_runs_that_differ_in_length_and_sample_grid_share_one_program(monkeypatch):
    """The run's end, sample spacing and number of samples are arguments of the compiled program:
    runs of one network that differ only in them compile once (samples rounded up to three
    significant bits: 15 and 16 share), and the shorter run's samples are the longer one's first.
    So are the network's numbers (capacities, delays, buffers): a network of the same structure
    with others shares the program and runs in it as in a program compiled for it alone."""
    from fluidcc.packet import _run_exact
    from fluidcc.packet.exact import sample_places

    assert [sample_places(n) for n in (1, 7, 8, 9, 15, 16, 17, 1000)] == [1, 7, 8, 10, 16, 16, 20, 1024]
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    network, table = dumbbell(2), FlowTable(np.array([0.0, 0.05]), np.full(2, np.inf), route=np.arange(2))
    runs = {}
    for duration in (0.5, 0.46875):  # 16 and 15 samples of 1/32 s (binary fractions: edges exact)
        runs[duration] = simulate_exact(network, TCP(), table, duration_s=duration, sample_s=1 / 32, pool_size=POOL,
                                        flow_series=True)
        assert len(_run_exact._CACHE) == 1
    long, short = runs[0.5], runs[0.46875]
    assert long.sizes["sample"] == 16 and short.sizes["sample"] == 15
    for name in ("accepted", "drops", "served", "delivered_series"):
        np.testing.assert_array_equal(short[name].values, long[name].values[:, :15], err_msg=name)
    np.testing.assert_allclose(short.queue.values, long.queue.values[:, :15], rtol=1e-12)
    assert short.delivered.values.sum() < long.delivered.values.sum()
    other = dumbbell(2, buffer=50, capacity=0.8 * C, delay_s=0.03, access_s=3e-5)
    shared = simulate_exact(other, TCP(), table, duration_s=0.5, sample_s=1 / 32, pool_size=POOL, flow_series=True)
    assert len(_run_exact._CACHE) == 1
    monkeypatch.setattr(_run_exact, "_CACHE", {})
    alone = simulate_exact(other, TCP(), table, duration_s=0.5, sample_s=1 / 32, pool_size=POOL, flow_series=True)
    assert (shared.status == 0).all() and (alone.status == 0).all()
    assert shared.delivered.values.sum() != long.delivered.values.sum()  # its own numbers, not the first network's
    for name, values in alone.data_vars.items():
        if values.dtype.kind in "fiub" and not name.startswith("work_"):
            np.testing.assert_array_equal(shared[name].values, values.values, err_msg=name)
    for duration in (0.25, 0.5):  # the default spacing: duration / 1000, so always 1000 samples
        # (a pool of 256: the program of `test_a_default_pool_found_too_small_grows`'s large pool)
        assert (simulate_exact(network, TCP(), table, duration_s=duration, pool_size=256).status == 0).all()
        assert len(_run_exact._CACHE) == 2


def test_a_link_s_chunk_is_in_the_same_order_where_its_tie_break_key_does_not_fit_one_sort(monkeypatch):
    """Runs of 419 430 flows and more (chunks of 1 024) put a link's chunk in order by one sort
    of several keys, not by `_lex_order`: forced here on a small run, with ties between flows'
    packets at one instant (flows started together on equal access links), every output the same."""
    from fluidcc.packet import _run_exact, exact

    # the key is below (flows + 1) * 5 kinds * 2^32, the room 2^(63 - 10): 419 429 flows at most
    assert exact._tie_fits(419_429, 1024) and not exact._tie_fits(419_430, 1024)

    network = dumbbell(4)
    table = FlowTable(np.array([0.0, 0.0, 0.0, 0.2]), np.array([600, 90, np.inf, 1500.0]), route=np.arange(4))
    runs = {}
    for fits in (True, False):
        monkeypatch.setattr(exact, "_tie_fits", lambda n_flows, chunk, fits=fits: fits)
        monkeypatch.setattr(_run_exact, "_CACHE", {})
        runs[fits] = simulate_exact(network, TCP(), table, duration_s=1.0, pool_size=POOL)
    assert int(runs[True].dropped.sum()) > 0
    for name, values in runs[True].data_vars.items():
        if values.dtype.kind in "fiub" and not name.startswith("work_"):
            np.testing.assert_array_equal(runs[False][name].values, values.values, err_msg=name)


def test_a_run_is_the_same_alone_and_batched_beside_another():
    """Instants that sit on whole packet times (1000 packets/s) are reached by sums that XLA may
    round differently in a batch than in one run; on the engine's time grid they are one value,
    so a run's every per-flow figure is the same alone and beside another run, each flow's
    deliveries per sample (`flow_series`) among them."""
    network = Network((Link("b", 1000.0, 0.05),), (Flow("f", ("b",)),))
    alone = PoissonArrivals.for_load(0.9, Pareto(1.2, 25.0), 1000.0, duration_s=3.0, seed=2).table()
    other = PoissonArrivals.for_load(0.5, Pareto(1.2, 25.0), 1000.0, duration_s=3.0, seed=2).table()
    one = simulate_exact(network, TCP(), alone, duration_s=8.0, sample_s=1.0, flow_series=True)
    assert float(one.queue_mean.sum()) > 1.0 and np.isfinite(one.fct.values).all()  # queues, every flow done
    n = len(alone)
    assert len(other) != n and int(one.delivered_series.sum()) == int(one.delivered.sum()) > 0
    # vmapped (a GPU's batches) and one run per thread (a CPU's)
    for batch in ("vmap", "threads"):
        two = simulate_exact(network, TCP(), [alone, other], duration_s=8.0, sample_s=1.0, seeds=[0, 1], batch=batch,
                             flow_series=True)
        assert (one.status == 0).all() and (two.status == 0).all() and two.attrs["batch"] == batch
        for name, values in one.data_vars.items():
            if values.dims == ("run", "flow"):
                np.testing.assert_array_equal(two[name].values[0, :n], values.values[0], err_msg=f"{name}, {batch}")
            elif values.dims == ("run", "sample", "flow"):
                np.testing.assert_array_equal(two[name].values[0, :, :n], values.values[0], err_msg=f"{name}, {batch}")
                np.testing.assert_array_equal(two[name].values.sum(axis=1), two.delivered.values)
            elif values.dims[0] == "run" and not name.startswith("work_") and name not in ("lanes_peak",):
                np.testing.assert_array_equal(two[name].values[0], values.values[0], err_msg=f"{name}, {batch}")
    with pytest.raises(ParameterError, match="batch"):
        simulate_exact(network, TCP(), alone, duration_s=1.0, batch="gpu")


@dataclasses.dataclass(frozen=True)
class OffGrid(ExactProtocol):
    """A test protocol that sets its times off the engine's time grid: a send every 1/3 ms from
    each flow's start, a router timer every 1/7 ms. It counts the events it was given at an instant
    off the grid, or before the time it set."""

    name = "off-grid"
    paced = False

    def init(self, params, flows, key):
        n = flows.start.shape[0]
        zero = jnp.zeros(n, jnp.int32)
        return {"count": zero, "next": flows.start + 1.0 / 3000.0, "due": jnp.zeros(n, bool), "off": zero,
                "early": zero}

    def next_time(self, s, params, flows):
        return jnp.where((s["count"] < flows.size) & ~s["due"], s["next"], jnp.inf)

    def on_time(self, s, params, flows, now, mask):
        return {**s, "due": s["due"] | mask, "off": s["off"] + (mask & (now != on_grid(now))),
                "early": s["early"] + (mask & (now < s["next"]))}

    def on_ack(self, s, params, flows, now, mask, ack):
        return s

    def ready(self, s, params, flows, now):
        return s["due"]

    def send(self, s, params, flows, now, mask):
        count = s["count"] + mask
        packet = Packet(kind=jnp.full(mask.shape, DATA, jnp.int32), seq=s["count"], header=jnp.zeros((mask.shape[0], 0)))
        return {**s, "count": count, "due": s["due"] & ~mask,
                "next": jnp.where(mask, flows.start + (count + 1) / 3000.0, s["next"])}, packet

    def report(self, s):
        return {"sends_off_grid": s["off"], "sends_early": s["early"]}

    def router_init(self, params, n_links):
        zero = jnp.zeros(n_links, jnp.int32)
        return {"next": jnp.full(n_links, 1.0 / 7000.0), "fired": zero, "off": zero, "early": zero}

    def router_next(self, router, params, link):
        return router["next"][link]

    def router_timer(self, router, params, link, now, waiting):
        return {"next": router["next"].at[link].add(1.0 / 7000.0), "fired": router["fired"].at[link].add(1),
                "off": router["off"].at[link].add((now != on_grid(now)).astype(jnp.int32)),
                "early": router["early"].at[link].add((now < router["next"][link]).astype(jnp.int32))}

    def observe(self, router, params):
        return {"timers_fired": router["fired"], "timers_off_grid": router["off"], "timers_early": router["early"]}


def test_a_protocol_that_sets_times_off_the_grid_gets_its_events_on_it_and_not_early():
    """The engine takes a protocol's next events on its time grid, rounded up: a protocol that
    forgets `on_grid` still runs on the grid (so alone and batched alike) and never sees an event
    before the time it set."""
    network = Network((Link("b", 1000.0, 0.01, buffer_packets=100),), (Flow("f", ("b",)), Flow("g", ("b",))))
    table = FlowTable(np.array([0.0, 0.1]), np.array([200.0, 100.0]))
    run = simulate_exact(network, OffGrid(), table, duration_s=0.2001, pool_size=256).isel(run=0)
    assert int(run.status) == 0
    np.testing.assert_array_equal(run.sent.values, [200, 100])  # every send happened, by 0.067 s and 0.133 s
    assert int(run.timers_fired[0]) == 1400  # at k / 7000 s, k = 1..1400, up to 0.2001 s
    for name in ("sends_off_grid", "sends_early", "timers_off_grid", "timers_early"):
        assert int(run[name].sum()) == 0, name


def test_the_step_may_not_exceed_the_lookahead_and_the_error_names_the_hop():
    with pytest.raises(ParameterError, match=r"step = 0\.05.*lookahead.*link b to sender of flow f0"):
        simulate_exact(dumbbell(1), TCP(), duration_s=0.1, step_s=0.05)
    for bad in (0.0, -1.0, math.nan, "1ms"):
        with pytest.raises(ParameterError, match="step"):
            simulate_exact(dumbbell(1), TCP(), duration_s=0.1, step_s=bad)




def test_bad_pool_sizes_and_durations_are_refused():
    for bad in (1, 0, 2.5, True, "64"):
        with pytest.raises(ParameterError, match="pool_size"):
            simulate_exact(dumbbell(1), TCP(), duration_s=0.1, pool_size=bad)
    for bad in (0.0, -1.0, math.inf, 2.0 ** 20 + 1.0):
        with pytest.raises(ParameterError, match="duration"):
            simulate_exact(dumbbell(1), TCP(), duration_s=bad)


def test_a_full_pool_is_a_status_not_a_crash():
    # (the first pool of the next test, which fills it too: one program for both)
    run = simulate_exact(dumbbell(2), TCP(initial_window=8), duration_s=0.3, pool_size=64).isel(run=0)
    assert int(run.status) == 1 and "pool" in str(run.message.values)
    assert int(run.sent.sum()) > 0  # what ran until then is kept


def test_a_default_pool_found_too_small_grows(monkeypatch):
    """The default pool starts at `pool_size_for`; when a run fills it, the runs are simulated again
    with four times the pool: the same results as a pool large enough from the start."""
    from fluidcc.packet import _run_exact

    # (each pool size is a program to compile: a pool of 64 is too small and grows once, to the
    # large one; only a full pool grows it)
    large = simulate_exact(dumbbell(2), TCP(initial_window=8), duration_s=0.3, pool_size=256)
    assert int(large.status.max()) == 0
    monkeypatch.setattr(_run_exact, "pool_size_for", lambda plan, width: 64)
    grown = simulate_exact(dumbbell(2), TCP(initial_window=8), duration_s=0.3)
    assert int(grown.status.max()) == 0 and grown.attrs["pool_size"] == 256 and grown.attrs["attempts"] == 2
    for name in ("sent", "delivered", "dropped", "finish", "acks_received"):
        np.testing.assert_array_equal(grown[name].values, large[name].values)


def test_the_engine_state_is_a_typed_pytree():
    """The engine carries records with named fields (JAX pytrees), not dicts: they flatten by name,
    pass through jit as their own type, and `replace` leaves the original unchanged."""
    from fluidcc.packet.exact import EngineState, PacketPool

    pool = PacketPool.of(time=jnp.full(3, jnp.inf), place=-1, flow=jnp.arange(3), hop=0, kind=0, seq=0, sent=0.0,
                         header=jnp.zeros((3, 2)))
    leaves = jax.tree_util.tree_flatten_with_path(pool)[0]
    assert [jax.tree_util.keystr(path) for path, _ in leaves] == [".whole", ".real"]  # a row per slot
    assert pool.whole.shape == (3, 5) and pool.real.shape == (3, 4) and pool.header.shape == (3, 2)
    assert list(pool.flow) == [0, 1, 2] and bool(jnp.all(pool.place == -1)) and bool(jnp.all(jnp.isinf(pool.time)))
    row = PacketPool.of(time=2.5, place=0, flow=7, hop=1, kind=2, seq=9, sent=1.5, header=jnp.ones(2))
    moved = jax.jit(lambda p, r: p.put(1, r))(pool, row)  # one slot written whole, the others kept
    assert isinstance(moved, PacketPool) and int(moved.seq[1]) == 9 and float(moved.time[1]) == 2.5
    assert int(moved.flow[2]) == 2 and int(pool.seq[1]) == 0 and float(moved.header[1, 1]) == 1.0
    assert int(pool.put(3, row).flow[2]) == 2  # a slot past the pool: nothing written
    grown = jax.jit(lambda p: p.replace(whole=p.whole + 1))(pool)
    assert isinstance(grown, PacketPool) and int(grown.seq[0]) == 1 and int(pool.seq[0]) == 0
    assert [f.name for f in dataclasses.fields(EngineState)] == [
        "pool", "free", "links", "bins", "flow_bins", "receivers", "counters", "proto", "router", "observed", "status",
        "lanes", "outputs", "work"]


def test_the_receivers_store_is_sized_from_the_links_that_carry_data():
    """Links only on reverse routes carry ACKs and make no hole in the data: the receivers' default
    store is the same whether the ACKs return over such links or over a fixed delay."""
    from fluidcc.packet.exact import Plan, receiver_runs_for

    forward = Link("ab", C, 0.02, buffer_packets=500, source="A", target="B")
    backward = Link("ba", C, 0.02, buffer_packets=500, source="B", target="A")
    one_way = Network((forward,), (Flow("f", ("ab",)),))
    two_way = Network((forward, backward), (Flow("f", ("ab",)),))
    routes = np.zeros(1, np.int64)
    plan_one = Plan.build(one_way, routes, 40.0)
    plan_two = Plan.build(two_way, routes, 40.0)
    assert plan_two.reverse_length[0] == 1 and plan_one.reverse_length[0] == 0  # ACKs over "ba", or a delay
    held = 500 + C * 0.02  # the data link's buffer and what is on its wire
    per_lane = 1 << math.ceil(math.log2(4 * held))  # a lane's share: four places per packet the links hold
    assert receiver_runs_for(plan_two) == receiver_runs_for(plan_one) == per_lane
    assert receiver_runs_for(plan_one, lanes=3) == 3 * per_lane


@settings(deadline=None, max_examples=40)
@given(st.data(), st.integers(1, 70), st.integers(1, 3))
def test_a_chunk_is_put_in_the_order_of_one_stable_sort_by_all_its_keys(data, n, n_keys):
    """`_lex_order` (one integer sort per key) against a stable sort by every key at once (NumPy's
    lexsort): keys with many ties, and keys at the largest value they may take (2^(63 - bits),
    bits those of n - 1), where a packing one bit too wide would overflow."""
    top = 2 ** (63 - max(1, (n - 1).bit_length())) - 1
    value = st.one_of(st.integers(0, 3), st.just(top), st.integers(0, top))
    keys = [np.array(data.draw(st.lists(value, min_size=n, max_size=n)), dtype=np.int64) for _ in range(n_keys)]
    order, last = _lex_order(tuple(jnp.asarray(k) for k in keys), n)
    expected = np.lexsort((np.arange(n), *keys))  # lexsort: the last key the most significant
    np.testing.assert_array_equal(np.asarray(order), expected)
    np.testing.assert_array_equal(np.asarray(last), keys[-1][expected])


@settings(deadline=None, max_examples=40)
@given(st.lists(st.one_of(st.integers(0, 40), st.integers(0, 2 ** 52 - 1), st.none()), min_size=1, max_size=40))
def test_grid_offsets_keep_the_order_and_the_ties_of_the_times(steps):
    """Times on the grid (whole grid steps, up to just below `LATEST_S`; None: inf, no event) and
    their `_grid_offsets`: the same comparisons between every two, inf after every time, all
    below 2^52 + 1."""
    t = np.array([math.inf if k is None else k * TIME_GRID_S for k in steps])
    assert np.all(t[np.isfinite(t)] < LATEST_S)
    off = np.asarray(_grid_offsets(jnp.asarray(t)))
    np.testing.assert_array_equal(off[:, None] < off[None, :], t[:, None] < t[None, :])
    np.testing.assert_array_equal(off[:, None] == off[None, :], t[:, None] == t[None, :])
    assert np.all((off >= 0) & (off <= 2 ** 52))


@settings(deadline=None, max_examples=40)
@given(st.data(), st.integers(1, 12))
def test_the_chunk_s_end_is_the_same_from_its_earliest_events_as_over_the_pool(data, most):
    """Where more than `most` but at most 2 `most` events come before t1, `_latest_fitting` from the
    (most+1)-th earliest gives the bisection over the whole pool's times to the bit, and it
    leaves at most `most` events before it (times on a coarse grid: many ties; inf: free places;
    some at or after t1)."""
    t1 = 1.0
    n_before = data.draw(st.integers(most + 1, 2 * most))
    before = data.draw(st.lists(st.integers(0, 63), min_size=n_before, max_size=n_before))
    after = data.draw(st.lists(st.sampled_from([1.0, 1.5, math.inf]), max_size=10))
    key = np.array([k / 64 for k in before] + after)
    key = key[np.asarray(data.draw(st.permutations(range(key.size))))]
    first = float(np.min(key))
    pool = float(_latest_fitting(jnp.asarray(key), first, t1, most, "pool"))
    earliest = float(_latest_fitting(jnp.asarray(key), first, t1, most, "earliest"))
    assert earliest == pool
    assert np.sum(key < earliest) <= most


@settings(deadline=None, max_examples=40)
@given(st.lists(st.booleans(), min_size=1, max_size=300), st.integers(1, 140), st.data())
def test_the_first_set_places_are_those_of_nonzero(mask, size, data):
    """`_first_set` (64 places to a word) against NumPy: the first `size` true places in order, then
    the fill; masks of any length (not a whole number of words), sparse, dense and all false."""
    mask = np.array(mask)
    if data.draw(st.booleans()):  # sparse: a few places set
        mask &= np.arange(mask.size) % data.draw(st.integers(5, 70)) == 0
    fill = data.draw(st.sampled_from([mask.size, 0, 7]))
    found = np.asarray(_first_set(jnp.asarray(mask), size, fill))
    places = np.flatnonzero(mask)[:size]
    np.testing.assert_array_equal(found, np.concatenate([places, np.full(size - places.size, fill)]))
    assert found.dtype == np.int32
