"""`simulate`: one network, one protocol, flows, a batch of runs, as an xarray dataset."""

from __future__ import annotations

import hashlib
import json
import math
import time
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from .._version import stamp
from ..errors import ParameterError
from ..network import Network
from .engine import Flows, Layout, Timing, check_counts, check_slot, default_buffers, default_slot, simulate_slots
from .workloads import FlowTable


def network_flows(network: Network) -> FlowTable:
    """One long-lived flow per flow of the network, with its start and stop times."""
    return FlowTable(network.start_s, np.full(network.n_flows, np.inf), network.stop_s,
                     np.arange(network.n_flows, dtype=np.int32))


def _tables(network: Network, flows, n_runs: int) -> list[FlowTable]:
    if flows is None:
        flows = network_flows(network)
    tables = list(flows) if isinstance(flows, (list, tuple)) else [flows] * n_runs
    if len(tables) != n_runs:
        raise ParameterError("flows", f"{len(tables)} flow tables", f"one flow table, or one per seed ({n_runs})")
    for k, table in enumerate(tables):
        if not isinstance(table, FlowTable):
            raise ParameterError(f"flows[{k}]", type(table).__name__, "a fluidcc.packet.workloads.FlowTable")
        if len(table) == 0:
            raise ParameterError(f"flows[{k}]", "no flows", "at least one flow")
        bad = (table.route < 0) | (table.route >= network.n_flows)
        if np.any(bad):
            raise ParameterError(f"flows[{k}].route", int(table.route[np.argmax(bad)]),
                                 f"a route index in [0, {network.n_flows}) (the network's flows: "
                                 f"{', '.join(network.flow_names)})")
    return tables


def _padded(tables: list[FlowTable], timing: Timing) -> tuple[Flows, np.ndarray, np.ndarray]:
    """Stack the runs' flows, padding shorter tables with flows that never start."""
    width = max(len(t) for t in tables)
    start = np.full((len(tables), width), np.inf)
    stop = np.full((len(tables), width), np.inf)
    size = np.ones((len(tables), width))
    route = np.full((len(tables), width), -1, dtype=np.int32)  # -1: padding (routes checked apart)
    for k, t in enumerate(tables):
        n = len(t)
        start[k, :n] = np.ceil(t.start_s / timing.slot_s - 1e-9)
        stop[k, :n] = np.where(np.isfinite(t.stop_s), np.ceil(t.stop_s / timing.slot_s - 1e-9), np.inf)
        size[k, :n] = t.size_packets
        route[k, :n] = t.route
    return Flows(start=jnp.asarray(start), stop=jnp.asarray(stop), size=jnp.asarray(size)), route, start


def simulate(network: Network, protocol, flows: FlowTable | Sequence[FlowTable] | None = None, *,
             duration_s: float, slot_s: float | None = None, seeds=(0,), sample_s: float | None = None,
             buffers=None, groups: int = 1) -> xr.Dataset:
    """Simulate `protocol`'s sources (and routers) on `network`, one run per seed, vmapped.

    flows: a `FlowTable` for every run, or one per seed (runs with fewer flows are padded with
    flows that never start; every run's table must use the same routes for a given flow index, so
    give per-run tables whose flows differ only in number, times and sizes); default: one
    long-lived flow per network flow. slot_s: default one packet time at the fastest link.
    sample_s: spacing of the time series (default: about 1000 samples). buffers: per link,
    packets (default: as the network gives, else one BDP). groups: split a batch whose runs have
    different numbers of flows into up to this many groups of runs of consecutive flow counts,
    each padded only to its own widest run and compiled once: less work on padding flows, one
    compilation more per group. The groups are chosen so that the largest group's work (runs x
    widest run) is as small as can be; they run in turn, each spread along the devices. (Each
    group whole on a device of its own, all at once, was slower on a 2-core CPU:
    benchmarks/RESULTS.md, appendix, "Packet engine: TCP dumbbell against ns-3", 2026-11-23.)
    The dataset is the same shape either way (runs in the order of the seeds, flows padded to the
    largest run). A run's random draws (the links' turns; open-loop Poisson counts) depend on
    how many flows it is padded to, so a run in a group is the run of its seed padded to its
    group's width, not bit for bit the one-batch run.

    Returns a dataset over (run, flow) and (run, link) with the time series over (run, sample, link)
    and provenance: per flow packets sent, delivered to the receiver, dropped and in flight at the
    end (sent = delivered + dropped + in flight, exactly), received (in order, once: the
    receiver's cumulative ACK; delivered = received + stored + duplicates + discarded), duplicates, start, first send, finish (the receiver has every
    packet; NaN if not by the end) and last delivery times; per link packets accepted and
    dropped and the mean backlog; over time the backlog, packets served and active flows.
    """
    _exact_only(network)
    slot = default_slot(network) if slot_s is None else slot_s
    timing = check_slot(slot, duration_s)
    seeds = np.atleast_1d(np.asarray(seeds))
    if seeds.size == 0:
        raise ParameterError("seeds", [], "at least one seed")
    if seeds.dtype.kind not in "iu" or np.any(seeds < 0):
        raise ParameterError("seeds", seeds.tolist(), "whole numbers >= 0")
    if buffers is not None:
        buffers = np.broadcast_to(np.asarray(buffers, dtype=np.float64), (network.n_links,))
        if not np.all(np.isfinite(buffers) & (buffers >= 0)):
            raise ParameterError("buffers", buffers.tolist(), "packets >= 0 per link")
    tables = _tables(network, flows, seeds.size)
    if isinstance(groups, bool) or not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ParameterError("groups", groups, "a whole number >= 1 of groups of runs")
    every = max(1, int(round((sample_s if sample_s is not None else duration_s / 1000.0) / timing.slot_s)))
    every = min(every, timing.n_slots)
    widths = np.array([len(t) for t in tables])
    parts = _balanced_groups(widths, min(int(groups), seeds.size))
    if len(parts) == 1:
        return _simulate_batch(network, protocol, tables, tables, seeds, timing, every, buffers)
    _shared_routes(_padded(tables, timing)[1])  # the whole batch's tables agree, whatever the groups
    started = time.perf_counter()
    done = [_simulate_batch(network, protocol, [tables[k] for k in part], tables, seeds[part], timing, every,
                            buffers) for part in parts]
    wall = time.perf_counter() - started
    width = int(widths.max())
    whole = xr.concat([_padded_flows(d, width) for d in done], dim="run", combine_attrs="override")
    whole = whole.isel(run=np.argsort(np.concatenate(parts)))
    whole.attrs.update(wall_s=wall, groups=len(parts), calendar_slots=max(int(d.attrs["calendar_slots"]) for d in done))
    return whole


def _exact_only(network: Network) -> None:
    """The slot engine serves a fixed capacity per link and returns ACKs over a fixed delay: a
    network that asks for more is refused by name (`simulate_exact` follows it)."""
    for link in network.links:
        if link.schedule:
            raise ParameterError(f"link {link.name!r}: schedule", list(link.schedule),
                                 "no capacity schedule in `simulate` (slot engine); `simulate_exact` follows schedules")
    for i, flow in enumerate(network.flows):
        if network.reverse_route_indices(i) is not None:
            raise ParameterError(f"flow {flow.name!r}: reverse_route", network.reverse_route_indices(i),
                                 "ACKs over a fixed delay in `simulate` (slot engine: leave out reverse_route and the "
                                 "links' from/to); `simulate_exact` queues ACKs on reverse routes")


def _balanced_groups(widths: np.ndarray, groups: int) -> list[np.ndarray]:
    """Split runs (indices, by flow count) into at most `groups` groups of consecutive flow counts
    whose largest work -- runs x the group's widest run, what a padded batch costs -- is as small
    as can be: the smallest limit under which, from the widest run down, each group taking as many
    runs as the limit allows needs no more than `groups` groups."""
    order = np.argsort(-widths, kind="stable")  # widest first
    ordered = widths[order]

    def cut(limit):
        bounds, begin = [], 0
        while begin < ordered.size:
            take = max(1, int(limit // ordered[begin]))
            bounds.append((begin, min(begin + take, ordered.size)))
            begin = bounds[-1][1]
        return bounds

    low, high = int(ordered[0]), int(ordered[0]) * ordered.size  # one run per group .. one group
    while low < high:
        middle = (low + high) // 2
        low, high = (low, middle) if len(cut(middle)) <= groups else (middle + 1, high)
    return [order[a:b][::-1] for a, b in cut(low)][::-1]


def _simulate_batch(network, protocol, tables, all_tables, seeds, timing: Timing, every: int, buffers) -> xr.Dataset:
    """One compiled batch, spread along the devices: `tables` padded to the widest; `all_tables`
    (the whole batch's, of which these may be a group) go to the protocol, whose per-flow settings
    follow them."""
    arrays, route, start_slots = _padded(tables, timing)
    shared = _shared_routes(route)
    layout = Layout.build(network, np.maximum(shared, 0), timing.slot_s, buffers)
    check_counts(np.concatenate([layout.per_slot, layout.interface]), timing, float(np.max(layout.buffer)))
    params = protocol.params(network, layout, timing, all_tables)

    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds, dtype=jnp.uint32))
    keys, arrays, params, spread = _spread(keys, arrays, params, getattr(protocol, "batched_params", False))
    started = time.perf_counter()
    out = jax.device_get(_compiled(protocol, layout, timing, every)(keys, arrays, params))
    wall = time.perf_counter() - started
    if spread:
        out = jax.tree_util.tree_map(lambda a: a[: seeds.size], out)
    return _dataset(network, protocol, tables, layout, timing, seeds, every, start_slots, out, wall)


def _shared_routes(route: np.ndarray) -> np.ndarray:
    """Per flow index, the route its runs share (a padded flow, -1, takes that of a real one)."""
    shared = route.max(axis=0)
    if np.any((route >= 0) & (route != shared)):
        raise ParameterError("flows", "different routes for one flow index across runs",
                             "per-run flow tables whose k-th flows share a route")
    return shared


def _padded_flows(run: xr.Dataset, width: int) -> xr.Dataset:
    """`run` with flows added up to `width`, as padding flows come out of the engine: counts 0,
    times and sizes NaN, route index -1."""
    fill = {name: (-1 if name == "route_index" else np.nan if v.dtype.kind == "f" else 0)
            for name, v in run.data_vars.items() if "flow" in v.dims}
    return run.reindex(flow=np.arange(width), fill_value=fill)


def _spread(keys, arrays: Flows, params, batched: bool):
    """Lay a batch of runs along the JAX devices (one per CPU core, see `fluidcc._jax_setup`; the
    GPUs on a GPU machine): the runs are independent, so each device simulates its share at once
    and one compilation serves them all. A batch smaller than the number of devices stays on one;
    a batch that does not divide evenly is padded with copies of its last run (dropped again
    afterwards). Returns (keys, arrays, params, padded or spread)."""
    devices = jax.local_devices()
    runs = int(keys.shape[0])
    if len(devices) < 2 or runs < len(devices):
        return keys, arrays, params, False
    pad = -runs % len(devices)

    def grown(a):
        return jnp.concatenate([a, jnp.repeat(a[-1:], pad, axis=0)]) if pad else a

    mesh = jax.sharding.Mesh(np.array(devices), ("run",))
    along = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("run"))
    everywhere = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
    keys, arrays = jax.device_put(jax.tree_util.tree_map(grown, (keys, arrays)), along)
    params = (jax.device_put(jax.tree_util.tree_map(grown, params), along) if batched
              else jax.device_put(params, everywhere))
    return keys, arrays, params, True


_CACHE: dict = {}


def compile_key(protocol, static) -> tuple:
    """What a compiled simulation depends on besides shapes: the protocol's class and settings and
    every field of `static` (a frozen dataclass of NumPy arrays and numbers: a layout or a plan)."""
    digest = hashlib.sha256()
    for name in sorted(vars(static)):
        value = getattr(static, name)
        digest.update(name.encode() + (np.ascontiguousarray(value).tobytes() if isinstance(value, np.ndarray)
                                       else repr(value).encode()))
    return (type(protocol).__module__, type(protocol).__qualname__,
            json.dumps(getattr(protocol, "settings", lambda: {})(), sort_keys=True), digest.hexdigest())


def _compiled(protocol, layout: Layout, timing: Timing, every: int):
    """The jitted, vmapped simulation for this protocol, layout and timing (kept: JAX then reuses
    its compilation for every call with the same shapes)."""
    key = (*compile_key(protocol, layout), timing, every)
    if key not in _CACHE:
        if len(_CACHE) >= 32:
            _CACHE.pop(next(iter(_CACHE)))

        def one(seed_key, flows_k, params_k):
            return simulate_slots(protocol, layout, flows_k, timing, every, params_k, seed_key)

        batched = getattr(protocol, "batched_params", False)
        _CACHE[key] = jax.jit(jax.vmap(one, in_axes=(0, 0, 0 if batched else None)))
    return _CACHE[key]


def _dataset(network, protocol, tables, layout, timing, seeds, every, start_slots, out, wall) -> xr.Dataset:
    slot_s = timing.slot_s

    def seconds(slots):
        slots = np.asarray(slots, dtype=np.float64)
        return np.where(slots >= 0, slots * slot_s, np.nan)

    width = start_slots.shape[1]
    size = np.full((len(tables), width), np.nan)
    route = np.full((len(tables), width), -1, dtype=np.int32)
    for k, t in enumerate(tables):
        size[k, : len(t)] = t.size_packets
        route[k, : len(t)] = t.route
    finished = seconds(out["finished"])  # the last packet reached the receiver at that slot boundary
    start = np.where(np.isfinite(start_slots), start_slots * slot_s, np.nan)
    samples = out["samples"]
    n_samples = samples["queue_mean"].shape[1]
    accepted = np.diff(samples["link_accepted"], axis=1, prepend=0)
    served = accepted - np.diff(samples["queue_end"], axis=1, prepend=0)  # taken, less what still waits
    per = ("run", "flow")
    data = {
        "start": (per, start, {"units": "s", "long_name": "flow start (its SYN), on a slot boundary"}),
        "size": (per, size, {"units": "packets", "long_name": "flow size (inf: long-lived; NaN: padding)"}),
        "route_index": (per, route, {"long_name": "the network flow whose route it follows (-1: padding)"}),
        "sent": (per, out["sent"], {"units": "packets"}),
        "delivered": (per, out["delivered"], {"units": "packets", "long_name": "packets that reached the receiver"}),
        "received": (per, out["received"], {"units": "packets", "long_name": "in-order data at the receiver"}),
        "duplicates": (per, out["duplicates"], {"units": "packets", "long_name": "delivered again"}),
        "discarded": (per, out["discarded"], {"units": "packets",
                                              "long_name": "out of order beyond the receiver's runs, thrown away"}),
        "stored": (per, out["stored"], {"units": "packets", "long_name": "held out of order at the end"}),
        "dropped": (per, out["dropped"], {"units": "packets"}),
        "in_flight": (per, out["in_flight"], {"units": "packets", "long_name": "in the network at the end"}),
        "first_sent": (per, seconds(out["first_sent"]), {"units": "s"}),
        "last_delivered": (per, seconds(out["last_delivered"]), {"units": "s"}),
        "finish": (per, finished, {"units": "s", "long_name": "the receiver has every packet (NaN: not by the end)"}),
        "fct": (per, finished - start, {"units": "s", "long_name": "flow completion time, SYN to last packet"}),
        "link_accepted": (("run", "link"), out["link_accepted"],
                          {"units": "packets", "long_name": "packets the link took (served, or queued at the end)"}),
        "link_dropped": (("run", "link"), out["link_dropped"], {"units": "packets"}),
        "queue_mean": (("run", "link"), samples["queue_mean"].mean(axis=1),
                       {"units": "packets", "long_name": "mean backlog at slot boundaries"}),
        "queue": (("run", "sample", "link"), samples["queue_mean"],
                  {"units": "packets", "long_name": "mean backlog per sample"}),
        "accepted": (("run", "sample", "link"), accepted, {"units": "packets", "long_name": "taken in per sample"}),
        "served": (("run", "sample", "link"), served, {"units": "packets", "long_name": "sent on per sample"}),
        "active": (("run", "sample"), samples["active"], {"long_name": "flows started and not finished"}),
        "late": (("run",), out["late"], {"long_name": "batches the calendar could not hold (must be 0)"}),
    }
    if hasattr(protocol, "report"):
        for name, value in protocol.report(out["protocol"]).items():
            data[name] = (per, np.asarray(value), {"source": "protocol", "units": "events"})
    for name, value in samples.items():
        if name not in ("queue_mean", "queue_end", "link_accepted", "active"):
            data[name] = (("run", "sample", "link"), value, {"source": "router"})
    coords = {
        "seed": ("run", seeds), "flow": np.arange(width), "link": network.link_names,
        "sample_time": ("sample", (np.arange(n_samples) + 1) * every * slot_s, {"units": "s"}),
    }
    attrs = {
        "title": "fluidcc packet simulation", "protocol": getattr(protocol, "name", type(protocol).__name__),
        "protocol_settings": json.dumps(getattr(protocol, "settings", lambda: {})()),
        **stamp(jax_version=False),
        "slot_s": slot_s, "duration_s": timing.n_slots * slot_s, "calendar_slots": layout.horizon,
        "network": json.dumps(network.to_dict()), "wall_s": wall,
        "buffer_packets": json.dumps(layout.buffer.tolist()),
        "flow_names": json.dumps(network.flow_names),
    }
    return xr.Dataset(data, coords=coords, attrs=attrs)


def finished_fraction(run: xr.Dataset) -> float:
    """Fraction of the (non-padding) finite flows whose receiver had every packet by the end."""
    finite = np.isfinite(run["size"].values)
    return float(np.mean(np.isfinite(run["finish"].values[finite]))) if finite.any() else math.nan


__all__ = ["default_buffers", "network_flows", "simulate", "finished_fraction"]
