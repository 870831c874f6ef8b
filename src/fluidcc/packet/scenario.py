"""Packet-simulation scenarios: one TOML file = network + workload + protocol + duration + seeds.

`Scenario.load(path)` reads and checks a scenario file (`Scenario.from_dict` a mapping of the
same keys); `run_scenario` draws each run's flows and simulates every run in one batched call of
the exact engine, `fluidcc.packet.simulate_exact` (every packet, ACK and timer at its own time;
no result depends on its step); `write_outputs` writes the dataset, the per-flow table, the
summary and the figures. ``fluidcc packet SCENARIO.toml --out DIR`` does all three.

Units at the edges as everywhere in fluidcc (`fluidcc.units`): times are numbers of seconds or
strings with s, ms, us; rates are numbers of packets/s or strings with pps, bps, kbps, Mbps, Gbps
(converted with the network's ``packet_bytes``); sizes are packets.

File format (every key shown; `#` marks the defaults)::

    description = "RCP, Pareto flows at load 0.9"   # optional free text
    duration = "30s"          # simulated time (required)
    seeds = [1, 2, 3]         # one run per seed, batched; or seed = 1 (default: seed = 0)
    step = "10ms"             # the engine's step, at most the lookahead (default: the lookahead);
                              # no result depends on it (the old key `slot` is refused)
    sample = "30ms"           # time between samples of the time series (default: duration / 1000)
    pool_size = 4096          # packets and ACKs a run may hold at once (default: the links'
                              # buffers, what is on the wire and a window per flow,
                              # `fluidcc.packet.exact.pool_size_for`, grown while a run fills it)
    receiver_runs = 8192      # runs of out-of-order data the receivers hold at once, shared
                              # out among the lanes (default: per lane, the packets the links
                              # hold, `exact.receiver_runs_for`, grown while a lane fills its
                              # share); given, a run that needs more of either stops or
                              # discards data and says so in its status
    lanes = 256               # flows simulated at once (default: from the flows' starts,
                              # `exact.lanes_for`, grown while a flow finds none); given, a run
                              # that needs more stops with status 5

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

    # ... or a trace: the flows of a CSV flow table, flow for flow (the same for every seed):
    # kind = "trace"
    # file = "flows.csv"      # relative to this file, or absolute

    [protocol]                # name and settings; omitted settings take the protocol's defaults
    name = "rcp"              # "tcp" | "rcp" | "qcp" | "open_loop" (`fluidcc.packet.exact_protocols`)
    # tcp:       initial_window = 2 (segments), min_rto = "200ms", syn_timeout = "3s",
    #            receive_window = inf (segments; inf: no limit), limited_transmit = true
    # rcp:       alpha = 0.1, beta = 1, tau = "10ms", rtt_gain = 0.02, min_rto = "200ms"
    # qcp:       alpha = 1, beta = 1, interval = "100ms" (default: each link's mean RTT),
    #            variant = "exact" | "simplified", min_rto = "200ms",
    #            gain = 0.25 (how far a router's rate moves towards eq. (4)'s value per interval)
    # open_loop: kind = "poisson" | "constant", rate = "10Mbps" (or one rate per flow, a list)
    # (`fluidcc models` lists every protocol's settings with their defaults and units)

Flow sizes (``workload.sizes``, an inline table; `fluidcc.packet.workloads`):
``{ kind = "pareto", shape = 1.2, mean = 25 }`` (mean of the whole-packet sizes, > 1),
``{ kind = "exponential", mean = 25 }``, ``{ kind = "fixed", packets = 10 }``,
``{ kind = "cdf", file = "sizes.cdf" }`` (an empirical CDF in bytes, relative to this file) or
``{ kind = "cdf", name = "websearch" }`` ("websearch" or "hadoop", read from ``directory``,
relative to this file, else from the directory named by FLUIDCC_WORKLOADS).

Traces (``kind = "trace"``; `fluidcc.packet.workloads.read_trace` has the format): a CSV file
with a header row and one row per flow, columns ``start_s`` (s, >= 0) and ``size_packets`` (a
whole number >= 1, or ``inf``: long-lived), optionally ``route`` (a network flow's name or index;
without it, the network must have one flow) and ``stop_s`` (s, or ``inf``: never, the default);
other columns, such as ns-3's ``fct_s``, are ignored. The flows keep the file's order and their
exact times (the exact engine starts each at its start time, on its grid of 2^-32 s, not moved
to a slot); flows starting after
the duration never start. The file is read and checked when the scenario is
loaded. `Scenario.write_traces` (``fluidcc packet --trace``) writes each seed's flows in this
format, so any scenario's flows replay as a trace, in fluidcc or in ns-3.

The network's flows give the routes. Poisson arrivals follow one route and ignore that flow's
start and stop; long-lived flows with `count` ignore them too; a trace names each flow's route.
With several seeds every run draws its own arrivals (workload seed = run seed unless the workload
gives one) and the runs go to `simulate_exact` as one batch, one flow table per seed. A trace has
no random draw and no seed: every run replays the same flows, and the seeds change only the
simulation's own random draws (open-loop Poisson sources; the engine has no other).

Errors: bad input raises `fluidcc.errors.ParameterError` (or its `NetworkError`, `WorkloadError`
and `UnitError` subclasses) whose field is the key's dotted path (``workload.sizes.shape``,
``protocol.tau``, ``network: flow 'f': route``, ``workload.sizes: FILE, line 3``), with the value
and what is allowed; an unknown key names the key and the allowed ones. A step longer than the
network's lookahead is refused when the file is loaded, naming the hop that sets the lookahead.

The dataset `run_scenario` returns is `simulate_exact`'s (per run a ``status``, 0: ok, and its
``message``: a run whose packet pool or receivers' store was too small says so, and its numbers
are those up to where it stopped or with the data its receivers threw away; `write_outputs` and
``fluidcc packet`` report every such run), plus the flows' stop times (``stop``) and
the attributes ``scenario_toml`` (the scenario's text), ``scenario_file``, ``workload_kind``,
``workload_route`` (the route's flow name; for one long-lived flow per network flow, the first
flow; for a trace, the route most of its flows follow, the first such if tied),
``bottleneck_link`` and ``bottleneck_capacity_pps`` (the smallest capacity on that route),
``rtpd_s`` (its round-trip propagation delay), ``offered_load`` (the workload's load)
and ``arrival_window_s`` (both NaN for long-lived flows and traces), ``trace_file`` (the trace's
path; "" for other workloads) and ``packet_bytes``.
"""


from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ..errors import ParameterError
from ..network import Network
from . import workloads as wl
from ._schema import SIZE_KINDS, WORKLOAD_KINDS, parse, prefixed, protocol_names, read_file, toml_text


# ------------------------------------------------------------------------------- workload
@dataclass(frozen=True)
class WorkloadSpec:
    """The flows of a scenario, drawn per run by `table`.

    kind: "poisson", "long_lived" or "trace". route: index of the network flow whose route the flows
    follow (Poisson; long-lived with a count; for one long-lived flow per network flow, 0, and for a
    trace the route most of its flows follow: the route the scenario's reference numbers use).
    load: offered load in (0, 1) on the route's bottleneck (Poisson). sizes: a flow-size distribution (Poisson). arrivals_s: arrival window, s (Poisson).
    count: number of long-lived flows on `route` (None: one per network flow). start_spread_s:
    their starts are uniform in [0, start_spread_s) (0: all at 0). seed: the workload's own seed
    (None: each run's seed). file: the trace file (trace). trace: its flows, a `FlowTable` (trace;
    the same for every run).
    """

    kind: str
    route: int = 0
    load: float | None = None
    sizes: Any = None
    arrivals_s: float | None = None
    count: int | None = None
    start_spread_s: float = 0.0
    seed: int | None = None
    file: Path | None = None
    trace: wl.FlowTable | None = None

    def table(self, network: Network, run_seed: int) -> wl.FlowTable:
        """The flow table of the run with seed `run_seed` (a trace's for every seed)."""
        if self.kind == "trace":
            return self.trace
        seed = run_seed if self.seed is None else self.seed
        if self.kind == "poisson":
            capacity = bottleneck(network, self.route)[1]
            with prefixed("workload"):
                arrivals = wl.PoissonArrivals.for_load(self.load, self.sizes, capacity, duration_s=self.arrivals_s,
                                                       seed=int(seed), route=self.route)
                table = arrivals.table()
            if len(table) == 0:
                raise ParameterError("workload", f"no flow arrived in the run with seed {seed}",
                                     f"a load, arrival window and sizes that give flows (expected "
                                     f"{arrivals.mean_flows:.3g} flows)")
            return table
        with prefixed("workload"):
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

    duration_s, step_s, sample_s: seconds (step_s, sample_s None: `simulate_exact`'s defaults,
    the lookahead and duration / 1000); pool_size, receiver_runs: the engine's stores (None:
    `simulate_exact`'s defaults); lanes: flows simulated at once (None: the default); seeds: one run per seed; text: the scenario file's text; path:
    the file (None when built from a mapping). Its packet size is the network's (`packet_bytes`).
    """

    network: Network
    protocol: Any
    workload: WorkloadSpec
    duration_s: float
    seeds: tuple[int, ...] = (0,)
    step_s: float | None = None
    sample_s: float | None = None
    pool_size: int | None = None
    receiver_runs: int | None = None
    lanes: int | None = None
    text: str = ""
    path: Path | None = None

    # ----------------------------------------------------------------- construction
    @classmethod
    def load(cls, path: str | Path) -> "Scenario":
        """Read a scenario TOML file; relative paths in it are taken from the file's folder."""
        data, text = read_file(path)
        return cls.from_dict(data, Path(path).parent, text=text, path=path)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base_dir: str | Path = ".", *, text: str | None = None,
                  path: str | Path | None = None) -> "Scenario":
        """Build from a mapping with the keys of the file format; relative files from `base_dir`."""
        fields = parse(data, Path(base_dir))
        fields["workload"] = WorkloadSpec(**fields["workload"])
        return cls(**fields, text=text if text is not None else toml_text(data),
                   path=None if path is None else Path(path))

    # ----------------------------------------------------------------- derived numbers
    @property
    def packet_bytes(self) -> int:
        """The packet size (bytes) rates in the scenario and its network were written in."""
        return self.network.packet_bytes

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

    def attributes(self) -> dict[str, Any]:
        """The attributes a run's dataset carries of its scenario (module docstring)."""
        poisson = self.workload.kind == "poisson"
        return {"scenario_toml": self.text, "scenario_file": "" if self.path is None else str(self.path),
                "workload_kind": self.workload.kind, "workload_route": self.route_name,
                "bottleneck_link": self.bottleneck_link, "bottleneck_capacity_pps": self.bottleneck_capacity_pps,
                "rtpd_s": self.rtpd_s, "offered_load": self.offered_load,
                "arrival_window_s": float(self.workload.arrivals_s) if poisson else math.nan,
                "trace_file": "" if self.workload.file is None else str(self.workload.file),
                "packet_bytes": self.packet_bytes}

    def tables(self) -> list[wl.FlowTable]:
        """One flow table per seed (the same table for every run when nothing in it is random)."""
        if self.workload.kind == "trace" or (self.workload.kind == "long_lived" and self.workload.count is None):
            table = self.workload.table(self.network, self.seeds[0])
            return [table] * len(self.seeds)
        return [self.workload.table(self.network, seed) for seed in self.seeds]

    def write_traces(self, out_dir: str | Path) -> list[Path]:
        """Write each seed's flow table as a trace, ``trace_seed<SEED>.csv`` in `out_dir` (created),
        in the format `workloads.read_trace` reads and ``[workload] kind = "trace"`` replays:
        start_s, size_packets, route (the network flow's name), stop_s, one row per flow in the
        order the simulator numbers them, with the exact times drawn: a seed's trace, replayed
        with that seed, is the same run (the exact engine's random draws depend only on the seed,
        the flow and the packet). One file per distinct seed (a seed's flows are the same
        whenever it appears); returns the paths written.
        """
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        paths: dict[int, Path] = {}
        for seed, table in zip(self.seeds, self.tables()):
            if seed not in paths:
                paths[seed] = wl.write_trace(table, out / f"trace_seed{seed}.csv", self.network)
        return list(paths.values())


#: Fields of `simulate_exact`'s errors named otherwise in a scenario file (its step, sample,
#: duration, seeds, pool_size, receiver_runs and lanes have the file's names).
_SCENARIO_KEYS = {"rate": "protocol.rate"}


def run_scenario(scenario: Scenario, progress: Callable[[str], None] | None = None):
    """Simulate every run of `scenario` in one `simulate_exact` call; return its xarray dataset.

    progress: called with the name of each phase as it starts, "workload" (drawing the flow
    tables) then "simulate" (the batched simulation: one JAX call, no finer progress).
    The dataset is `simulate_exact`'s (with each run's ``status`` and ``message``) plus ``stop``
    (each flow's stop time, s; inf: never) and the scenario's attributes (module docstring).
    An error of the engine names the scenario key it comes from (``protocol.rate``, ``step``, ...).
    """
    from ._run_exact import simulate_exact

    report = progress if progress is not None else (lambda phase: None)
    report("workload")
    tables = scenario.tables()
    report("simulate")
    try:
        dataset = simulate_exact(scenario.network, scenario.protocol, tables, duration_s=scenario.duration_s,
                                 step_s=scenario.step_s, seeds=list(scenario.seeds), sample_s=scenario.sample_s,
                                 pool_size=scenario.pool_size, receiver_runs=scenario.receiver_runs,
                                 lanes=scenario.lanes)
    except ParameterError as error:
        if error.field in _SCENARIO_KEYS:
            raise type(error)(_SCENARIO_KEYS[error.field], error.value, error.allowed) from None
        raise
    stop = np.full((len(tables), dataset.sizes["flow"]), np.nan)
    for k, table in enumerate(tables):
        stop[k, : len(table)] = table.stop_s
    dataset["stop"] = (("run", "flow"), stop, {"units": "s", "long_name": "when the flow stops sending (inf: never)"})
    dataset.attrs.update(scenario.attributes())
    return dataset



# The report, under the names this module has always offered.
from .report import OUTPUT_FILES, Outputs, afct_figure, flow_frame, link_figure, summarize, write_outputs  # noqa: E402

__all__ = ["Scenario", "WorkloadSpec", "run_scenario", "write_outputs", "Outputs", "flow_frame", "summarize",
           "afct_figure", "link_figure", "bottleneck", "toml_text", "protocol_names", "WORKLOAD_KINDS", "SIZE_KINDS",
           "OUTPUT_FILES"]
