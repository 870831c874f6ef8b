"""The packet engine: M/D/1, exact packet accounting, path timing, drop-tail, the pool, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate
from fluidcc.packet.protocols import OpenLoop
from fluidcc.packet.workloads import FlowTable


def _one_link(capacity_pps=1000.0, buffer=10_000, delay_s=0.001):
    return Network((Link("l", capacity_pps, delay_s, buffer_packets=buffer),), (Flow("f", ("l",)),))


@pytest.mark.slow
@pytest.mark.parametrize("load", [0.5, 0.9])
def test_poisson_packets_into_one_link_queue_like_md1(load):
    """Pollaczek-Khinchine: mean number waiting Lq = rho^2 / (2 (1 - rho)) for M/D/1. With service
    of one slot, the backlog at slot boundaries is the queue M/D/1 leaves behind at departures,
    whose mean is Lq (8 seeds x 200 000 packet times; measured 4.046 against 4.05 at 0.9)."""
    network = _one_link()
    run = simulate(network, OpenLoop("poisson", load * 1000.0), duration_s=200.0, seeds=list(range(1, 9)))
    assert np.all(run.late.values == 0)
    expected = load**2 / (2 * (1 - load))
    assert float(run.queue_mean.mean()) == pytest.approx(expected, rel=0.05)
    departed = run.link_accepted.values.sum() / (8 * 200.0 * 1000.0)
    assert departed == pytest.approx(load, rel=0.01)  # utilization


@pytest.mark.parametrize("mean", [0.9, 4.0, 2500.0])  # 2500 is above TABLE_MEAN: jax.random.poisson
def test_an_open_loop_poisson_source_sends_a_poisson_count_each_slot(mean):
    """One slot of 400 flows x 5 seeds: each flow's count is one draw. Its mean and variance are
    the Poisson mean (within 4.5 standard errors), and for small means the frequencies of the
    counts pass a chi-square test against the Poisson probabilities."""
    from scipy import stats

    flows = 400
    network = Network((Link("l", 1e7, 0.001, buffer_packets=10**7),), tuple(Flow(f"f{i}", ("l",)) for i in range(flows)))
    run = simulate(network, OpenLoop("poisson", mean * 1000.0), duration_s=1e-3, slot_s=1e-3, seeds=[1, 2, 3, 4, 5])
    counts = run.sent.values.reshape(-1).astype(float)
    n = counts.size
    assert abs(counts.mean() - mean) < 4.5 * np.sqrt(mean / n)
    # the variance of a sample variance of a Poisson is about (mean + 2 mean^2) / n
    assert abs(counts.var(ddof=1) - mean) < 4.5 * np.sqrt((mean + 2 * mean**2) / n)
    if mean < 10:
        top = int(stats.poisson.ppf(0.995, mean))
        observed = np.bincount(np.minimum(counts.astype(int), top), minlength=top + 1)
        expected = n * np.append(stats.poisson.pmf(np.arange(top), mean), stats.poisson.sf(top - 1, mean))
        assert stats.chisquare(observed, expected).pvalue > 1e-4


def test_the_poisson_table_ends_where_the_tail_is_below_the_uniforms_spacing():
    from scipy import stats

    from fluidcc.packet.protocols.open_loop import poisson_table

    table = poisson_table(np.array([0.0, 0.9, 40.0]))
    assert np.all(table[0] == 1.0)  # a flow of mean 0 never sends
    assert np.all(np.diff(table, axis=1) >= 0)
    assert stats.poisson.sf(table.shape[1] - 1, 40.0) < 1e-16  # past the last entry: under 1e-16
    assert np.allclose(table[1, :4], stats.poisson.cdf(np.arange(4), 0.9))


def _two_links(buffers=(5, 3)):
    links = (Link("a", 1000.0, 0.010, buffer_packets=buffers[0]), Link("b", 500.0, 0.0055, buffer_packets=buffers[1]))
    flows = (Flow("ab", ("a", "b")), Flow("a", ("a",), access_delay_s=0.002), Flow("b", ("b",)))
    return Network(links, flows)


@pytest.mark.parametrize("kind", ["poisson", "constant"])
def test_every_packet_is_accounted_for_exactly(kind):
    network = _two_links()
    flows = FlowTable([0.0, 0.1, 0.05], [500, np.inf, 2000], [np.inf, 1.5, np.inf], [0, 1, 2])
    run = simulate(network, OpenLoop(kind, [400.0, 900.0, 300.0]), flows, duration_s=2.0, seeds=[3, 4], slot_s=1e-3)
    sent, delivered, dropped, in_flight = (run[v].values for v in ("sent", "delivered", "dropped", "in_flight"))
    assert np.all(sent == delivered + dropped + in_flight)
    assert np.all(delivered <= sent) and np.all(dropped > 0)  # the links overflow: drops happen
    assert np.all(sent[:, 0] <= 500) and np.all(sent[:, 2] <= 2000)
    assert np.all(run.link_dropped.values.sum(axis=1) == dropped.sum(axis=1))
    assert np.all(run.late.values == 0)


def test_a_packet_crosses_an_idle_path_in_service_plus_propagation_rounded_up_per_hop():
    network = _two_links(buffers=(100, 100))
    # one packet of flow "ab" at t = 0.050 s: link a serves it in 1 slot (1 ms), 10 ms to b, which
    # serves it in 2 slots, 5.5 ms to the receiver: 1 + 10 + 2 + 5.5 = 18.5 ms, rounded up per hop: 19
    flows = FlowTable([0.05, 1.0, 1.0], [1, 1, 1], route=[0, 1, 2])
    run = simulate(network, OpenLoop("constant", [1000.0, 1.0, 1.0]), flows, duration_s=0.2, slot_s=1e-3)
    assert float(run.first_sent.values[0, 0]) == pytest.approx(0.050)
    assert float(run.last_delivered.values[0, 0] - run.first_sent.values[0, 0]) == pytest.approx(0.019)
    assert run.delivered.values[0, 0] == 1 and run.sent.values[0, 1] == 0  # the others start later


def test_drop_tail_fills_the_buffer_then_drops_the_excess():
    network = _one_link(buffer=20)
    # two packets per slot into a link serving one: the queue grows by one a slot until 20 wait
    # beside the one in service, then one packet of two is dropped every slot
    run = simulate(network, OpenLoop("constant", 2000.0), duration_s=1.0, slot_s=1e-3)
    assert run.sent.values[0, 0] == 2000
    assert run.link_accepted.values[0, 0] == 1000 + 20  # accepted: served, or not yet at the end
    assert run.dropped.values[0, 0] == 2000 - 1000 - 20
    assert float(run.queue.values[0, -1, 0]) == pytest.approx(20.0)  # left at each slot boundary
    assert run.in_flight.values[0, 0] == run.sent.values[0, 0] - run.delivered.values[0, 0] - run.dropped.values[0, 0]


def test_an_overflow_takes_packets_from_every_batch_in_proportion():
    """Two sources send 6 and 2 packets a slot into a link serving 4: once its buffer is full, the
    4 packets of room a slot are shared 3 : 1, so the first source loses 3 packets a slot and the
    second 1 -- every slot, not only on average (whole batches taken in turn would drop 4 of one
    source's packets in some slots and none in others)."""
    links = (Link("l", 4000.0, 0.001, buffer_packets=8),)
    network = Network(links, (Flow("big", ("l",)), Flow("small", ("l",))))
    run = simulate(network, OpenLoop("constant", [6000.0, 2000.0]), duration_s=0.2, slot_s=1e-3,
                   sample_s=1e-3, seeds=[1, 2])
    assert np.all(run.sent.values == [[1200, 400]] * 2)
    dropped = run.dropped.values
    assert np.all(dropped[:, 0] == 3 * dropped[:, 1]) and np.all(dropped[:, 1] >= 190)
    # the same in every slot: both runs (different random turns) drop the same
    assert np.array_equal(dropped[0], dropped[1])


def test_an_interface_rate_is_a_private_access_link():
    """A sender with a 100x faster interface than the bottleneck, and the same sender behind a
    private access link of that speed (which only ever queues its own flow's burst), give the same
    TCP run but for where a burst's last packets arrive: the access link serializes a burst of most
    of its slot's service into the next slot, the interface delivers a slot's batch together.
    Measured: the same packets sent, drops within one, completion times within one slot. Without
    the interface (paced at the bottleneck) the run is another: drops fall by half or more."""
    from fluidcc.packet.protocols import TCP

    rtpd, fast, n = 0.05, 100_000.0, 4
    bottleneck = Link("b", 1000.0, rtpd / 2 - 1e-4, buffer_packets=50)
    behind_links = Network((bottleneck, *(Link(f"nic{i}", fast, 1e-4, buffer_packets=100_000) for i in range(n))),
                           tuple(Flow(f"f{i}", (f"nic{i}", "b")) for i in range(n)))
    with_interface = Network((bottleneck,), tuple(Flow(f"f{i}", ("b",), access_delay_s=1e-4, interface_pps=fast)
                                                  for i in range(n)))
    flows = FlowTable(np.linspace(0.0, 0.3, n), [3000, 1000, np.inf, 500], route=np.arange(n))
    a, b = (simulate(network, TCP(), flows, duration_s=5.0, slot_s=1e-3, seeds=[1]) for network in
            (behind_links, with_interface))
    assert a.dropped.values.sum() > 50  # bursts overflow the bottleneck
    assert np.array_equal(a.sent.values, b.sent.values)
    assert np.all(np.abs(a.dropped.values - b.dropped.values) <= 1)
    finished = np.isfinite(a.fct.values)
    assert finished.sum() == 2 and np.array_equal(finished, np.isfinite(b.fct.values))
    assert np.all(np.abs(a.fct.values[finished] - b.fct.values[finished]) <= 1e-3 + 1e-9)
    assert float(b.queue_mean.sel(link="b")[0]) == pytest.approx(float(a.queue_mean.sel(link="b")[0]), rel=0.02)
    paced = Network((bottleneck,), tuple(Flow(f"f{i}", ("b",), access_delay_s=1e-4) for i in range(n)))
    c = simulate(paced, TCP(), flows, duration_s=5.0, slot_s=1e-3, seeds=[1])
    assert c.dropped.values.sum() < 0.75 * a.dropped.values.sum()


def test_runs_with_fewer_flows_are_padded_whatever_the_routes_of_the_others():
    network = _two_links()
    one = FlowTable([0.0], [50], route=[0])
    three = FlowTable([0.0, 0.0, 0.0], [50, 50, 50], route=[0, 1, 2])
    run = simulate(network, OpenLoop("constant", 400.0), [one, three], duration_s=0.5, seeds=[1, 2], slot_s=1e-3)
    assert run.sent.values.tolist() == [[50, 0, 0], [50, 50, 50]]
    assert run.route_index.values.tolist() == [[0, -1, -1], [0, 1, 2]]
    # per-flow rates follow the flow index in a group of runs narrower than the batch, too
    rates = OpenLoop("constant", [40.0, 60.0, 20.0])
    for groups in (1, 2):
        grouped = simulate(network, rates, [one, three], duration_s=0.5, seeds=[1, 2], slot_s=1e-3, groups=groups)
        assert grouped.sent.values.tolist() == [[20, 0, 0], [20, 30, 10]]
        assert grouped.route_index.values.tolist() == [[0, -1, -1], [0, 1, 2]]
    with pytest.raises(ParameterError, match="rate"):
        simulate(network, OpenLoop("constant", [40.0, 60.0]), [one, three], duration_s=0.5, seeds=[1, 2],
                 slot_s=1e-3, groups=2)
    for groups in (1, 2):  # in groups too, though each group's own flows would agree
        with pytest.raises(ParameterError, match="flows"):
            simulate(network, OpenLoop("constant", 400.0), [three, FlowTable([0.0, 0.0], [5, 5], route=[0, 2])],
                     duration_s=0.5, seeds=[1, 2], slot_s=1e-3, groups=groups)


def test_groups_of_runs_each_padded_to_their_own_width_give_each_run_as_alone():
    """A batch of 4- and 2-flow runs in two groups: every run is the run of its seed alone (no
    padding), in every variable; the 2-flow runs' extra flows look as padding does in a batch
    padded to 4 flows; runs stay in the order of the seeds."""
    from fluidcc.packet.protocols import TCP

    network = Network((Link("l", 1000.0, 0.01, buffer_packets=20),), (Flow("f", ("l",)),))

    def table(n, seed):
        return FlowTable(np.random.default_rng(seed).uniform(0.0, 0.5, n), np.full(n, 200.0))

    seeds = [1, 2, 3, 4]
    tables = [table(4, 1), table(2, 2), table(4, 3), table(2, 4)]
    grouped = simulate(network, TCP(), tables, duration_s=2.0, slot_s=1e-3, seeds=seeds, groups=2)
    assert grouped.seed.values.tolist() == seeds and grouped.sizes["flow"] == 4 and grouped.attrs["groups"] == 2
    for k, seed in enumerate(seeds):
        alone = simulate(network, TCP(), [tables[k]], duration_s=2.0, slot_s=1e-3, seeds=[seed])
        mine = grouped.isel(run=[k], flow=slice(0, len(tables[k])))
        for name in alone.data_vars:
            assert np.array_equal(mine[name].values, alone[name].values, equal_nan=True), (k, name)
            assert mine[name].dtype == alone[name].dtype
    assert grouped.dropped.values.sum() > 0  # the link overflows: the runs interact with their flows
    padded = simulate(network, TCP(), [tables[0], tables[1]], duration_s=2.0, slot_s=1e-3, seeds=seeds[:2])
    for name, v in padded.data_vars.items():
        if "flow" in v.dims:
            assert np.array_equal(grouped[name].values[1, 2:], v.values[1, 2:], equal_nan=True), name
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ParameterError, match="groups"):
            simulate(network, TCP(), tables, duration_s=0.1, slot_s=1e-3, seeds=seeds, groups=bad)


@given(st.lists(st.integers(1, 60), min_size=1, max_size=9), st.integers(1, 4))
def test_groups_of_runs_balance_the_largest_padded_work(widths, groups):
    """Every run in exactly one group; a group's runs are consecutive in flow count; no more
    groups than asked; and the largest group's work (runs x widest run) is the least of every
    split of the runs, sorted by flow count, into that many consecutive groups (brute force)."""
    from itertools import combinations

    from fluidcc.packet._run import _balanced_groups

    w = np.array(widths)
    parts = _balanced_groups(w, groups)
    assert sorted(np.concatenate(parts).tolist()) == list(range(len(w))) and len(parts) <= groups
    spans = [(w[p].min(), w[p].max()) for p in parts]
    assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:]))  # narrow groups first, not overlapping
    ordered = np.sort(w)
    best = min(max(len(g) * g.max() for g in np.split(ordered, list(cuts)))
               for k in range(min(groups, len(w))) for cuts in combinations(range(1, len(w)), k))
    assert max(len(p) * w[p].max() for p in parts) == best


def test_runs_are_deterministic_per_seed():
    network = _two_links()
    source = OpenLoop("poisson", [400.0, 900.0, 300.0])
    a = simulate(network, source, duration_s=0.5, seeds=[7, 8], slot_s=1e-3)
    b = simulate(network, source, duration_s=0.5, seeds=[7], slot_s=1e-3)
    assert np.array_equal(a.sent.values[0], b.sent.values[0]) and np.array_equal(a.dropped.values[0], b.dropped.values[0])
    assert not np.array_equal(a.sent.values[0], a.sent.values[1])


def test_a_batch_spread_over_the_devices_gives_each_run_what_it_gives_alone():
    """A batch is laid along the JAX devices (one per core; a batch that does not divide evenly is
    padded with a copy of its last run, dropped again): each run of a batch one longer than the
    number of devices is the run of its seed alone, in every variable, the routers' and sources'
    included (RCP on a link that overflows, so the links' random turns matter)."""
    import jax

    from fluidcc.packet._run import _spread
    from fluidcc.packet.protocols import RCP

    seeds = list(range(7, 7 + len(jax.local_devices()) + 1))
    keys = jax.vmap(jax.random.PRNGKey)(np.asarray(seeds, dtype=np.uint32))
    assert _spread(keys, (), (), False)[3] == (len(jax.local_devices()) > 1)
    network = Network((Link("l", 1000.0, 0.01, buffer_packets=5),), (Flow("f", ("l",)),))
    flows = FlowTable([0.0, 0.0, 0.1, 0.2], np.full(4, np.inf))
    batch = simulate(network, RCP(), flows, duration_s=1.0, slot_s=1e-3, seeds=seeds)
    assert batch.sizes["run"] == len(seeds) and batch.seed.values.tolist() == seeds
    assert batch.link_dropped.values.min() > 0
    for k, seed in enumerate(seeds):
        alone = simulate(network, RCP(), flows, duration_s=1.0, slot_s=1e-3, seeds=[seed])
        for name, values in batch.data_vars.items():
            assert np.array_equal(values.values[k], alone[name].values[0], equal_nan=True), (seed, name)


def test_a_run_does_not_depend_on_how_often_it_is_sampled():
    """The links' random turns are a hash of the seed, the slot and the link: recording the time
    series more or less often does not change what happens."""
    network = Network((Link("l", 4000.0, 0.001, buffer_packets=8),), (Flow("a", ("l",)), Flow("b", ("l",))))
    source = OpenLoop("constant", [5000.0, 3000.0])
    runs = [simulate(network, source, duration_s=0.3, slot_s=1e-3, sample_s=every, seeds=[4]) for every in (0.01, 0.3)]
    assert runs[0].dropped.values.sum() > 0
    for name in ("sent", "dropped", "received", "link_dropped", "link_accepted"):
        assert np.array_equal(runs[0][name].values, runs[1][name].values), name
    assert np.allclose(runs[0].queue_mean.values, runs[1].queue_mean.values, rtol=1e-12)  # means of other blocks


@pytest.mark.parametrize("kwargs, field", [
    ({"duration_s": 0.0}, "duration"), ({"duration_s": 1.0, "slot_s": -1e-3}, "slot"),
    ({"duration_s": 1.0, "seeds": []}, "seeds"), ({"duration_s": 1.0, "seeds": [-1]}, "seeds"),
    ({"duration_s": 1.0, "flows": FlowTable([0.0], [1], route=5)}, "route"),
    ({"duration_s": 1.0, "flows": [FlowTable([0.0], [1])] * 2}, "flows"),
    ({"duration_s": 1.0, "buffers": -1}, "buffers"),
    ({"duration_s": 1e6, "slot_s": 0.1}, "duration"),  # 32-bit counters: at most 536 870 910 packets
])
def test_bad_simulation_input_names_the_field(kwargs, field):
    with pytest.raises(ParameterError, match=field):
        simulate(_one_link(), OpenLoop("constant", 10.0), **kwargs)


def test_bad_source_input_names_the_field():
    with pytest.raises(ParameterError, match="rate"):
        OpenLoop("constant", 0.0)
    with pytest.raises(ParameterError, match="kind"):
        OpenLoop("bursty")
    with pytest.raises(ParameterError, match="rate"):
        simulate(_two_links(), OpenLoop("constant", [1.0, 2.0]), duration_s=0.1)
