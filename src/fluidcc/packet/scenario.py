"""Packet-simulation scenarios: one TOML file = network + workload + protocol + duration + seeds.

`Scenario.load(path)` reads and checks a scenario file (`Scenario.from_dict` a mapping of the
same keys); `run_scenario` draws each run's flows and simulates every run in one batched
`fluidcc.packet.simulate` call; `write_outputs` writes the dataset, the per-flow table, the
summary and the figures. ``fluidcc packet SCENARIO.toml --out DIR`` does all three.

Units at the edges as everywhere in fluidcc (`fluidcc.units`): times are numbers of seconds or
strings with s, ms, us; rates are numbers of packets/s or strings with pps, bps, kbps, Mbps, Gbps
(converted with the network's ``packet_bytes``); sizes are packets.

File format (every key shown; `#` marks the defaults)::

    description = "RCP, Pareto flows at load 0.9"   # optional free text
    duration = "30s"          # simulated time (required)
    seeds = [1, 2, 3]         # one run per seed, batched; or seed = 1 (default: seed = 0)
    slot = "0.2ms"            # slot length (default: one packet time at the fastest link)
    sample = "30ms"           # time between samples of the time series (default: duration / 1000)

    [network]                 # a network file, relative to this file ...
    file = "../networks/parking_lot.toml"
    # ... or the network inline, with the keys of a network file (`fluidcc.network`):
    # packet_bytes = 1000
    # [[network.links]]
    # name = "l"; capacity = "40Mbps"; delay = "25ms"; buffer = 500
    # [[network.flows]]
    # name = "f"; route = ["l"]

    [workload]                # Poisson flow arrivals (RCP paper, section 3.1) ...
    kind = "poisson"
    load = 0.9                # offered load rho = lambda E[L] / C on the route's bottleneck, 0 < load < 1
    sizes = { kind = "pareto", shape = 1.2, mean = 25 }   # flow sizes, packets (see below)
    arrivals = "25s"          # flows arrive in [0, arrivals) (default: the duration)
    route = "f"               # the network flow whose route they follow (default: the first flow)
    seed = 7                  # seed of the arrivals (default: each run's seed, so each run draws its own)

    # ... or long-lived flows (the default when there is no [workload] table):
    # kind = "long_lived"     # alone: one flow per network flow, sending from its start to its stop
    # count = 50              # or: this many flows on `route`, starting uniformly in [0, start_spread)
    # start_spread = "1s"     # default 0 (all start at 0); drawn from `seed` (default: the run's seed)
    # route = "f"
    # seed = 3

    [protocol]                # name and settings; omitted settings take the protocol's defaults
    name = "rcp"              # "tcp" | "rcp" | "qcp" | "open_loop"
    # tcp:       initial_window = 2 (packets), min_rto = "200ms"
    # rcp:       alpha = 0.1, beta = 1, tau = "10ms", rtt_gain = 0.02, min_rto = "200ms"
    # qcp:       alpha = 1, beta = 1, interval = "100ms" (default: each link's mean RTT),
    #            variant = "exact" | "simplified", min_rto = "200ms"
    # open_loop: kind = "poisson" | "constant", rate = "10Mbps" (or one rate per flow, a list)

Flow sizes (``workload.sizes``, an inline table; `fluidcc.packet.workloads`):
``{ kind = "pareto", shape = 1.2, mean = 25 }`` (mean of the whole-packet sizes, > 1),
``{ kind = "exponential", mean = 25 }``, ``{ kind = "fixed", packets = 10 }``,
``{ kind = "cdf", file = "sizes.cdf" }`` (an empirical CDF in bytes, relative to this file) or
``{ kind = "cdf", name = "websearch" }`` ("websearch" or "hadoop", read from ``directory``,
relative to this file, else from the directory named by FLUIDCC_WORKLOADS).

The network's flows give the routes. Poisson arrivals follow one route and ignore that flow's
start and stop; long-lived flows with `count` ignore them too. With several seeds every run draws
its own arrivals (workload seed = run seed unless the workload gives one) and the runs go to
`simulate` as one batch, one flow table per seed.

Errors: bad input raises `fluidcc.errors.ParameterError` (or its `NetworkError`, `WorkloadError`
and `UnitError` subclasses) whose field is the key's dotted path (``workload.sizes.shape``,
``protocol.tau``, ``network: flow 'f': route``, ``workload.sizes: FILE, line 3``), with the value
and what is allowed; an unknown key names the key and the allowed ones.

The dataset `run_scenario` returns is `simulate`'s, plus the flows' stop times (``stop``) and
the attributes ``scenario_toml`` (the scenario's text), ``scenario_file``, ``workload_kind``,
``workload_route`` (the route's flow name; for one long-lived flow per network flow, the first
flow), ``bottleneck_link`` and ``bottleneck_capacity_pps`` (the smallest capacity on that
route), ``rtpd_s`` (its round-trip propagation delay), ``offered_load`` (the workload's load)
and ``arrival_window_s`` (both NaN for long-lived flows), and ``packet_bytes``.
"""

from __future__ import annotations

import json
import math
import numbers
import re
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import ParameterError
from ..network import Network, _toml_loads
from ..units import DEFAULT_PACKET_BYTES, parse_rate, parse_time
from . import workloads as wl

WORKLOAD_KINDS = ("poisson", "long_lived")
SIZE_KINDS = ("pareto", "exponential", "fixed", "cdf")

_TOP_KEYS = ("description", "duration", "seed", "seeds", "slot", "sample", "network", "workload", "protocol")
_NETWORK_KEYS = ("links", "flows", "packet_bytes", "name", "description")
_WORKLOAD_KEYS = {"poisson": ("kind", "load", "sizes", "arrivals", "route", "seed"),
                  "long_lived": ("kind", "count", "start_spread", "route", "seed")}
_SIZE_KEYS = {"pareto": ("kind", "shape", "mean"), "exponential": ("kind", "mean"), "fixed": ("kind", "packets"),
              "cdf": ("kind", "file", "name", "directory")}

#: Files `write_outputs` writes (afct.png only when there are flows of finite size).
OUTPUT_FILES = ("run.nc", "flows.csv", "summary.json", "afct.png", "link.png")


class _Missing:
    def __repr__(self) -> str:
        return "missing"


MISSING = _Missing()


# ------------------------------------------------------------------------------- workload
@dataclass(frozen=True)
class WorkloadSpec:
    """The flows of a scenario, drawn per run by `table`.

    kind: "poisson" or "long_lived". route: index of the network flow whose route the flows follow
    (Poisson; long-lived with a count; for one long-lived flow per network flow, 0: the route the
    scenario's reference numbers use). load: offered load in (0, 1) on the route's bottleneck
    (Poisson). sizes: a flow-size distribution (Poisson). arrivals_s: arrival window, s (Poisson).
    count: number of long-lived flows on `route` (None: one per network flow). start_spread_s:
    their starts are uniform in [0, start_spread_s) (0: all at 0). seed: the workload's own seed
    (None: each run's seed).
    """

    kind: str
    route: int = 0
    load: float | None = None
    sizes: Any = None
    arrivals_s: float | None = None
    count: int | None = None
    start_spread_s: float = 0.0
    seed: int | None = None

    def table(self, network: Network, run_seed: int) -> wl.FlowTable:
        """The flow table of the run with seed `run_seed`."""
        seed = run_seed if self.seed is None else self.seed
        if self.kind == "poisson":
            capacity = bottleneck(network, self.route)[1]
            with _prefixed("workload"):
                arrivals = wl.PoissonArrivals.for_load(self.load, self.sizes, capacity, duration_s=self.arrivals_s,
                                                       seed=int(seed), route=self.route)
                table = arrivals.table()
            if len(table) == 0:
                raise ParameterError("workload", f"no flow arrived in the run with seed {seed}",
                                     f"a load, arrival window and sizes that give flows (expected "
                                     f"{arrivals.mean_flows:.3g} flows)")
            return table
        with _prefixed("workload"):
            if self.count is None:
                return wl.FlowTable.concat(
                    wl.LongLived(1, start_s=flow.start_s, stop_s=flow.stop_s, route=i).table()
                    for i, flow in enumerate(network.flows))
            starts = np.random.default_rng(int(seed)).uniform(0.0, self.start_spread_s, self.count) \
                if self.start_spread_s > 0 else 0.0
            return wl.LongLived(self.count, start_s=starts, route=self.route).table()


def bottleneck(network: Network, flow: int) -> tuple[int, float]:
    """The link with the smallest capacity on a network flow's route (the first if tied) and its
    capacity, packets/s."""
    links = network.route_indices(flow)
    capacities = network.capacities_pps[links]
    k = int(np.argmin(capacities))
    return links[k], float(capacities[k])


# ------------------------------------------------------------------------------- scenario
@dataclass(frozen=True, eq=False)
class Scenario:
    """A packet simulation: network, workload, protocol, duration and seeds (module docstring).

    duration_s, slot_s, sample_s: seconds (slot_s, sample_s None: `simulate`'s defaults);
    seeds: one run per seed; packet_bytes: the network's packet size (bytes); text: the scenario
    file's text; path: the file (None when built from a mapping).
    """

    network: Network
    protocol: Any
    workload: WorkloadSpec
    duration_s: float
    seeds: tuple[int, ...] = (0,)
    slot_s: float | None = None
    sample_s: float | None = None
    packet_bytes: int = DEFAULT_PACKET_BYTES
    text: str = ""
    path: Path | None = None

    # ----------------------------------------------------------------- construction
    @classmethod
    def load(cls, path: str | Path) -> "Scenario":
        """Read a scenario TOML file; relative paths in it are taken from the file's folder."""
        path = Path(path)
        if not path.is_file():
            raise ParameterError("scenario file", str(path), "an existing scenario .toml file")
        text = path.read_text()
        try:
            data = _toml_loads(text)
        except ValueError as error:
            raise ParameterError("scenario file", str(path), f"valid TOML ({error})") from None
        return cls.from_dict(data, path.parent, text=text, path=path)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base_dir: str | Path = ".", *, text: str | None = None,
                  path: str | Path | None = None) -> "Scenario":
        """Build from a mapping with the keys of the file format; relative files from `base_dir`."""
        base = Path(base_dir)
        _keys(data, "", _TOP_KEYS, "the scenario file")
        if "duration" not in data:
            raise ParameterError("duration", MISSING, 'the simulated time, e.g. duration = "30s" (required)')
        duration = _time("duration", data["duration"])
        seeds = _seeds(data)
        slot = _time("slot", data["slot"]) if "slot" in data else None
        if slot is not None and slot > duration:
            raise ParameterError("slot", data["slot"], f"a slot length > 0 s, at most the duration ({duration:g} s)")
        sample = _time("sample", data["sample"]) if "sample" in data else None
        if sample is not None and sample > duration:
            raise ParameterError("sample", data["sample"], f"a time between samples > 0 s, at most the duration "
                                 f"({duration:g} s)")
        if not isinstance(data.get("description", ""), str):
            raise ParameterError("description", data["description"], "a string (free text)")
        if "network" not in data:
            raise ParameterError("network", MISSING, 'a [network] table: file = "net.toml", or the network inline '
                                 "([[network.links]], [[network.flows]]) (required)")
        network, packet_bytes = _network(data["network"], base)
        workload = _workload(data.get("workload", {"kind": "long_lived"}), network, packet_bytes, duration, base)
        if "protocol" not in data:
            raise ParameterError("protocol", MISSING, f'a [protocol] table with name = one of '
                                 f'{", ".join(protocol_names())} (required)')
        protocol = _protocol(data["protocol"], packet_bytes)
        return cls(network=network, protocol=protocol, workload=workload, duration_s=duration, seeds=seeds,
                   slot_s=slot, sample_s=sample, packet_bytes=packet_bytes,
                   text=text if text is not None else toml_text(data),
                   path=None if path is None else Path(path))

    # ----------------------------------------------------------------- derived numbers
    @property
    def route_name(self) -> str:
        """The name of the network flow whose route the workload follows (module docstring)."""
        return self.network.flow_names[self.workload.route]

    @property
    def bottleneck_link(self) -> str:
        return self.network.link_names[bottleneck(self.network, self.workload.route)[0]]

    @property
    def bottleneck_capacity_pps(self) -> float:
        """The smallest capacity on the workload's route, packets/s."""
        return bottleneck(self.network, self.workload.route)[1]

    @property
    def rtpd_s(self) -> float:
        """Round-trip propagation delay of the workload's route, s."""
        return float(self.network.rtt_s[self.workload.route])

    @property
    def offered_load(self) -> float:
        """The Poisson workload's load rho (NaN for long-lived flows)."""
        return float(self.workload.load) if self.workload.kind == "poisson" else math.nan

    def tables(self) -> list[wl.FlowTable]:
        """One flow table per seed (the same table for every run when nothing in it is random)."""
        if self.workload.kind == "long_lived" and self.workload.count is None:
            table = self.workload.table(self.network, self.seeds[0])
            return [table] * len(self.seeds)
        return [self.workload.table(self.network, seed) for seed in self.seeds]


def run_scenario(scenario: Scenario, progress: Callable[[str], None] | None = None):
    """Simulate every run of `scenario` in one `simulate` call; return its xarray dataset.

    progress: called with the name of each phase as it starts, "workload" (drawing the flow
    tables) then "simulate" (the batched simulation: one JAX call, no finer progress).
    The dataset is `simulate`'s plus ``stop`` (each flow's stop time, s; inf: never) and the
    scenario's attributes (module docstring).
    """
    from ._run import simulate

    report = progress if progress is not None else (lambda phase: None)
    report("workload")
    tables = scenario.tables()
    report("simulate")
    try:
        dataset = simulate(scenario.network, scenario.protocol, tables, duration_s=scenario.duration_s,
                           slot_s=scenario.slot_s, seeds=list(scenario.seeds), sample_s=scenario.sample_s)
    except ParameterError as error:
        if error.field == "rate":  # the open-loop rates, checked against the flows
            raise type(error)("protocol.rate", error.value, error.allowed) from None
        raise
    stop = np.full((len(tables), dataset.sizes["flow"]), np.nan)
    for k, table in enumerate(tables):
        stop[k, : len(table)] = table.stop_s
    dataset["stop"] = (("run", "flow"), stop, {"units": "s", "long_name": "when the flow stops sending (inf: never)"})
    dataset.attrs.update({
        "scenario_toml": scenario.text,
        "scenario_file": "" if scenario.path is None else str(scenario.path),
        "workload_kind": scenario.workload.kind,
        "workload_route": scenario.route_name,
        "bottleneck_link": scenario.bottleneck_link,
        "bottleneck_capacity_pps": scenario.bottleneck_capacity_pps,
        "rtpd_s": scenario.rtpd_s,
        "offered_load": scenario.offered_load,
        "arrival_window_s": _arrival_window(scenario),
        "packet_bytes": scenario.packet_bytes,
    })
    return dataset


# ------------------------------------------------------------------------------- outputs
def flow_frame(dataset):
    """One row per flow and run (padding left out), as a pandas DataFrame.

    Columns: run, seed, flow, route (the network flow's name), start_s, size_packets (inf:
    long-lived), fct_s (NaN: unfinished), sent, delivered, dropped, received, duplicates (packets),
    and for Poisson workloads slowdown (fct / processor-sharing fct, `metrics.slowdown`, with the
    dataset's offered_load, bottleneck_capacity_pps and rtpd_s).
    """
    import pandas as pd

    from . import metrics

    names = json.loads(dataset.attrs["flow_names"])
    route = dataset["route_index"].values
    real = route >= 0
    runs, flows = np.nonzero(real)
    frame = pd.DataFrame({
        "run": runs, "seed": dataset["seed"].values[runs], "flow": dataset["flow"].values[flows],
        "route": [names[i] for i in route[real]],
        "start_s": dataset["start"].values[real], "size_packets": dataset["size"].values[real],
        "fct_s": dataset["fct"].values[real],
    })
    for name in ("sent", "delivered", "dropped", "received", "duplicates"):
        frame[name] = dataset[name].values[real]
    reference = _reference(dataset)
    if reference is not None:
        size = frame["size_packets"].to_numpy()
        value = np.full(len(frame), np.nan)
        finite = np.isfinite(size)
        if finite.any():
            value[finite] = metrics.slowdown(frame["fct_s"].to_numpy()[finite], size[finite], *reference)
        frame["slowdown"] = value
    return frame


def summarize(dataset) -> dict:
    """Headline numbers per run and over the runs, as a JSON-ready dict (NaN becomes None).

    Per run: seed; flows (of finite size), finished, unfinished, long_lived; afct_s; per link
    utilization (packets the link sent on over the sampled time / (capacity x that time)),
    mean_queue_packets and link_drop_rate (dropped / offered at the link); drop_rate (the flows'
    dropped / sent); late_batches (must be 0); for long-lived flows mean_throughput_pps and
    jain_fairness (goodput: packets received in order, once, / time between start and stop or the end); for Poisson workloads
    mean_slowdown, sample_load (the sizes that arrived / (capacity x arrival window)) and
    afct_by_size (`metrics.afct_by_size` with the M/G/1-PS reference ps_afct_s, and
    sample_ps_afct_s: the mean `metrics.ps_fct_of` of the run's own arrivals over the same
    finished flows). "mean": the runs' numbers averaged; its afct_by_size pools the runs' flows.
    """
    from . import metrics

    reference = _reference(dataset)
    links = [str(name) for name in dataset["link"].values]
    capacities = np.array([link["capacity"] for link in json.loads(dataset.attrs["network"])["links"]])
    interval = float(dataset["sample_time"].values[0])
    sampled = interval * dataset.sizes["sample"]
    end = float(dataset.attrs["duration_s"])
    runs, pooled = [], {"size": [], "fct": [], "sample_ps": []}
    for r in range(dataset.sizes["run"]):
        real = dataset["route_index"].values[r] >= 0
        start, size = dataset["start"].values[r][real], dataset["size"].values[r][real]
        fct, received = dataset["fct"].values[r][real], dataset["received"].values[r][real].astype(float)
        stop = dataset["stop"].values[r][real] if "stop" in dataset else np.full(start.shape, np.inf)
        finite = np.isfinite(size)
        finished = finite & np.isfinite(fct)
        served = dataset["served"].values[r].sum(axis=0)
        accepted = dataset["link_accepted"].values[r].astype(float)
        link_dropped = dataset["link_dropped"].values[r].astype(float)
        sent = float(dataset["sent"].values[r][real].sum())
        row: dict[str, Any] = {
            "run": r, "seed": int(dataset["seed"].values[r]),
            "flows": int(finite.sum()), "finished": int(finished.sum()), "unfinished": int((finite & ~finished).sum()),
            "long_lived": int((~finite).sum()),
            "afct_s": float(np.mean(fct[finished])) if finished.any() else math.nan,
            "utilization": dict(zip(links, (served / (capacities * sampled)).tolist())),
            "mean_queue_packets": dict(zip(links, dataset["queue_mean"].values[r].tolist())),
            "link_drop_rate": dict(zip(links, np.divide(link_dropped, accepted + link_dropped,
                                                        out=np.zeros_like(accepted),
                                                        where=accepted + link_dropped > 0).tolist())),
            "drop_rate": float(dataset["dropped"].values[r][real].sum()) / sent if sent > 0 else 0.0,
            "late_batches": int(dataset["late"].values[r]),
        }
        if (~finite).any():
            until = np.minimum(np.where(np.isfinite(stop), stop, end), end)[~finite]
            with np.errstate(invalid="ignore", divide="ignore"):
                throughput = received[~finite] / (until - start[~finite])  # goodput: in order, once
            throughput = throughput[np.isfinite(throughput)]
            row["mean_throughput_pps"] = float(np.mean(throughput)) if throughput.size else math.nan
            row["jain_fairness"] = (float(metrics.jain_fairness(throughput))
                                    if throughput.size and np.any(throughput > 0) else math.nan)
        if reference is not None and finite.any():
            capacity, load, rtpd = reference
            row["mean_slowdown"] = metrics.summary(start[finite], start[finite] + fct[finite], size[finite],
                                                   received[finite], end_s=end, capacity_pps=capacity, load=load,
                                                   rtpd_s=rtpd)["mean_slowdown"]
            window = float(dataset.attrs.get("arrival_window_s", end))
            row["sample_load"] = float(size[finite].sum() / (capacity * window))
            sample_ps = np.where(finished[finite], metrics.ps_fct_of(start[finite], size[finite], capacity, rtpd),
                                 np.nan)
            row["afct_by_size"] = _bins(size[finite], fct[finite], sample_ps, reference)
            pooled["size"].append(size[finite])
            pooled["fct"].append(fct[finite])
            pooled["sample_ps"].append(sample_ps)
        runs.append(row)
    mean = _mean_of(runs)
    if pooled["size"]:
        mean["afct_by_size"] = _bins(*(np.concatenate(pooled[k]) for k in ("size", "fct", "sample_ps")), reference)
    attrs = dataset.attrs
    return _json_ready({
        "protocol": attrs.get("protocol"), "protocol_settings": json.loads(attrs.get("protocol_settings", "{}")),
        "workload_kind": attrs.get("workload_kind"), "workload_route": attrs.get("workload_route"),
        "bottleneck_link": attrs.get("bottleneck_link"),
        "bottleneck_capacity_pps": attrs.get("bottleneck_capacity_pps"), "offered_load": attrs.get("offered_load"),
        "rtpd_s": attrs.get("rtpd_s"), "duration_s": end, "slot_s": attrs.get("slot_s"),
        "sample_interval_s": interval, "seeds": [int(s) for s in dataset["seed"].values],
        "scenario_file": attrs.get("scenario_file"), "command": attrs.get("command"),
        "fluidcc_version": attrs.get("fluidcc_version"), "created": attrs.get("created"),
        "runs": runs, "mean": mean,
    })


def write_outputs(dataset, scenario: Scenario, out_dir: str | Path) -> list[Path]:
    """Write a `run_scenario` dataset to `out_dir` (created): run.nc (the dataset, NetCDF 3),
    flows.csv (`flow_frame`), summary.json (`summarize`), afct.png (AFCT against flow size with
    the processor-sharing references; only with flows of finite size) and link.png (utilization
    and queue of every link over time). Returns the paths written.

    The dataset's attributes are completed from `scenario` if it did not come from `run_scenario`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dataset = dataset.copy()
    defaults = {"scenario_toml": scenario.text, "scenario_file": "" if scenario.path is None else str(scenario.path),
                "workload_kind": scenario.workload.kind, "workload_route": scenario.route_name,
                "bottleneck_link": scenario.bottleneck_link,
                "bottleneck_capacity_pps": scenario.bottleneck_capacity_pps, "rtpd_s": scenario.rtpd_s,
                "offered_load": scenario.offered_load, "arrival_window_s": _arrival_window(scenario),
                "packet_bytes": scenario.packet_bytes}
    for key, value in defaults.items():
        dataset.attrs.setdefault(key, value)
    paths = []
    target = out / "run.nc"
    dataset.to_netcdf(target, engine="scipy")
    paths.append(target)
    target = out / "flows.csv"
    flow_frame(dataset).to_csv(target, index=False)
    paths.append(target)
    summary = summarize(dataset)
    target = out / "summary.json"
    target.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    paths.append(target)
    if np.any(np.isfinite(dataset["size"].values)):
        paths.append(afct_figure(dataset, summary, out / "afct.png"))
    paths.append(link_figure(dataset, out / "link.png"))
    return paths


# ------------------------------------------------------------------------------- figures
def afct_figure(dataset, summary: dict, path: str | Path) -> Path:
    """AFCT against flow size on log axes (the runs' flows pooled): each finished flow, the mean
    per power-of-two bin, the M/G/1 processor-sharing curve 1.5 RTPD + L / (C (1 - rho)) (RCP
    paper, eq. 3) and the processor sharing of the same arrivals (`metrics.ps_fct_of`)."""
    from matplotlib.figure import Figure

    from . import metrics

    size, fct = dataset["size"].values, dataset["fct"].values
    done = np.isfinite(size) & np.isfinite(fct)
    fig = Figure(figsize=(8, 5.5), constrained_layout=True)
    ax = fig.add_subplot()
    shown = np.flatnonzero(done.reshape(-1))
    if shown.size > 20_000:  # keep the file small: a fixed subsample of the flows
        shown = np.random.default_rng(0).choice(shown, 20_000, replace=False)
    ax.scatter(size.reshape(-1)[shown], fct.reshape(-1)[shown], s=3, color="0.6", alpha=0.35, lw=0,
               label="flows (finished)")
    bins = [row for row in summary["mean"].get("afct_by_size", []) if row["flows"] > 0]
    if bins:
        x = [row["mean_size_packets"] for row in bins]
        ax.plot(x, [row["afct_s"] for row in bins], "o-", color="C0", label=f"AFCT ({dataset.attrs['protocol']})")
        if all(row.get("sample_ps_afct_s") is not None for row in bins):
            ax.plot(x, [row["sample_ps_afct_s"] for row in bins], "s:", color="C2",
                    label="processor sharing of these arrivals")
    reference = _reference(dataset)
    if reference is not None and done.any():
        capacity, load, rtpd = reference
        grid = np.geomspace(1.0, max(2.0, float(np.nanmax(size[done]))), 200)
        ax.plot(grid, metrics.ps_fct(grid, capacity, load, rtpd), "--", color="k",
                label=f"processor sharing, M/G/1 (eq. 3): rho = {load:g}")
        ax.set_title(f"{dataset.attrs['protocol']}: load {load:g}, C = {capacity:g} packets/s, "
                     f"RTPD {1e3 * rtpd:g} ms, {dataset.sizes['run']} run(s)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("flow size [packets]")
    ax.set_ylabel("flow completion time [s]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120)
    return Path(path)


def link_figure(dataset, path: str | Path) -> Path:
    """Utilization and mean queue of every link over time, one line per run and link.

    The utilization of a sample is the dataset's ``served`` (the packets the link sent on in the
    sample) over capacity x sample interval.
    """
    from matplotlib.figure import Figure

    t = dataset["sample_time"].values
    interval = float(t[0])
    capacities = np.array([link["capacity"] for link in json.loads(dataset.attrs["network"])["links"]])
    served, queue = dataset["served"].values, dataset["queue"].values
    links = [str(name) for name in dataset["link"].values]
    n_runs = dataset.sizes["run"]
    fig = Figure(figsize=(9, 6.5), constrained_layout=True)
    axes = fig.subplots(2, 1, sharex=True)
    alpha = 1.0 if n_runs == 1 else max(0.25, 1.0 / math.sqrt(n_runs))
    for l, name in enumerate(links):
        colour = f"C{l % 10}"
        for r in range(n_runs):
            label = name if r == 0 else None
            axes[0].plot(t, served[r, :, l] / (capacities[l] * interval), color=colour, lw=0.8, alpha=alpha,
                         label=label)
            axes[1].plot(t, queue[r, :, l], color=colour, lw=0.8, alpha=alpha, label=label)
    axes[0].axhline(1.0, color="k", ls=":", lw=0.8)
    axes[0].set_ylabel("utilization\n[served / (capacity x sample)]")
    axes[1].set_ylabel("queue [packets]")
    axes[1].set_xlabel("time [s]")
    if len(links) <= 12:
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="link")
    runs = f", {n_runs} runs" if n_runs > 1 else ""
    axes[0].set_title(f"{dataset.attrs.get('protocol', '')}: links over time (samples of {1e3 * interval:g} ms{runs})")
    fig.savefig(path, dpi=120)
    return Path(path)


# ------------------------------------------------------------------------------- parsing
def _keys(data, where: str, allowed: Sequence[str], what: str) -> None:
    """Raise naming the first unknown key of table `where` and the allowed keys."""
    if not isinstance(data, Mapping):
        raise ParameterError(where or "scenario", data, f"a table of keys ({what})")
    unknown = sorted(set(data) - set(allowed))
    if unknown:
        key = unknown[0]
        raise ParameterError(f"{where}.{key}" if where else key, data[key],
                             f"no such key in {what}; allowed: {', '.join(allowed)}")


def _tagged(data, where: str, tag: str, keys_by_choice: Mapping[str, Sequence[str]], not_a_table: str,
            what: str) -> str:
    """Check a table whose key `tag` picks its kind (one of `keys_by_choice`), and that it has no
    other keys than that kind's; return the kind. `what` names the table in messages, formatted
    with the kind."""
    if not isinstance(data, Mapping):
        raise ParameterError(where, data, not_a_table)
    choice = data.get(tag, MISSING)
    if choice not in keys_by_choice:
        raise ParameterError(f"{where}.{tag}", choice, "one of " + ", ".join(f'"{k}"' for k in keys_by_choice))
    _keys(data, where, keys_by_choice[choice], what.format(choice))
    return choice


def _time(field: str, value, *, zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
        raise ParameterError(field, value, 'a time: seconds, or a string with s, ms or us, e.g. "30s" or "80ms"')
    seconds = parse_time(field, value)  # UnitError names the field
    if not (math.isfinite(seconds) and (seconds >= 0 if zero else seconds > 0)):
        raise ParameterError(field, value, f"a finite time {'>=' if zero else '>'} 0 s")
    return float(seconds)


def _number(field: str, value, ok: Callable[[float], bool], allowed: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or not ok(value):
        raise ParameterError(field, value, allowed)
    return float(value)


def _whole(field: str, value, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ParameterError(field, value, f"a whole number >= {minimum}")
    return int(value)


def _seeds(data) -> tuple[int, ...]:
    if "seed" in data and "seeds" in data:
        raise ParameterError("seeds", data["seeds"], "either seed = N or seeds = [N, ...], not both")
    if "seed" in data:
        return (_whole("seed", data["seed"], 0),)
    if "seeds" not in data:
        return (0,)
    seeds = data["seeds"]
    if not isinstance(seeds, list) or not seeds:
        raise ParameterError("seeds", seeds, "a non-empty list of whole numbers >= 0")
    return tuple(_whole(f"seeds[{k}]", s, 0) for k, s in enumerate(seeds))


@contextmanager
def _prefixed(prefix: str):
    """Re-raise a ParameterError of a fluidcc constructor with its field under `prefix`."""
    try:
        yield
    except ParameterError as error:
        if str(error.field).startswith(prefix):  # named in full already
            raise
        joint = ": " if any(c in text for text in (prefix, str(error.field)) for c in " ,") else "."
        raise type(error)(f"{prefix}{joint}{error.field}", error.value, error.allowed) from None


def _network(data, base: Path) -> tuple[Network, int]:
    if not isinstance(data, Mapping):
        raise ParameterError("network", data, 'a table: file = "net.toml", or the network inline')
    if "file" in data:
        others = sorted(set(data) - {"file"})
        if others:
            raise ParameterError(f"network.{others[0]}", data[others[0]],
                                 'either file = "net.toml" or the network inline, not both')
        if not isinstance(data["file"], str):
            raise ParameterError("network.file", data["file"], "a path to a .toml or .json network file")
        path = base / data["file"]
        if not path.is_file():
            raise ParameterError("network.file", data["file"], f"an existing .toml or .json network file, "
                                 f"relative to the scenario file (looked for {path})")
        where = f"network ({data['file']})"
        try:
            raw = json.loads(path.read_text()) if path.suffix.lower() == ".json" else _toml_loads(path.read_text())
        except ValueError:
            raw = None  # Network.load says what is wrong with the file
        packet_bytes = _packet_bytes(f"{where}: packet_bytes", raw)
        with _prefixed(where):
            network = Network.load(path)
        return network, packet_bytes
    _keys(data, "network", ("file",) + _NETWORK_KEYS, "[network] (file, or a network file's keys)")
    packet_bytes = _packet_bytes("network.packet_bytes", data)
    with _prefixed("network"):
        network = Network.from_dict(data)
    return network, packet_bytes


def _packet_bytes(field: str, data) -> int:
    if not isinstance(data, Mapping) or "packet_bytes" not in data:
        return DEFAULT_PACKET_BYTES
    return _whole(field, data["packet_bytes"], 1)


def _route(data, network: Network) -> int:
    if "route" not in data:
        return 0
    name = data["route"]
    if not isinstance(name, str) or name not in network.flow_names:
        raise ParameterError("workload.route", name, f"the name of a flow of the network, whose route the "
                             f"workload follows: {', '.join(network.flow_names)}")
    return network.flow_index(name)


def _workload(data, network: Network, packet_bytes: int, duration: float, base: Path) -> WorkloadSpec:
    kind = _tagged(data, "workload", "kind", _WORKLOAD_KEYS,
                   "a table with kind = " + " or ".join(f'"{k}"' for k in WORKLOAD_KINDS), '[workload] with kind = "{}"')
    seed = _whole("workload.seed", data["seed"], 0) if "seed" in data else None
    if kind == "long_lived":
        if "count" not in data:
            for key in ("route", "start_spread", "seed"):
                if key in data:
                    raise ParameterError(f"workload.{key}", data[key], "only with count = N (without a count, the "
                                         "flows are the network's own, with their routes and start times)")
            return WorkloadSpec("long_lived")
        count = _whole("workload.count", data["count"], 1)
        spread = _time("workload.start_spread", data["start_spread"], zero=True) if "start_spread" in data else 0.0
        if spread >= duration:
            raise ParameterError("workload.start_spread", data["start_spread"],
                                 f"a time >= 0 s shorter than the duration ({duration:g} s)")
        return WorkloadSpec("long_lived", route=_route(data, network), count=count, start_spread_s=spread, seed=seed)
    if "load" not in data:
        raise ParameterError("workload.load", MISSING, "the offered load rho in (0, 1), e.g. load = 0.9 (required)")
    load = _number("workload.load", data["load"], lambda x: 0 < x < 1,
                   "an offered load in (0, 1): rho = lambda E[L] / C on the route's bottleneck; the flow "
                   "completion times are compared with processor sharing, which has no steady state at load >= 1")
    if "sizes" not in data:
        raise ParameterError("workload.sizes", MISSING, 'the flow sizes, e.g. sizes = { kind = "pareto", shape = 1.2, '
                             "mean = 25 } (required)")
    sizes = _sizes(data["sizes"], packet_bytes, base)
    arrivals = _time("workload.arrivals", data["arrivals"]) if "arrivals" in data else duration
    if arrivals > duration:
        raise ParameterError("workload.arrivals", data["arrivals"],
                             f"an arrival window > 0 s, at most the duration ({duration:g} s)")
    return WorkloadSpec("poisson", route=_route(data, network), load=load, sizes=sizes, arrivals_s=arrivals, seed=seed)


def _sizes(data, packet_bytes: int, base: Path):
    where = "workload.sizes"
    kind = _tagged(data, where, "kind", _SIZE_KEYS, 'an inline table, e.g. { kind = "pareto", shape = 1.2, mean = 25 }',
                   'workload.sizes with kind = "{}"')
    for key in _SIZE_KEYS[kind]:
        if key not in data and key not in ("file", "name", "directory"):
            raise ParameterError(f"{where}.{key}", MISSING, f'required for kind = "{kind}" '
                                 f"(keys: {', '.join(_SIZE_KEYS[kind])})")
    if kind in ("pareto", "exponential", "fixed"):
        for key in _SIZE_KEYS[kind][1:]:
            if isinstance(data[key], bool) or not isinstance(data[key], numbers.Real):
                raise ParameterError(f"{where}.{key}", data[key], "a number")
        with _prefixed(where):
            if kind == "pareto":
                try:
                    return wl.Pareto(data["shape"], data["mean"])
                except ParameterError as error:
                    if error.field == "mean_packets":  # the TOML key is `mean`
                        raise type(error)("mean", error.value, error.allowed) from None
                    raise
            if kind == "exponential":
                try:
                    return wl.Exponential(data["mean"])
                except ParameterError as error:
                    raise type(error)("mean", error.value, error.allowed) from None
            return wl.Fixed(data["packets"])
    if ("file" in data) == ("name" in data):
        raise ParameterError(where, {k: v for k, v in data.items() if k != "kind"},
                             'kind = "cdf" with either file = "sizes.cdf" or name = "websearch"/"hadoop" (one of them)')
    if "file" in data:
        if "directory" in data:
            raise ParameterError(f"{where}.directory", data["directory"], 'only with name = "websearch"/"hadoop"')
        if not isinstance(data["file"], str):
            raise ParameterError(f"{where}.file", data["file"], "a path to a .cdf file")
        path = base / data["file"]
        if not path.is_file():
            raise ParameterError(f"{where}.file", data["file"], f"an existing flow-size CDF file, relative to the "
                                 f"scenario file (looked for {path})")
        with _prefixed(where):
            return wl.EmpiricalCDF.load(path, packet_bytes=packet_bytes)
    directory = data.get("directory")
    if directory is not None and not isinstance(directory, str):
        raise ParameterError(f"{where}.directory", directory, "a folder name")
    with _prefixed(where):
        return wl.named(data["name"], None if directory is None else base / directory, packet_bytes=packet_bytes)


def _protocol(data, packet_bytes: int):
    """The packet protocol a [protocol] table names (from the catalogue), set from its own fields."""
    from ..protocols import get_protocol
    from .protocols import setting_fields

    classes = {name: get_protocol(name).packet_class() for name in protocol_names()}
    fields_by_name = {name: setting_fields(cls) for name, cls in classes.items()}
    name = _tagged(data, "protocol", "name", {n: ("name", *(s.key for s in f)) for n, f in fields_by_name.items()},
                   "a table with name = " + " or ".join(f'"{p}"' for p in classes), '[protocol] with name = "{}"')
    settings: dict[str, Any] = {}
    for setting in fields_by_name[name]:
        if setting.key not in data:
            continue
        field, value = f"protocol.{setting.key}", data[setting.key]
        if setting.kind == "time":
            settings[setting.field] = _time(field, value)
        elif setting.kind == "rate":
            if isinstance(value, list) and not setting.per_flow:
                raise ParameterError(field, value, "one rate (packets/s, or a string with pps, bps, kbps, Mbps, Gbps)")
            settings[setting.field] = _rates(field, value, packet_bytes)
        elif setting.kind == "choice":
            settings[setting.field] = value
        else:
            settings[setting.field] = _number(field, value, lambda x: True, "a number")
    with _prefixed("protocol"):
        return classes[name](**settings)


def protocol_names() -> tuple[str, ...]:
    """The protocols a scenario may name: those of the catalogue with a packet-level class."""
    from ..protocols import names

    return names("packet")


def _rates(field: str, value, packet_bytes: int):
    """A rate, or a tuple of one rate per flow from a list, in packets/s."""
    def one(field, v):
        if isinstance(v, bool) or not isinstance(v, (numbers.Real, str)):
            raise ParameterError(field, v, 'a rate: packets/s, or a string with pps, bps, kbps, Mbps, Gbps')
        return parse_rate(field, v, packet_bytes)

    if isinstance(value, list):
        if not value:
            raise ParameterError(field, value, "a rate, or a non-empty list of one rate per flow")
        return tuple(one(f"{field}[{k}]", v) for k, v in enumerate(value))
    return one(field, value)


# ------------------------------------------------------------------------------- helpers
def _arrival_window(scenario: Scenario) -> float:
    return float(scenario.workload.arrivals_s) if scenario.workload.kind == "poisson" else math.nan


def _reference(dataset):
    """(capacity_pps, load, rtpd_s) of the processor-sharing comparison, or None."""
    attrs = dataset.attrs
    load = attrs.get("offered_load")
    if attrs.get("workload_kind") != "poisson" or load is None or not np.isfinite(load):
        return None
    return float(attrs["bottleneck_capacity_pps"]), float(load), float(attrs["rtpd_s"])




def _bins(size, fct, sample_ps, reference) -> list[dict]:
    from . import metrics

    capacity, load, rtpd = reference
    frame = metrics.afct_by_size(size, fct, capacity_pps=capacity, load=load, rtpd_s=rtpd)
    # the same bins (the sizes are the same); the sample's PS times of the finished flows
    frame["sample_ps_afct_s"] = metrics.afct_by_size(size, sample_ps)["afct_s"].to_numpy()
    frame = frame.astype({"flows": int, "unfinished": int, "enough": bool})
    return frame.to_dict(orient="records")


def _mean_of(runs: list[dict]) -> dict:
    mean: dict[str, Any] = {}
    for key, value in runs[0].items():
        if key in ("run", "seed", "afct_by_size"):
            continue
        if isinstance(value, dict):
            mean[key] = {k: float(np.nanmean([r[key][k] for r in runs])) if any(
                np.isfinite(r[key][k]) for r in runs) else math.nan for k in value}
        elif isinstance(value, numbers.Real):
            values = [float(r[key]) for r in runs if key in r]
            mean[key] = float(np.nanmean(values)) if any(np.isfinite(values)) else math.nan
    return mean


def _json_ready(value):
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    if isinstance(value, (numbers.Real, np.floating)):
        return float(value) if math.isfinite(value) else (None if math.isnan(value) else str(float(value)))
    return value


_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def toml_text(data: Mapping[str, Any]) -> str:
    """A TOML text of a scenario mapping (`Scenario.from_dict` keeps it as the scenario's text)."""

    def key(k) -> str:
        return k if _BARE_KEY.match(str(k)) else json.dumps(str(k))

    def value(v) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, str):
            return json.dumps(v)
        if isinstance(v, numbers.Integral):
            return str(int(v))
        if isinstance(v, numbers.Real):
            v = float(v)
            return ("inf" if v > 0 else "-inf") if math.isinf(v) else ("nan" if math.isnan(v) else repr(v))
        if isinstance(v, Mapping):
            return "{ " + ", ".join(f"{key(k)} = {value(x)}" for k, x in v.items()) + " }"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        return json.dumps(str(v))

    def table(d: Mapping[str, Any], prefix: str) -> list[str]:
        lines, later = [], []
        for k, v in d.items():
            name = prefix + key(k)
            if isinstance(v, Mapping) and prefix == "":
                later += ["", f"[{name}]"] + table(v, name + ".")
            elif isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
                for entry in v:
                    later += ["", f"[[{name}]]"] + [f"{key(a)} = {value(b)}" for a, b in entry.items()]
            else:
                lines.append(f"{key(k)} = {value(v)}")
        return lines + later

    return "\n".join(table(data, "")).strip() + "\n"


__all__ = ["Scenario", "WorkloadSpec", "run_scenario", "write_outputs", "flow_frame", "summarize", "afct_figure",
           "link_figure", "bottleneck", "toml_text", "protocol_names", "WORKLOAD_KINDS", "SIZE_KINDS", "OUTPUT_FILES"]
