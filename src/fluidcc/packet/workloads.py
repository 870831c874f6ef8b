"""Flow workloads for the packet simulator: flow-size distributions, arrival processes, flow tables.

Units are SI (`fluidcc.units`): seconds, packets (1000 bytes unless ``packet_bytes`` says
otherwise), packets per second. Every random function takes a seed or a
``numpy.random.Generator`` and is deterministic for it.

Flow sizes are whole packets >= 1. A size drawn in bytes (empirical CDFs) becomes
``max(1, ceil(bytes / packet_bytes))`` packets; a continuous size in packets (Pareto, exponential)
is rounded up, ``ceil(x)``. Every distribution's ``mean_packets`` is the exact mean of the whole
packet sizes it samples -- the E[L] of the offered load (RCP paper, section 3.1)::

    rho = lambda E[L] / C        (lambda: flows/s, E[L]: packets, C: packets/s)

Entry points
------------
* sizes: `Pareto`, `Exponential`, `Fixed`, `EmpiricalCDF` (``load``, ``from_points``) and
  `named` ("websearch", "hadoop");
* arrivals: `PoissonArrivals`, `LongLived` -- specifications whose ``table()`` is a `FlowTable`;
* traces: `read_trace` and `write_trace`, a `FlowTable` as a CSV file (measured traces, ns-3's flows);
* `arrival_rate_for_load` and `offered_load`: the relation above, both ways.
"""

from __future__ import annotations

import csv
import math
import numbers
import os
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Protocol, Sequence, runtime_checkable

import numpy as np
from scipy.optimize import brentq
from scipy.special import zeta

from ..errors import ParameterError, WorkloadError
from ..units import DEFAULT_PACKET_BYTES

if TYPE_CHECKING:
    from ..network import Network

#: Environment variable naming the directory of the named flow-size CDFs (`named`).
WORKLOADS_ENV = "FLUIDCC_WORKLOADS"

#: Named empirical workloads and their file names (see the README beside the files).
NAMED_WORKLOADS = {"websearch": "websearch_dctcp.cdf", "hadoop": "facebook_hadoop.cdf"}


# ------------------------------------------------------------------------------- flow sizes
@runtime_checkable
class FlowSizeDistribution(Protocol):
    """What the arrival processes need of a flow-size distribution.

    mean_packets: the exact mean of the sampled sizes, packets (float).
    sample(rng, n): n sizes, float64 array of whole packets >= 1 (float64 is the dtype of
    `FlowTable.size_packets`; it holds whole numbers exactly up to 2**53 packets).
    """

    @property
    def mean_packets(self) -> float: ...

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray: ...


@dataclass(frozen=True)
class Fixed:
    """Every flow has the same size, `packets` (a whole number >= 1)."""

    packets: float

    def __post_init__(self):
        _check(_is_whole(self.packets) and self.packets >= 1, "packets", self.packets,
               "a whole number of packets >= 1")

    @property
    def mean_packets(self) -> float:
        return float(self.packets)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        _check_rng(rng)
        return np.full(_check_n(n), float(self.packets))


@dataclass(frozen=True)
class Exponential:
    """An exponential size in packets rounded up, ``ceil(X)``: geometric on {1, 2, ...}.

    `mean_packets` (>= 1) is the mean of the rounded sizes. ``P(ceil X > k) = exp(-k / theta)``
    makes ceil X geometric with success probability 1 / mean_packets, so it is sampled exactly as
    such; the exponential's own mean ``theta = -1 / ln(1 - 1/mean_packets)`` is
    `continuous_mean_packets` (about mean_packets - 1/2).
    """

    mean_packets: float

    def __post_init__(self):
        _check(_finite(self.mean_packets) and self.mean_packets >= 1, "mean_packets", self.mean_packets,
               "a finite mean >= 1 packet")

    @property
    def continuous_mean_packets(self) -> float:
        return -1.0 / math.log1p(-1.0 / self.mean_packets) if self.mean_packets > 1 else 0.0

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        _check_rng(rng)
        return rng.geometric(1.0 / self.mean_packets, _check_n(n)).astype(np.float64)


@dataclass(frozen=True)
class Pareto:
    """A Pareto size in packets rounded up, ``ceil(X)``, ``P(X > x) = (scale / x)**shape`` for
    x >= scale (RCP paper, section 3: "pareto distributed with E[L] = 25 pkts, shape = 1.2").

    `mean_packets` (> 1) is the mean of the *rounded* sizes, the E[L] of the offered load. Rounding
    up adds about half a packet to the mean, so `scale_packets` is not the continuous
    ``mean (shape - 1) / shape`` but the root of::

        E[ceil X] = sum_{k >= 0} P(X > k) = m + scale**shape * zeta(shape, m),   m = max(1, ceil(scale))

    (zeta: Hurwitz). `continuous_mean_packets` = scale shape / (shape - 1) is the mean of X.
    To set the scale yourself (e.g. scale = mean (shape - 1)/shape, as a generator without rounding
    correction does), use `Pareto.from_scale`, whose `mean_packets` is then the rounded mean.
    Samples are ``ceil(scale * exp(E / shape))`` with E standard exponential (no truncated tail).
    """

    shape: float
    mean_packets: float
    scale_packets: float = field(init=False)

    def __post_init__(self):
        _check(_finite(self.shape) and self.shape > 1, "shape", self.shape,
               "a finite shape > 1 (the mean is infinite for shape <= 1)")
        _check(_finite(self.mean_packets) and self.mean_packets > 1, "mean_packets", self.mean_packets,
               "a finite mean > 1 packet (use Fixed(1) for one-packet flows)")
        upper = self.mean_packets * (self.shape - 1.0) / self.shape  # E[ceil X] > E[X] there
        scale = brentq(lambda s: _pareto_rounded_mean(self.shape, s) - self.mean_packets, 0.0, upper,
                       xtol=1e-15 * upper, rtol=4 * np.finfo(float).eps)
        object.__setattr__(self, "scale_packets", float(scale))

    @classmethod
    def from_scale(cls, shape: float, scale_packets: float) -> "Pareto":
        """The Pareto with this scale (packets, > 0); its `mean_packets` is the exact rounded mean."""
        _check(_finite(shape) and shape > 1, "shape", shape, "a finite shape > 1")
        _check(_finite(scale_packets) and scale_packets > 0, "scale_packets", scale_packets,
               "a finite scale > 0 packets")
        return cls(shape, _pareto_rounded_mean(shape, scale_packets))

    @property
    def continuous_mean_packets(self) -> float:
        return self.scale_packets * self.shape / (self.shape - 1.0)

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        _check_rng(rng)
        x = self.scale_packets * np.exp(rng.standard_exponential(_check_n(n)) / self.shape)
        return np.maximum(1.0, np.ceil(x))


def _pareto_rounded_mean(shape: float, scale: float) -> float:
    first = max(1.0, math.ceil(scale))
    return first + scale**shape * float(zeta(shape, first))


@dataclass(frozen=True)
class EmpiricalCDF:
    """An empirical flow-size CDF in bytes, linear between its points, sampled by inverse transform.

    sizes_bytes, percents: the points (bytes, cumulative percent 0-100), as given. A first percent
    p0 > 0 is an atom of mass p0/100 at the first size; equal consecutive sizes are an atom too.
    Sizes become packets as ``max(1, ceil(bytes / packet_bytes))``.

    mean_bytes: exact for the piecewise-linear CDF, p0 b0 + sum over segments of
    (mass x midpoint). mean_packets: exact mean of the packet sizes (not mean_bytes / packet_bytes):
    on a segment [a, b] the size X is uniform, and with s = packet_bytes
    ``E[ceil(X/s)] = sum_{j >= 0} P(X > j s)``, a finite sum in closed form (an arithmetic series).
    """

    sizes_bytes: tuple[float, ...]
    percents: tuple[float, ...]
    packet_bytes: float = DEFAULT_PACKET_BYTES
    source: str | None = None

    def __post_init__(self):
        try:
            object.__setattr__(self, "sizes_bytes", tuple(float(b) for b in self.sizes_bytes))
            object.__setattr__(self, "percents", tuple(float(p) for p in self.percents))
        except (TypeError, ValueError):
            raise WorkloadError("points", (self.sizes_bytes, self.percents), "sequences of numbers") from None
        _check(len(self.sizes_bytes) == len(self.percents), "percents", f"{len(self.percents)} values",
               f"one cumulative percent per size ({len(self.sizes_bytes)})")
        _check(_finite(self.packet_bytes) and self.packet_bytes > 0, "packet_bytes", self.packet_bytes,
               "a packet size > 0 bytes")
        where = [f"{self.source or 'points'}[{i}]" for i in range(len(self.sizes_bytes))]
        _validate_points(self.sizes_bytes, self.percents, where, self.source or "points")

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_points(cls, sizes_bytes: Sequence[float], percents: Sequence[float], *,
                    packet_bytes: float = DEFAULT_PACKET_BYTES, source: str | None = None) -> "EmpiricalCDF":
        """From points (bytes, cumulative percent 0-100); errors name the point by index."""
        return cls(tuple(sizes_bytes), tuple(percents), packet_bytes, source)

    @classmethod
    def load(cls, path: str | os.PathLike, packet_bytes: float = DEFAULT_PACKET_BYTES) -> "EmpiricalCDF":
        """Read a ``.cdf`` file: one point per line, ``<bytes> <cumulative percent 0-100>``.

        Blank lines and lines starting with ``#`` are skipped. Errors (`WorkloadError`) name the
        file and line: a line that is not two numbers, sizes or percents that decrease, a first
        percent < 0, a last percent other than 100, fewer than two points.
        """
        path = Path(path)
        if not path.is_file():
            raise WorkloadError("path", str(path), "an existing flow-size CDF file")
        sizes, percents, where = [], [], []
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            parts = text.split()
            try:
                if len(parts) != 2:
                    raise ValueError
                size, percent = float(parts[0]), float(parts[1])
            except ValueError:
                raise WorkloadError(f"{path}, line {number}", text,
                                    "two numbers: <flow size in bytes> <cumulative percent 0-100>") from None
            sizes.append(size)
            percents.append(percent)
            where.append(f"{path}, line {number}")
        _validate_points(sizes, percents, where, str(path))
        return cls(tuple(sizes), tuple(percents), packet_bytes, str(path))

    # ------------------------------------------------------------------ moments and samples
    @property
    def mean_bytes(self) -> float:
        b, p = np.array(self.sizes_bytes), np.array(self.percents) / 100.0
        return float(p[0] * b[0] + np.sum(np.diff(p) * (b[:-1] + b[1:]) / 2.0))

    @property
    def mean_packets(self) -> float:
        b, p = np.array(self.sizes_bytes), np.array(self.percents) / 100.0
        s = float(self.packet_bytes)
        segment = _to_packets(b[:-1], s)  # equal consecutive sizes: an atom
        wide = b[1:] > b[:-1]
        segment[wide] = _uniform_packets_mean(b[:-1][wide], b[1:][wide], s)
        return float(p[0] * _to_packets(b[0], s) + np.sum(np.diff(p) * segment))

    def quantile_bytes(self, u) -> np.ndarray:
        """The inverse CDF in bytes at probabilities u in [0, 1) (left-continuous at atoms)."""
        b, p = np.array(self.sizes_bytes), np.array(self.percents) / 100.0
        u = np.asarray(u, dtype=np.float64)
        i = np.clip(np.searchsorted(p, u, side="right") - 1, 0, len(p) - 2)  # last p[i] <= u
        gap = p[i + 1] - p[i]
        frac = np.clip((u - p[i]) / np.where(gap > 0, gap, 1.0), 0.0, 1.0)
        return np.where(u < p[0], b[0], b[i] + frac * (b[i + 1] - b[i]))

    def sample_bytes(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n flow sizes in bytes (float64)."""
        _check_rng(rng)
        return self.quantile_bytes(rng.random(_check_n(n)))

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:
        """n flow sizes in whole packets, max(1, ceil(bytes / packet_bytes)) (float64)."""
        return _to_packets(self.sample_bytes(rng, n), float(self.packet_bytes))


def _to_packets(size_bytes, packet_bytes: float):
    return np.maximum(1.0, np.ceil(np.asarray(size_bytes, dtype=np.float64) / packet_bytes))


def _uniform_packets_mean(a, b, s: float):
    """E[max(1, ceil(X/s))] for X uniform on [a, b], 0 <= a < b: sum_{j >= 0} P(X > j s).

    P(X > j s) = 1 for j s <= a (j < first = floor(a/s) + 1), (b - j s)/(b - a) for the n
    values first <= j < ceil(b/s), 0 beyond; summed in closed form. Every term is >= 0, so unlike
    an antiderivative of ceil there is no cancellation on narrow segments far from 0.
    """
    first = np.floor(a / s) + 1.0
    n = np.maximum(0.0, np.ceil(b / s) - first)
    last = first + n - 1.0
    return first + n * (b - s * (first + last) / 2.0) / (b - a)


def _validate_points(sizes, percents, where: list[str], source: str) -> None:
    if len(sizes) < 2:
        raise WorkloadError(source, f"{len(sizes)} point(s)", "at least two points (size, cumulative percent)")
    for i, (size, percent) in enumerate(zip(sizes, percents)):
        if not (_finite(size) and _finite(percent)):
            raise WorkloadError(where[i], (size, percent), "finite numbers")
        if i == 0:
            _check(size >= 0, where[i], size, "a first flow size >= 0 bytes", WorkloadError)
            _check(percent >= 0, where[i], percent, "a first cumulative percent >= 0", WorkloadError)
            continue
        _check(size >= sizes[i - 1], where[i], size,
               f"flow sizes that do not decrease (previous point: {sizes[i - 1]} bytes)", WorkloadError)
        _check(percent >= percents[i - 1], where[i], percent,
               f"cumulative percents that do not decrease (previous point: {percents[i - 1]})", WorkloadError)
    _check(percents[-1] == 100.0, where[-1], percents[-1], "a last cumulative percent of exactly 100", WorkloadError)


def named(name: str, directory: str | os.PathLike | None = None, *,
          packet_bytes: float = DEFAULT_PACKET_BYTES) -> EmpiricalCDF:
    """A named empirical workload: "websearch" (DCTCP web search) or "hadoop" (Facebook Hadoop).

    The files are not shipped with fluidcc: they are read from `directory`, or else from the
    directory named by the environment variable FLUIDCC_WORKLOADS.
    """
    if name not in NAMED_WORKLOADS:
        raise WorkloadError("name", name, f"a named workload among {', '.join(sorted(NAMED_WORKLOADS))}")
    if directory is None:
        directory = os.environ.get(WORKLOADS_ENV) or None
    if directory is None:
        raise WorkloadError("directory", None, f"a directory holding {NAMED_WORKLOADS[name]}: pass "
                            f"directory=... or set the environment variable {WORKLOADS_ENV}")
    path = Path(directory) / NAMED_WORKLOADS[name]
    if not path.is_file():
        raise WorkloadError("directory", str(directory), f"a directory holding {NAMED_WORKLOADS[name]} "
                            f"(given as directory=... or by {WORKLOADS_ENV})")
    return EmpiricalCDF.load(path, packet_bytes=packet_bytes)


# ------------------------------------------------------------------------------- flow table
@dataclass(frozen=True, eq=False)
class FlowTable:
    """The flows of a packet simulation, one entry per flow (F flows), read-only float64 arrays.

    start_s: start times, s, finite >= 0. size_packets: whole packets >= 1, or inf for a
    long-lived flow that never finishes by size (float64 so that inf fits). stop_s: when the flow
    stops sending, s, > start (inf: never; default). route: which route (flow class) of the
    network the flow uses, int32 >= 0 (default 0). `stop_s` and `route` may be scalars.
    """

    start_s: np.ndarray
    size_packets: np.ndarray
    stop_s: np.ndarray | float = math.inf
    route: np.ndarray | int = 0

    def __post_init__(self):
        start = _vector("start_s", self.start_s, np.float64)
        n = start.shape[0]
        size = _vector("size_packets", self.size_packets, np.float64, n)
        stop = _vector("stop_s", self.stop_s, np.float64, n)
        try:
            route_in = np.asarray(self.route)
            whole = route_in.dtype.kind in "iu" or (route_in.dtype.kind == "f" and np.all(np.isfinite(route_in))
                                                    and np.all(route_in == np.floor(route_in)))
            route_ok = bool(whole and np.all(np.abs(route_in) < 2**31))
        except (TypeError, ValueError):
            route_ok = False
        _check(route_ok, "route", self.route, "whole route indices >= 0", WorkloadError)
        route = _vector("route", route_in, np.int32, n)
        _first_bad("start_s", start, ~(np.isfinite(start) & (start >= 0)), "a finite start time >= 0 s")
        _first_bad("size_packets", size, ~((size >= 1) & ((size == np.floor(size)) | np.isposinf(size))),
                   "a whole number of packets >= 1, or inf for a long-lived flow")
        _first_bad("stop_s", stop, ~(stop > start), "a stop time after the flow's start (inf: never)")
        _first_bad("route", route, route < 0, "a route index >= 0")
        for name, array in (("start_s", start), ("size_packets", size), ("stop_s", stop), ("route", route)):
            array.flags.writeable = False
            object.__setattr__(self, name, array)

    def __len__(self) -> int:
        return int(self.start_s.shape[0])

    @property
    def long_lived(self) -> np.ndarray:
        """Which flows never finish by size (size inf), bool (F,)."""
        return np.isposinf(self.size_packets)

    @classmethod
    def empty(cls) -> "FlowTable":
        return cls(np.zeros(0), np.zeros(0))

    @classmethod
    def concat(cls, tables: Iterable["FlowTable"]) -> "FlowTable":
        """The flows of several tables, in the order given (not sorted)."""
        tables = list(tables)
        for i, table in enumerate(tables):
            _check(isinstance(table, FlowTable), f"tables[{i}]", table, "a FlowTable", WorkloadError)
        if not tables:
            return cls.empty()
        return cls(*(np.concatenate([getattr(t, name) for t in tables])
                     for name in ("start_s", "size_packets", "stop_s", "route")))

    def sorted_by_start(self) -> "FlowTable":
        """The same flows by increasing start time (stable: ties keep their order)."""
        order = np.argsort(self.start_s, kind="stable")
        return FlowTable(self.start_s[order], self.size_packets[order], self.stop_s[order], self.route[order])

    def to_frame(self):
        """A pandas DataFrame with columns start_s, size_packets, stop_s, route (one row per flow)."""
        import pandas as pd

        return pd.DataFrame({"start_s": self.start_s, "size_packets": self.size_packets,
                             "stop_s": self.stop_s, "route": self.route})


# ------------------------------------------------------------------------------- traces
#: The columns of a trace file: required, then optional (any other column is ignored).
TRACE_REQUIRED = ("start_s", "size_packets")
TRACE_OPTIONAL = ("route", "stop_s")


def read_trace(path: str | os.PathLike, network: "Network") -> FlowTable:
    """The flows of a trace: a CSV flow table (a measured trace, or ns-3's flows), one row a flow.

    The first row is the header; the columns may come in any order::

        start_s,size_packets,route,stop_s
        0.0,12,f,inf
        0.25,inf,g,3.5

    start_s: the flow's start, s, finite >= 0 (required). size_packets: its size, a whole
    number of packets >= 1, or ``inf`` for a long-lived flow that sends until it stops (required).
    route: the name of a flow of `network` whose route the flow follows, or that flow's index
    0..F-1 (a cell that is a flow's name is read as the name first); without the column every
    flow follows the network's only flow (an error if the network has several). stop_s: when
    the flow stops sending, s, after its start, or ``inf`` (never; default when the column is
    absent). Other columns (ns-3's ``fct_s``, a flow id, ...) are allowed and ignored; so are
    blank lines. Every row has one cell per column of the header, and every cell of a column
    read holds a value (no empty cells).

    The flows keep the file's order (flow k of the table is the k-th row), whether or not the
    starts are sorted: flow for flow comparisons (with ns-3) keep their flow numbers; use
    `FlowTable.sorted_by_start` for the flows by start time. The engine
    (`fluidcc.packet.simulate_exact`, which scenario files run) starts each flow at its start
    time. A trace holds no random draw: it is the same flows for every seed.

    Errors are `WorkloadError` (a `ParameterError`) naming the file and, for a row, its line
    (1-based, the header being line 1), the column and the value: a missing file, no header, a
    repeated or missing required column, a row with fewer cells than the header, a value that is
    not a number or out of range, an unknown route, and a table with no flows.
    `write_trace` writes this format.
    """
    path = Path(path)
    if not path.is_file():
        raise WorkloadError("path", str(path), "an existing trace file (CSV with a header row)")
    names = _flow_names(network)
    with path.open(newline="", encoding="utf-8-sig") as file:
        reader = csv.reader(file)
        header = next((row for row in reader if any(cell.strip() for cell in row)), None)
        if header is None:
            raise WorkloadError(str(path), "an empty file", "a CSV trace with a header row naming the columns "
                                f"{', '.join(TRACE_REQUIRED)} (required) and {', '.join(TRACE_OPTIONAL)} (optional)")
        head_line = reader.line_num
        header = [cell.strip() for cell in header]
        for column in TRACE_REQUIRED + TRACE_OPTIONAL:
            if header.count(column) > 1:
                raise WorkloadError(f"{path}, line {head_line} (header)", header,
                                    f"each column once (column {column!r} is repeated)")
        for column in TRACE_REQUIRED:
            if column not in header:
                raise WorkloadError(f"{path}, line {head_line} (header)", header,
                                    f"a header with the column {column!r} (required: {', '.join(TRACE_REQUIRED)}; "
                                    f"optional: {', '.join(TRACE_OPTIONAL)}; others are ignored)")
        if "route" not in header and len(names) != 1:
            raise WorkloadError(f"{path}, line {head_line} (header)", header,
                                f"a column 'route' (the network has {len(names)} flows: "
                                f"{', '.join(names)}; without the column, every flow follows the only one)")
        columns = {name: header.index(name) for name in TRACE_REQUIRED + TRACE_OPTIONAL if name in header}
        starts, sizes, stops, routes = [], [], [], []
        for row in reader:
            if not any(cell.strip() for cell in row):
                continue
            line = reader.line_num
            if len(row) != len(header):
                raise WorkloadError(f"{path}, line {line}", row,
                                    f"a row with one cell per column of the header ({len(header)}: "
                                    f"{', '.join(header)}), not {len(row)}")

            def cell(column):
                return row[columns[column]].strip()

            def where(column):
                return f"{path}, line {line}, {column}"

            start = _trace_number(where("start_s"), cell("start_s"), lambda x: math.isfinite(x) and x >= 0,
                                  "a start time: a finite number of seconds >= 0")
            size = _trace_number(where("size_packets"), cell("size_packets"),
                                 lambda x: x == math.inf or (math.isfinite(x) and x >= 1 and x.is_integer()),
                                 "a flow size: a whole number of packets >= 1, or inf for a long-lived flow")
            stop = math.inf
            if "stop_s" in columns:
                stop = _trace_number(where("stop_s"), cell("stop_s"), lambda x: x > start,
                                     f"a stop time: seconds after the flow's start ({start:g} s), or inf (never)")
            route = 0
            if "route" in columns:
                route = _trace_route(where("route"), cell("route"), names)
            starts.append(start)
            sizes.append(size)
            stops.append(stop)
            routes.append(route)
    if not starts:
        raise WorkloadError(str(path), "a header and no flows", "a trace with at least one flow (one row per flow "
                            "after the header)")
    return FlowTable(np.array(starts), np.array(sizes), np.array(stops), np.array(routes, dtype=np.int32))


def _flow_names(network) -> list[str]:
    names = getattr(network, "flow_names", None)
    _check(isinstance(names, list) and bool(names), "network", network,
           "a fluidcc.network.Network, whose flows give the routes")
    return list(names)


def _trace_number(where: str, text: str, ok, allowed: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise WorkloadError(where, text, allowed) from None
    if math.isnan(value) or not ok(value):
        raise WorkloadError(where, text, allowed)
    return value


def _trace_route(where: str, text: str, names: list[str]) -> int:
    if text in names:
        return names.index(text)
    if text.isascii() and text.isdigit() and int(text) < len(names):  # digits only: no sign, point, exponent
        return int(text)
    raise WorkloadError(where, text, f"a flow of the network, by name ({', '.join(names)}) "
                        f"or index (0 to {len(names) - 1})")


def write_trace(table: FlowTable, path: str | os.PathLike, network: "Network") -> Path:
    """Write `table` as a trace `read_trace` reads back into the same table, and return the path.

    Columns start_s, size_packets, route, stop_s (the route as the network flow's name; ``inf``
    for a long-lived size or a flow that never stops), one row per flow in the table's order;
    times are written with every digit (``repr``), so they read back exactly. The folder must
    exist. Raises `WorkloadError` if a route is not a flow of `network`.
    """
    _check(isinstance(table, FlowTable), "table", table, "a FlowTable")
    names = _flow_names(network)
    bad = table.route >= len(names)
    if np.any(bad):
        i = int(np.argmax(bad))
        raise WorkloadError(f"route[{i}]", int(table.route[i]),
                            f"a flow of the network by index, 0 to {len(names) - 1} ({', '.join(names)})")

    def number(x: float) -> str:
        return "inf" if x == math.inf else repr(float(x))

    path = Path(path)
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file, lineterminator="\n")
        writer.writerow(("start_s", "size_packets", "route", "stop_s"))
        for start, size, route, stop in zip(table.start_s.tolist(), table.size_packets.tolist(),
                                            table.route.tolist(), table.stop_s.tolist()):
            writer.writerow((number(start), "inf" if size == math.inf else str(int(size)), names[route],
                             number(stop)))
    return path


# ------------------------------------------------------------------------------- arrivals
@dataclass(frozen=True)
class PoissonArrivals:
    """Flows arriving as a Poisson process of rate `rate_per_s` (flows/s) in
    [start_s, start_s + duration_s), with sizes drawn from `sizes` (RCP paper, section 3.1).

    `table()` draws, from ``numpy.random.default_rng(seed)``: the number of arrivals (Poisson of
    mean rate x duration), their times (sorted uniforms on the interval: the Poisson process given
    its count), then their sizes. The flows never stop by time (stop_s = inf) and use `route`.
    """

    rate_per_s: float
    sizes: FlowSizeDistribution
    _: KW_ONLY
    duration_s: float
    seed: int
    start_s: float = 0.0
    route: int = 0

    def __post_init__(self):
        _check(_finite(self.rate_per_s) and self.rate_per_s > 0, "rate_per_s", self.rate_per_s,
               "a finite arrival rate > 0 flows/s")
        _check(isinstance(self.sizes, FlowSizeDistribution), "sizes", self.sizes,
               "a flow-size distribution (Pareto, Exponential, Fixed, EmpiricalCDF)")
        _check(_finite(self.duration_s) and self.duration_s > 0, "duration_s", self.duration_s,
               "a finite duration > 0 s")
        _check(_finite(self.start_s) and self.start_s >= 0, "start_s", self.start_s, "a finite start >= 0 s")
        _check_seed(self.seed)
        _check(_is_whole(self.route) and self.route >= 0, "route", self.route, "a route index >= 0")

    @classmethod
    def for_load(cls, load: float, sizes: FlowSizeDistribution, capacity_pps: float, *, duration_s: float,
                 seed: int, start_s: float = 0.0, route: int = 0) -> "PoissonArrivals":
        """The arrivals that offer `load` (in (0, 1)) to a link of `capacity_pps` packets/s."""
        return cls(arrival_rate_for_load(load, sizes, capacity_pps), sizes, duration_s=duration_s,
                   seed=seed, start_s=start_s, route=route)

    @property
    def mean_flows(self) -> float:
        """Expected number of flows, rate x duration."""
        return self.rate_per_s * self.duration_s

    def offered_load(self, capacity_pps: float) -> float:
        """rho = lambda E[L] / C on a link of `capacity_pps` packets/s."""
        return offered_load(self.rate_per_s, self.sizes, capacity_pps)

    def table(self) -> FlowTable:
        rng = np.random.default_rng(self.seed)
        count = int(rng.poisson(self.mean_flows))
        start = self.start_s + np.sort(rng.uniform(0.0, self.duration_s, count))
        return FlowTable(start, self.sizes.sample(rng, count), math.inf, self.route)


@dataclass(frozen=True)
class LongLived:
    """`n_flows` long-lived flows (size inf) sending from start_s until stop_s (s, scalars or one
    value per flow; stop inf: until the simulation ends), on `route`."""

    n_flows: int
    _: KW_ONLY
    start_s: float | Sequence[float] = 0.0
    stop_s: float | Sequence[float] = math.inf
    route: int = 0

    def __post_init__(self):
        _check(_is_whole(self.n_flows) and self.n_flows >= 1, "n_flows", self.n_flows, "a whole number >= 1")
        _check(_is_whole(self.route) and self.route >= 0, "route", self.route, "a route index >= 0")
        self.table()  # validates start and stop

    def table(self) -> FlowTable:
        n = int(self.n_flows)
        return FlowTable(_vector("start_s", self.start_s, np.float64, n), np.full(n, math.inf),
                         self.stop_s, self.route)


# ------------------------------------------------------------------------------- load
def arrival_rate_for_load(load: float, sizes: FlowSizeDistribution | float, capacity_pps: float) -> float:
    """The Poisson arrival rate (flows/s) that offers `load` to a link: lambda = rho C / E[L].

    load: rho in (0, 1). sizes: a distribution or its mean E[L] in packets (>= 1). capacity_pps:
    C, packets/s. Inverse of `offered_load` (RCP paper, section 3.1: rho = lambda E[L] / C).
    """
    _check(_finite(load) and 0 < load < 1, "load", load, "an offered load in (0, 1)")
    return float(load) * _capacity(capacity_pps) / _mean_size(sizes)


def offered_load(rate_per_s: float, sizes: FlowSizeDistribution | float, capacity_pps: float) -> float:
    """The offered load rho = lambda E[L] / C (dimensionless; > 1 means overload).

    rate_per_s: lambda, flows/s (>= 0). sizes: a distribution or E[L] in packets. capacity_pps: C.
    """
    _check(_finite(rate_per_s) and rate_per_s >= 0, "rate_per_s", rate_per_s, "a finite arrival rate >= 0 flows/s")
    return float(rate_per_s) * _mean_size(sizes) / _capacity(capacity_pps)


def _mean_size(sizes) -> float:
    if isinstance(sizes, FlowSizeDistribution):
        return float(sizes.mean_packets)
    _check(isinstance(sizes, numbers.Real) and not isinstance(sizes, bool) and _finite(sizes) and sizes >= 1,
           "sizes", sizes, "a flow-size distribution or a finite mean flow size >= 1 packet")
    return float(sizes)


def _capacity(capacity_pps) -> float:
    _check(_finite(capacity_pps) and capacity_pps > 0, "capacity_pps", capacity_pps,
           "a finite capacity > 0 packets/s")
    return float(capacity_pps)


# ------------------------------------------------------------------------------- helpers
def _check(ok: bool, name: str, value, allowed: str, error: type[ParameterError] = WorkloadError) -> None:
    if not ok:
        raise error(name, value, allowed)


def _finite(x) -> bool:
    try:
        return math.isfinite(x)
    except TypeError:
        return False


def _is_whole(x) -> bool:
    if isinstance(x, bool):
        return False
    if isinstance(x, numbers.Integral):
        return True
    return isinstance(x, numbers.Real) and _finite(x) and float(x).is_integer()


def _check_n(n) -> int:
    _check(_is_whole(n) and n >= 0, "n", n, "a whole number of samples >= 0", ParameterError)
    return int(n)


def _check_rng(rng) -> None:
    _check(isinstance(rng, np.random.Generator), "rng", rng,
           "a numpy.random.Generator (numpy.random.default_rng(seed))", ParameterError)


def _check_seed(seed) -> None:
    _check(isinstance(seed, numbers.Integral) and not isinstance(seed, bool) and seed >= 0, "seed", seed,
           "a whole number >= 0")


def _vector(name: str, value, dtype, n: int | None = None) -> np.ndarray:
    """A fresh 1-D array of `dtype`; a scalar is broadcast to length n."""
    try:
        array = np.asarray(value, dtype=dtype)
    except (TypeError, ValueError):
        raise WorkloadError(name, value, "numbers") from None
    if array.ndim == 0 and n is not None:
        return np.full(n, array, dtype=dtype)
    if array.ndim != 1 or (n is not None and array.shape[0] != n):
        expected = "one dimension" if n is None else f"a scalar or one value per flow ({n})"
        raise WorkloadError(name, f"shape {array.shape}", expected)
    return array.copy()


def _first_bad(name: str, array: np.ndarray, bad: np.ndarray, allowed: str) -> None:
    if np.any(bad):
        i = int(np.argmax(bad))
        raise WorkloadError(f"{name}[{i}]", array[i].item(), allowed)
