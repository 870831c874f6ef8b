"""Flow workloads: exact means against independent computations and large seeded samples,
CDF file validation, Poisson arrivals, offered load, flow tables."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidcc.errors import ParameterError, WorkloadError
from fluidcc.packet.workloads import (
    EmpiricalCDF,
    Exponential,
    Fixed,
    FlowTable,
    LongLived,
    Pareto,
    PoissonArrivals,
    arrival_rate_for_load,
    named,
    offered_load,
    read_trace,
    write_trace,
)

#: The shared workloads checked out beside the repository (guaranteed locally and in CI).
WORKLOADS = (Path(__file__).resolve().parents[2] / ".." / "shared" / "workloads").resolve()
FILES = {"websearch": WORKLOADS / "websearch_dctcp.cdf", "hadoop": WORKLOADS / "facebook_hadoop.cdf"}
Z = 5.0  # statistical tolerance in standard errors (seeded, so a pass is reproducible)


# ------------------------------------------------------------------- independent references
def raw_points(path: Path) -> tuple[np.ndarray, np.ndarray]:
    data = np.loadtxt(path)
    return data[:, 0], data[:, 1] / 100.0


def mean_bytes_by_trapezoid(sizes, cum) -> float:
    """E[B] = integral of the inverse CDF over [0, 1]: exact by trapezoids for a linear CDF,
    plus the atom at the first size."""
    return cum[0] * sizes[0] + np.trapezoid(sizes, cum)


def mean_packets_by_pmf(sizes, cum, packet_bytes=1000.0) -> float:
    """E[max(1, ceil(B/s))] = sum_k k P(N = k), P(N = k) = F(k s) - F((k-1) s), P(N = 1) = F(s)."""
    k = np.arange(1, math.ceil(sizes[-1] / packet_bytes) + 1, dtype=np.float64)
    cdf = np.interp(k * packet_bytes, sizes, cum)
    pmf = np.diff(np.concatenate([[0.0], cdf]))
    return float(np.sum(k * pmf))


def pareto_rounded_mean_by_sum(shape, scale, terms=100_000) -> float:
    """sum_{k >= 0} P(X > k), summed directly up to `terms`, with an Euler-Maclaurin tail."""
    assert terms > scale
    k = np.arange(1, terms, dtype=np.float64)
    head = 1.0 + np.sum(np.minimum(1.0, (scale / k) ** shape))
    t = float(terms)
    tail = t ** (1 - shape) / (shape - 1) + t**-shape / 2 + shape * t ** (-shape - 1) / 12
    return head + scale**shape * tail


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bad.cdf"
    path.write_text(text)
    return path


# ------------------------------------------------------------------------- empirical CDFs
@pytest.mark.parametrize("name", ["websearch", "hadoop"])
def test_shared_workload_means_are_exact(name):
    cdf = named(name, WORKLOADS)
    sizes, cum = raw_points(FILES[name])
    assert cdf.mean_bytes == pytest.approx(mean_bytes_by_trapezoid(sizes, cum), rel=1e-12)
    assert cdf.mean_packets == pytest.approx(mean_packets_by_pmf(sizes, cum), rel=1e-12)
    if np.all(sizes % 1000 == 0):  # websearch: segments of whole packets, rounding adds half a packet
        assert cdf.mean_packets == pytest.approx(cdf.mean_bytes / 1000 + 0.5, rel=1e-12)
    else:  # hadoop: flows under 1000 bytes all count as one packet
        assert cdf.mean_bytes / 1000 < cdf.mean_packets < cdf.mean_bytes / 1000 + 0.5


@pytest.mark.parametrize("name, known_bytes", [("websearch", 1_711_250.0), ("hadoop", 120_420.75)])
def test_shared_workload_means_against_large_sample(name, known_bytes):
    cdf = EmpiricalCDF.load(FILES[name])
    assert cdf.mean_bytes == pytest.approx(known_bytes)
    n = 1_000_000
    packets = cdf.sample(np.random.default_rng(2024), n)
    assert packets.dtype == np.float64 and packets.min() >= 1 and np.all(packets == np.floor(packets))
    assert abs(packets.mean() - cdf.mean_packets) < Z * packets.std() / math.sqrt(n)
    size_bytes = cdf.sample_bytes(np.random.default_rng(7), n)
    assert abs(size_bytes.mean() - cdf.mean_bytes) < Z * size_bytes.std() / math.sqrt(n)
    # the sampled CDF goes through the file's points
    sizes, cum = raw_points(FILES[name])
    empirical = np.searchsorted(np.sort(size_bytes), sizes, side="right") / n
    assert np.all(np.abs(empirical - cum) < Z * np.sqrt(cum * (1 - cum) / n) + 1e-12)


def test_first_percent_is_an_atom_and_packet_size_counts():
    cdf = EmpiricalCDF.from_points([1500, 1500, 4000], [40, 60, 100], packet_bytes=1500)
    # 60 % of flows at 1500 bytes (1 packet); then uniform on [1500, 4000]: ceil(x / 1500) = 2 or 3
    expected_packets = 0.6 * 1 + 0.4 * (2 * 1500 + 3 * 1000) / 2500
    assert cdf.mean_bytes == pytest.approx(0.6 * 1500 + 0.4 * 2750)
    assert cdf.mean_packets == pytest.approx(expected_packets)
    sample = cdf.sample(np.random.default_rng(1), 400_000)
    assert set(np.unique(sample)) == {1.0, 2.0, 3.0}
    assert abs(sample.mean() - expected_packets) < Z * sample.std() / math.sqrt(sample.size)


def test_zero_byte_flows_are_one_packet():
    cdf = EmpiricalCDF.from_points([0, 0, 1000], [0, 50, 100])
    assert cdf.mean_packets == pytest.approx(1.0)
    assert np.all(cdf.sample(np.random.default_rng(0), 1000) == 1.0)


@settings(deadline=None)
@given(st.lists(st.tuples(st.floats(0, 1e6), st.floats(0, 100)), min_size=1, max_size=8),
       st.sampled_from([1.0, 64.0, 1000.0, 1500.0]))
def test_random_cdfs_mean_packets_matches_pmf(points, packet_bytes):
    sizes = np.sort([0.0] + [b for b, _ in points] + [2e6])
    cum = np.sort([0.0] + [p for _, p in points] + [100.0])
    cdf = EmpiricalCDF.from_points(sizes, cum, packet_bytes=packet_bytes)
    assert cdf.mean_packets >= max(1.0, cdf.mean_bytes / packet_bytes)
    assert cdf.mean_packets <= cdf.mean_bytes / packet_bytes + 1.0
    if np.all(np.diff(sizes) > 0):  # np.interp (in the pmf sum) needs distinct sizes
        assert cdf.mean_packets == pytest.approx(mean_packets_by_pmf(sizes, cum / 100, packet_bytes), rel=1e-9)


@pytest.mark.parametrize("text, line, what", [
    ("0 0\n100 50\n50 100\n", 3, "sizes that do not decrease"),
    ("0 0\n100 60\n200 50\n300 100\n", 3, "percents that do not decrease"),
    ("0 0\n100 50\n200 99.5\n", 3, "exactly 100"),
    ("0 0\n100 fifty\n200 100\n", 2, "two numbers"),
    ("0 0\n100\n200 100\n", 2, "two numbers"),
    ("0 0 0\n200 100\n", 1, "two numbers"),
    ("# a comment\n\n-5 0\n200 100\n", 3, "size >= 0"),
    ("0 -1\n200 100\n", 1, "percent >= 0"),
    ("0 0\nnan 50\n200 100\n", 2, "finite"),
])
def test_malformed_cdf_file_names_file_and_line(tmp_path, text, line, what):
    path = write(tmp_path, text)
    with pytest.raises(WorkloadError) as error:
        EmpiricalCDF.load(path)
    assert str(path) in error.value.field and f"line {line}" in error.value.field
    assert what in error.value.allowed


def test_one_point_and_missing_file(tmp_path):
    path = write(tmp_path, "1000 100\n")
    with pytest.raises(WorkloadError, match="at least two points") as error:
        EmpiricalCDF.load(path)
    assert str(path) in error.value.field
    with pytest.raises(WorkloadError, match="existing"):
        EmpiricalCDF.load(tmp_path / "missing.cdf")


def test_from_points_errors_name_the_point():
    with pytest.raises(WorkloadError) as error:
        EmpiricalCDF.from_points([0, 10, 5], [0, 50, 100])
    assert error.value.field == "points[2]"
    with pytest.raises(WorkloadError, match="one cumulative percent per size"):
        EmpiricalCDF.from_points([0, 10], [0, 50, 100])
    with pytest.raises(WorkloadError):
        EmpiricalCDF.from_points([0, 10], [0, 100], packet_bytes=0)


def test_named_workloads_directory_and_environment(monkeypatch):
    monkeypatch.delenv("FLUIDCC_WORKLOADS", raising=False)
    with pytest.raises(WorkloadError, match="FLUIDCC_WORKLOADS"):
        named("websearch")
    monkeypatch.setenv("FLUIDCC_WORKLOADS", str(WORKLOADS))
    assert named("hadoop").mean_bytes == EmpiricalCDF.load(FILES["hadoop"]).mean_bytes
    with pytest.raises(WorkloadError, match="websearch"):
        named("cache")
    with pytest.raises(WorkloadError, match="FLUIDCC_WORKLOADS"):
        named("websearch", WORKLOADS / "nowhere")
    assert named("websearch", WORKLOADS, packet_bytes=1500).packet_bytes == 1500


# -------------------------------------------------------------------- parametric sizes
def test_pareto_rcp_paper_mean_is_the_rounded_mean():
    sizes = Pareto(1.2, 25)
    assert sizes.mean_packets == 25
    assert pareto_rounded_mean_by_sum(1.2, sizes.scale_packets) == pytest.approx(25, rel=1e-9)
    # without the correction (scale = mean (shape - 1) / shape) rounding up adds about half a packet
    naive = Pareto.from_scale(1.2, 25 * 0.2 / 1.2)
    assert naive.continuous_mean_packets == pytest.approx(25)
    assert naive.mean_packets == pytest.approx(pareto_rounded_mean_by_sum(1.2, 25 * 0.2 / 1.2), rel=1e-9)
    assert 25.3 < naive.mean_packets < 25.7


@settings(deadline=None)
@given(st.floats(1.05, 6.0), st.floats(1.01, 2000.0))
def test_pareto_scale_solves_the_rounded_mean(shape, mean):
    sizes = Pareto(shape, mean)
    assert sizes.scale_packets < mean * (shape - 1) / shape
    assert pareto_rounded_mean_by_sum(shape, sizes.scale_packets) == pytest.approx(mean, rel=1e-7)
    assert Pareto.from_scale(shape, sizes.scale_packets).mean_packets == pytest.approx(mean, rel=1e-10)


def test_pareto_tail_and_sample_mean():
    n = 1_000_000
    heavy = Pareto(1.2, 25)  # infinite variance: check the survival function, not the mean
    sample = heavy.sample(np.random.default_rng(3), n)
    assert sample.min() >= 1 and np.all(sample == np.floor(sample))
    for k in (5, 10, 100, 1000):
        p = (heavy.scale_packets / k) ** 1.2
        assert abs(np.mean(sample > k) - p) < Z * math.sqrt(p * (1 - p) / n)
    light = Pareto(3.0, 5.0)
    sample = light.sample(np.random.default_rng(4), n)
    assert abs(sample.mean() - light.mean_packets) < Z * sample.std() / math.sqrt(n)


def test_exponential_is_geometric_with_the_mean():
    n = 1_000_000
    sizes = Exponential(10.0)
    sample = sizes.sample(np.random.default_rng(5), n)
    q = 1 / 10.0
    assert abs(sample.mean() - 10.0) < Z * math.sqrt((1 - q) / q**2 / n)
    theta = sizes.continuous_mean_packets  # P(ceil X > k) = exp(-k / theta)
    for k in (1, 5, 20):
        p = math.exp(-k / theta)
        assert abs(np.mean(sample > k) - p) < Z * math.sqrt(p * (1 - p) / n)
    assert np.all(Exponential(1).sample(np.random.default_rng(0), 100) == 1)


def test_fixed_and_bad_parameters():
    assert np.all(Fixed(7).sample(np.random.default_rng(0), 5) == 7.0)
    assert Fixed(7).mean_packets == 7.0
    for make in (lambda: Fixed(0), lambda: Fixed(2.5), lambda: Pareto(1.0, 25), lambda: Pareto(1.2, 1),
                 lambda: Exponential(0.5), lambda: Pareto(float("nan"), 3), lambda: Pareto.from_scale(2, 0)):
        with pytest.raises(ParameterError):
            make()
    with pytest.raises(ParameterError, match="Generator"):
        Fixed(1).sample(1, 5)
    with pytest.raises(ParameterError):
        Fixed(1).sample(np.random.default_rng(0), -1)


@settings(deadline=None)
@given(st.sampled_from([Pareto(1.2, 25), Pareto(2.5, 3), Exponential(4), Fixed(3),
                        EmpiricalCDF.from_points([0, 999, 5000], [10, 50, 100])]),
       st.integers(0, 2**32 - 1), st.integers(0, 200))
def test_samples_are_whole_packets_and_deterministic(sizes, seed, n):
    first = sizes.sample(np.random.default_rng(seed), n)
    assert first.shape == (n,) and first.dtype == np.float64
    assert np.all(first >= 1) and np.all(first == np.floor(first))
    np.testing.assert_array_equal(first, sizes.sample(np.random.default_rng(seed), n))


# -------------------------------------------------------------------------- arrivals
def test_poisson_counts_and_gaps_match_the_rate():
    rate, duration = 2000.0, 50.0
    table = PoissonArrivals(rate, Fixed(1), start_s=3.0, duration_s=duration, seed=11).table()
    mean = rate * duration
    assert abs(len(table) - mean) < Z * math.sqrt(mean)
    assert np.all(np.diff(table.start_s) >= 0)
    assert table.start_s.min() >= 3.0 and table.start_s.max() < 3.0 + duration
    gaps = np.diff(table.start_s)
    assert abs(gaps.mean() - 1 / rate) < Z * (1 / rate) / math.sqrt(gaps.size)
    # counts in unit windows: mean rate, variance rate (Poisson)
    counts = np.histogram(table.start_s, bins=np.arange(3.0, 3.0 + duration + 0.5, 1.0))[0]
    assert abs(counts.mean() - rate) < Z * math.sqrt(rate / counts.size)
    assert abs(counts.var(ddof=1) / rate - 1) < Z * math.sqrt(2 / (counts.size - 1))
    assert np.all(np.isinf(table.stop_s)) and np.all(table.route == 0)


def test_poisson_arrivals_offer_the_load():
    capacity = 10_000.0
    sizes = Exponential(20)
    arrivals = PoissonArrivals.for_load(0.7, sizes, capacity, duration_s=200.0, seed=1, route=2)
    assert arrivals.rate_per_s == pytest.approx(0.7 * capacity / 20)
    assert arrivals.offered_load(capacity) == pytest.approx(0.7)
    table = arrivals.table()
    measured = table.size_packets.sum() / (capacity * 200.0)
    work_sd = math.sqrt(arrivals.mean_flows * (20**2 + 20 * 19)) / (capacity * 200.0)  # compound Poisson
    assert abs(measured - 0.7) < Z * work_sd
    assert np.all(table.route == 2)


def test_poisson_is_deterministic_for_a_seed():
    spec = dict(duration_s=2.0, start_s=0.0)
    one = PoissonArrivals(500, Pareto(1.2, 25), seed=9, **spec).table()
    two = PoissonArrivals(500, Pareto(1.2, 25), seed=9, **spec).table()
    other = PoissonArrivals(500, Pareto(1.2, 25), seed=10, **spec).table()
    for name in ("start_s", "size_packets", "stop_s", "route"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    assert len(one) != len(other) or not np.array_equal(one.start_s, other.start_s)


def test_poisson_bad_parameters():
    with pytest.raises(WorkloadError, match="rate_per_s"):
        PoissonArrivals(0, Fixed(1), duration_s=1, seed=0)
    with pytest.raises(WorkloadError, match="duration_s"):
        PoissonArrivals(1, Fixed(1), duration_s=math.inf, seed=0)
    with pytest.raises(WorkloadError, match="seed"):
        PoissonArrivals(1, Fixed(1), duration_s=1, seed=-1)
    with pytest.raises(WorkloadError, match="sizes"):
        PoissonArrivals(1, 25, duration_s=1, seed=0)


@settings(deadline=None)
@given(st.floats(1e-3, 0.999), st.floats(1.0, 1e5), st.floats(1e3, 1e9))
def test_arrival_rate_round_trips_with_offered_load(load, mean, capacity):
    for sizes in (mean, Fixed(math.ceil(mean))):
        rate = arrival_rate_for_load(load, sizes, capacity)
        assert offered_load(rate, sizes, capacity) == pytest.approx(load, rel=1e-12)


@pytest.mark.parametrize("load", [0.0, 1.0, 1.5, -0.1, math.nan])
def test_arrival_rate_needs_a_load_below_one(load):
    with pytest.raises(WorkloadError) as error:
        arrival_rate_for_load(load, Pareto(1.2, 25), 1000.0)
    assert error.value.field == "load"


def test_long_lived_flows():
    table = LongLived(3, start_s=[0.0, 1.0, 2.0], stop_s=10.0, route=1).table()
    assert len(table) == 3 and np.all(table.long_lived) and np.all(table.stop_s == 10.0)
    assert np.all(np.isinf(LongLived(2).table().stop_s))
    with pytest.raises(WorkloadError, match=r"stop_s\[2\]"):
        LongLived(3, start_s=[0.0, 1.0, 2.0], stop_s=[5.0, 5.0, 1.0])
    with pytest.raises(WorkloadError):
        LongLived(0)


# ------------------------------------------------------------------------ flow tables
def test_flow_table_operations():
    a = FlowTable([2.0, 0.5], [3, 1], route=[0, 1])
    b = LongLived(1, start_s=1.0).table()
    both = FlowTable.concat([a, b])
    assert len(both) == 3 and len(FlowTable.concat([])) == 0
    ordered = both.sorted_by_start()
    np.testing.assert_array_equal(ordered.start_s, [0.5, 1.0, 2.0])
    np.testing.assert_array_equal(ordered.size_packets, [1, np.inf, 3])
    np.testing.assert_array_equal(ordered.route, [1, 0, 0])
    frame = ordered.to_frame()
    assert list(frame.columns) == ["start_s", "size_packets", "stop_s", "route"] and len(frame) == 3
    assert ordered.route.dtype == np.int32 and ordered.size_packets.dtype == np.float64
    with pytest.raises(ValueError):
        a.start_s[0] = 1.0  # read-only


@pytest.mark.parametrize("kwargs, field", [
    (dict(start_s=[0.0, -1.0], size_packets=[1, 1]), "start_s[1]"),
    (dict(start_s=[0.0, math.nan], size_packets=[1, 1]), "start_s[1]"),
    (dict(start_s=[0.0, 1.0], size_packets=[1, 0]), "size_packets[1]"),
    (dict(start_s=[0.0, 1.0], size_packets=[1.5, 2]), "size_packets[0]"),
    (dict(start_s=[0.0, 1.0], size_packets=[1, 2], stop_s=[1.0, 1.0]), "stop_s[1]"),
    (dict(start_s=[0.0, 1.0], size_packets=[1, 2], route=[0, -1]), "route[1]"),
    (dict(start_s=[0.0, 1.0], size_packets=[1, 2, 3]), "size_packets"),
    (dict(start_s=[0.0, 1.0], size_packets=[1, 2], route=0.5), "route"),
])
def test_flow_table_validation(kwargs, field):
    with pytest.raises(WorkloadError) as error:
        FlowTable(**kwargs)
    assert error.value.field == field


# ------------------------------------------------------------------------------- traces
def _two_flows():
    from fluidcc.network import Flow, Link, Network

    return Network((Link("a", 1000.0, 0.01), Link("b", 500.0, 0.02)), (Flow("f", ("a", "b")), Flow("g", ("b",))))


def _one_flow():
    from fluidcc.network import Flow, Link, Network

    return Network((Link("l", 500.0, 0.01),), (Flow("f", ("l",)),))


def _trace(tmp_path, text: str, name: str = "flows.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_a_trace_round_trips_exactly(tmp_path):
    network = _two_flows()
    table = FlowTable([0.1 + 0.2, 0.0, 1 / 3, 7.5], [12, math.inf, 1, 2**40], stop_s=[math.inf, 4.0, 1e-3 + 1 / 3,
                                                                                    math.inf], route=[1, 0, 0, 1])
    path = write_trace(table, tmp_path / "t.csv", network)
    lines = path.read_text().splitlines()
    assert lines[0] == "start_s,size_packets,route,stop_s"
    assert lines[2] == "0.0,inf,f,4.0" and lines[4] == f"7.5,{2**40},g,inf"
    back = read_trace(path, network)
    for name in ("start_s", "size_packets", "stop_s", "route"):
        np.testing.assert_array_equal(getattr(back, name), getattr(table, name), err_msg=name)
    assert back.route.dtype == np.int32 and len(back) == 4


def test_a_trace_keeps_the_file_order_and_ignores_other_columns(tmp_path):
    # ns-3 style: a flow id and an fct column, columns in another order, unsorted starts, a blank line
    path = _trace(tmp_path, "flow_id,route,fct_s,size_packets,start_s\n"
                            "0,g,0.5,3,2.0\n\n"
                            "1,0,0.1,1,0.5\n"
                            "2, f ,nan,inf,1.25\n")
    table = read_trace(path, _two_flows())
    np.testing.assert_array_equal(table.start_s, [2.0, 0.5, 1.25])
    np.testing.assert_array_equal(table.size_packets, [3, 1, math.inf])
    np.testing.assert_array_equal(table.route, [1, 0, 0])
    assert np.all(np.isposinf(table.stop_s))  # no stop_s column: never stop
    np.testing.assert_array_equal(table.sorted_by_start().start_s, [0.5, 1.25, 2.0])


def test_a_trace_without_routes_needs_a_network_of_one_flow(tmp_path):
    path = _trace(tmp_path, "start_s,size_packets\n0,5\n0.5,6\n")
    table = read_trace(path, _one_flow())
    assert table.route.tolist() == [0, 0] and table.size_packets.tolist() == [5.0, 6.0]
    with pytest.raises(WorkloadError) as error:
        read_trace(path, _two_flows())
    message = str(error.value)
    for word in (str(path), "line 1", "'route'", "2 flows", "f, g"):
        assert word in message, (word, message)


def test_a_route_cell_is_a_flow_name_before_an_index(tmp_path):
    from fluidcc.network import Flow, Link, Network

    network = Network((Link("l", 500.0, 0.01),), (Flow("b", ("l",)), Flow("0", ("l",))))
    path = _trace(tmp_path, "start_s,size_packets,route\n0,1,0\n0,1,b\n0,1,1\n")
    assert read_trace(path, network).route.tolist() == [1, 0, 1]


BAD_TRACES = {
    # name: (text, words the message holds besides the file name); every row is numbered from the header
    "no start column": ("start,size_packets\n0,1\n", ["line 1", "start_s", "required"]),
    "no size column": ("start_s,size\n0,1\n", ["line 1", "size_packets", "required"]),
    "repeated column": ("start_s,size_packets,start_s\n0,1,2\n", ["line 1", "'start_s' is repeated"]),
    "non-numeric start": ("start_s,size_packets\n0,1\nsoon,2\n", ["line 3", "start_s", "'soon'", ">= 0"]),
    "negative start": ("start_s,size_packets\n-1,2\n", ["line 2", "start_s", "'-1'", ">= 0"]),
    "start nan": ("start_s,size_packets\nnan,2\n", ["line 2", "start_s", "'nan'"]),
    "start inf": ("start_s,size_packets\ninf,2\n", ["line 2", "start_s", "'inf'", "finite"]),
    "empty start": ("start_s,size_packets\n,2\n", ["line 2", "start_s", "''"]),
    "size 0": ("start_s,size_packets\n0,1\n0,1\n0,0\n", ["line 4", "size_packets", "'0'", ">= 1", "inf"]),
    "fractional size": ("start_s,size_packets\n0,2.5\n", ["line 2", "size_packets", "'2.5'", "whole"]),
    "size -inf": ("start_s,size_packets\n0,-inf\n", ["line 2", "size_packets", "'-inf'"]),
    "size not a number": ("start_s,size_packets\n0,12kB\n", ["line 2", "size_packets", "'12kB'"]),
    "stop before start": ("start_s,size_packets,stop_s\n0,1,inf\n2,1,1.5\n", ["line 3", "stop_s", "'1.5'", "after"]),
    "stop at start": ("start_s,size_packets,stop_s\n2,1,2\n", ["line 2", "stop_s", "'2'", "after"]),
    "row too short": ("start_s,size_packets,fct_s\n0,1,0.1\n0,1\n", ["line 3", "['0', '1']", "one cell per column"]),
    "row too long": ("start_s,size_packets\n0,1,5\n", ["line 2", "one cell per column", "not 3"]),
    "no flows": ("start_s,size_packets\n\n", ["no flows", "at least one flow"]),
    "empty file": ("", ["empty file", "header row"]),
}


@pytest.mark.parametrize("case", sorted(BAD_TRACES))
def test_bad_traces_name_the_file_line_column_and_value(case, tmp_path):
    text, words = BAD_TRACES[case]
    path = _trace(tmp_path, text, "bad trace.csv")
    with pytest.raises(WorkloadError) as error:
        read_trace(path, _one_flow())
    assert isinstance(error.value, ParameterError)
    message = str(error.value)
    for word in [str(path)] + words:
        assert word in message, (word, message)


@pytest.mark.parametrize("route, words", [
    ("h", ["line 3", "route", "'h'", "f, g", "0 to 1"]),
    ("2", ["line 3", "route", "'2'"]),
    ("-1", ["line 3", "route", "'-1'"]),
    ("1.0", ["line 3", "route", "'1.0'"]),
    ("", ["line 3", "route", "''"]),
])
def test_bad_trace_routes(route, words, tmp_path):
    path = _trace(tmp_path, f"start_s,size_packets,route\n0,1,f\n0,1,{route}\n")
    with pytest.raises(WorkloadError) as error:
        read_trace(path, _two_flows())
    for word in [str(path)] + words:
        assert word in str(error.value), (word, str(error.value))


def test_line_numbers_count_blank_lines_and_the_header(tmp_path):
    path = _trace(tmp_path, "start_s,size_packets\n\n0,1\n\n\n0,x\n")
    with pytest.raises(WorkloadError) as error:
        read_trace(path, _one_flow())
    assert error.value.field == f"{path}, line 6, size_packets" and error.value.value == "x"


def test_trace_file_and_writer_errors(tmp_path):
    with pytest.raises(WorkloadError, match="existing trace file"):
        read_trace(tmp_path / "none.csv", _one_flow())
    with pytest.raises(WorkloadError, match=r"route\[1\]"):
        write_trace(FlowTable([0.0, 1.0], [1, 1], route=[0, 1]), tmp_path / "t.csv", _one_flow())
    with pytest.raises(WorkloadError, match="table"):
        write_trace([0.0], tmp_path / "t.csv", _one_flow())
    path = write_trace(FlowTable([0.0], [1]), tmp_path / "t.csv", _one_flow())
    with pytest.raises(WorkloadError, match="network"):
        read_trace(path, None)


def test_a_replayed_trace_starts_and_sizes_its_flows_as_written(tmp_path):
    """The simulator starts each flow at the trace's start time (not moved to a slot) with the
    trace's size, on the flow's route."""
    from fluidcc.packet import simulate_exact
    from fluidcc.packet.exact_protocols import TCP

    path = _trace(tmp_path, "start_s,size_packets,fct_s\n"
                            "0.05,5,0.2\n0,3,0.1\n0.0123,inf,nan\n0.2,1,0.05\n0.0071,2,0.1\n")
    table = read_trace(path, _one_flow())
    # (a pool that holds the long flow's window from the start: the default grows to it and runs again)
    run = simulate_exact(_one_flow(), TCP(), table, duration_s=1.0, seeds=[1], pool_size=1024)
    assert int(run.status.values[0]) == 0
    np.testing.assert_array_equal(run["start"].values[0], [0.05, 0.0, 0.0123, 0.2, 0.0071])
    np.testing.assert_array_equal(run["size"].values[0], [5, 3, math.inf, 1, 2])
    assert run["route_index"].values[0].tolist() == [0] * 5
    finite = np.isfinite(table.size_packets)
    assert np.all(np.isfinite(run["fct"].values[0][finite]))  # the small flows finish in a second
    np.testing.assert_array_equal(run["received"].values[0][finite], table.size_packets[finite])
