"""`simulate_exact`: one network, one protocol, flows, a batch of runs on the exact engine, as an
xarray dataset (per flow, per link, series over samples, and each run's status and message)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from .._jax_setup import compile_options
from .._version import stamp
from ..errors import ParameterError
from ..network import Network
from . import exact  # exact.fifo_links read through the module (tests replace it there)
from .exact import (STATUS, Flows, Plan, check_step, lanes_for, pool_size_for, receiver_runs_for, runs_per_lane,
                    sample_count, sample_places, simulate_events)
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


def _shared_routes(route: np.ndarray) -> np.ndarray:
    """Per flow index, the route its runs share (a padded flow, -1, takes that of a real one)."""
    shared = route.max(axis=0)
    if np.any((route >= 0) & (route != shared)):
        raise ParameterError("flows", "different routes for one flow index across runs",
                             "per-run flow tables whose k-th flows share a route")
    return shared


def compile_key(protocol, plan: Plan) -> tuple:
    """What a compiled simulation depends on besides shapes: the protocol's class (its
    `program_class` where it has one: a variant whose differences are all arguments runs its
    family's program) and the settings its program is built from (`compiled_settings`; the others
    are arguments) and the structure of
    `plan`: every field but `Plan.NUMBERS` (arguments: their shapes count) and `Plan.HOST_ONLY`."""
    digest = hashlib.sha256()
    for name in sorted(vars(plan)):
        value = getattr(plan, name)
        if name in Plan.HOST_ONLY:
            continue
        if name in Plan.NUMBERS:
            value = repr(np.shape(value))
        digest.update(name.encode() + (np.ascontiguousarray(value).tobytes() if isinstance(value, np.ndarray)
                                       else repr(value).encode()))
    family = getattr(protocol, "program_class", None) or type(protocol)
    return (family.__module__, family.__qualname__,
            json.dumps(protocol.compiled_settings(), sort_keys=True), digest.hexdigest())


def _check_positive(name: str, value, allowed: str) -> float:
    if isinstance(value, bool) or not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
        raise ParameterError(name, value, allowed)
    return float(value)


def simulate_exact(network: Network, protocol, flows: FlowTable | Sequence[FlowTable] | None = None, *,
                   duration_s: float, step_s: float | None = None, seeds=(0,), sample_s: float | None = None,
                   buffers=None, pool_size: int | None = None, receiver_runs: int | None = None,
                   lanes: int | None = None, batch: str = "auto", flow_series: bool = False) -> xr.Dataset:
    """Simulate `protocol` (a `fluidcc.packet.exact_protocols` protocol) on `network` with the exact
    engine, one run per seed, in one call (`batch`).

    flows: a `FlowTable` for every run or one per seed (default: one long-lived flow per network
    flow). step_s: the engine's step, at most the lookahead (default: the lookahead; no result
    depends on it). sample_s: spacing of the time series (default: duration / 1000). buffers: per
    link, packets (default: as the network gives, else one BDP). pool_size: packets and ACKs the
    run may hold at once (default: `pool_size_for`, grown x4 and the runs simulated again while a
    run fills it, up to `MAX_POOL_SIZE`; attribute `pool_size`: the size used). receiver_runs: runs
    of out-of-order data the receivers hold at once, in one store shared out among the lanes
    (`runs_per_lane` each: a flow holds at most its lane's share; ns-3 keeps any amount). By
    default the store starts at `receiver_runs_for` and, if a receiver had to discard data, the runs are simulated
    again with four times the store, up to `MAX_RUNS_PER_LANE` places per lane (attribute `receiver_runs`: the size
    used; `receiver_runs_peak` per run: the most held at once; `attempts`: the simulations made,
    `wall_s` is theirs together). Given, the store is that size.
    Data that would need one more run is counted in `discarded` and the sender must send it
    again; such a run differs from receivers that keep everything, and its status says so.
    lanes: the flows a run simulates at once (`fluidcc.packet.exact.simulate_events`: a flow
    holds a lane from its start until nothing of it is left; the cost of a step follows the
    lanes, not the flows of the run). By default `lanes_for` the flow tables, and the runs again
    with twice as many while a flow finds no lane (status 5), up to one lane per flow, where
    none can be short (attribute `lanes`: the number used; `lanes_peak` per run: the most in use
    at once). Given, that number: a run that needs more stops with status 5 and says how many
    flows found no lane (`flows_without_lane`). No result depends on it.
    batch: how the runs of a call are simulated: "vmap" (one vmapped program: on a GPU the runs go
    side by side), "threads" (one run at a time per thread, as many threads as the machine has
    cores: on a CPU a vmapped event loop costs each run as much as running it alone) or "auto"
    (default: "threads" on a CPU, "vmap" elsewhere). No result depends on it (attribute `batch`).
    flow_series: also give each flow's data packets that reached its receiver per sample
    (`delivered_series`, (run, sample, flow); duplicates included): its throughput over time. Off
    by default: it holds samples x flows numbers per run.

    Returns a dataset over (run, flow) and (run, link): per flow packets sent, delivered, dropped
    and in flight at the end (sent = delivered + dropped + in flight, exactly), received,
    duplicates, start, first send, finish and FCT (s, exact times; NaN if not by the end); per link
    packets arrived, accepted (data and ACKs) and dropped, busy time and mean queue (packets
    waiting, time-averaged exactly); over samples the mean queue, packets accepted and served
    (bytes / data packet size); per run `status` (0: ok) and `message`.
    """
    duration = _check_positive("duration", duration_s, "a simulated time > 0 s")
    if duration > exact.LATEST_S:
        raise ParameterError("duration", duration_s, f"at most {exact.LATEST_S:.0f} s (2^20 s: the engine's time grid "
                             "of 2^-32 s is exact below it)")
    seeds = np.atleast_1d(np.asarray(seeds))
    if seeds.size == 0 or seeds.dtype.kind not in "iu" or np.any(seeds < 0):
        raise ParameterError("seeds", seeds.tolist(), "one or more whole numbers >= 0")
    if buffers is not None:
        buffers = np.broadcast_to(np.asarray(buffers, dtype=np.float64), (network.n_links,))
        if not np.all(np.isfinite(buffers) & (buffers >= 0) & (buffers == np.floor(buffers))):
            raise ParameterError("buffers", buffers.tolist(), "whole packets >= 0 per link")
    tables = _tables(network, flows, seeds.size)
    width = max(len(t) for t in tables)
    start = np.full((seeds.size, width), np.inf)
    stop = np.full((seeds.size, width), np.inf)
    size = np.ones((seeds.size, width))
    route = np.full((seeds.size, width), -1, dtype=np.int32)
    for k, t in enumerate(tables):
        n = len(t)
        start[k, :n], stop[k, :n], size[k, :n], route[k, :n] = t.start_s, t.stop_s, t.size_packets, t.route
    shared = _shared_routes(route)
    plan = Plan.build(network, np.maximum(shared, 0), protocol.ack_bytes, buffers)
    step = check_step(plan, step_s)
    sample = duration / 1000.0 if sample_s is None else _check_positive("sample", sample_s, "a sample spacing > 0 s")
    if pool_size is not None and (isinstance(pool_size, bool) or not isinstance(pool_size, (int, np.integer))
                                  or pool_size < 2):
        raise ParameterError("pool_size", pool_size, "a whole number >= 2 of packets and ACKs held at once")
    grow_pool = pool_size is None
    grow_runs = receiver_runs is None
    if not grow_runs and (isinstance(receiver_runs, bool) or not isinstance(receiver_runs, (int, np.integer)) or receiver_runs < 1):
        raise ParameterError("receiver_runs", receiver_runs,
                             "a whole number >= 1 of out-of-order runs the receivers hold at once")
    if lanes is not None and (isinstance(lanes, bool) or not isinstance(lanes, (int, np.integer)) or lanes < 1):
        raise ParameterError("lanes", lanes, "a whole number >= 1 of flows a run simulates at once")
    if not isinstance(flow_series, bool):
        raise ParameterError("flow_series", flow_series, "true or false")
    if batch not in BATCH_MODES:
        raise ParameterError("batch", batch, f"one of {', '.join(BATCH_MODES)}")
    mode = ("threads" if jax.default_backend() == "cpu" else "vmap") if batch == "auto" else batch
    grow_lanes = lanes is None
    lane_count = (lanes_for(start, float(np.max(network.rtt_s)), width, duration) if grow_lanes
                  else int(min(lanes, width)))
    pool = pool_size_for(plan, lane_count) if grow_pool else int(pool_size)
    if grow_runs:
        receiver_runs = receiver_runs_for(plan, lane_count)
    params = protocol.params(network, plan, tables)
    numbers = jax.tree_util.tree_map(jnp.asarray, plan.numbers())
    arrays = Flows(start=jnp.asarray(start), stop=jnp.asarray(stop), size=jnp.asarray(size))
    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds, dtype=jnp.uint32))

    # the run's length and sample grid are arguments of the compiled program, not constants in it:
    # runs of one network of other lengths share a program (what it needs of them: `fifo_links`
    # at the end, and the places of its time series)
    samples = sample_count(duration, sample)
    timing = (jnp.asarray(step), jnp.asarray(duration), jnp.asarray(sample), jnp.asarray(samples, jnp.int32))
    shape = (exact.fifo_links(protocol, plan, duration), sample_places(samples))
    began = time.perf_counter()
    attempts = 0
    while True:
        attempts += 1
        if mode == "vmap" or seeds.size == 1:
            run = _compiled(protocol, plan, shape, pool, int(receiver_runs), lane_count, seeds.size, flow_series)
            out = jax.device_get(run(keys, arrays, params, timing, numbers))
        else:
            run = _compiled(protocol, plan, shape, pool, int(receiver_runs), lane_count, 1, flow_series)
            out = _each_run(run, keys, arrays, params, timing, numbers)
        # default stores grow (x4) until no run fills them; the runs again, from the start
        status = np.asarray(out["status"])
        if grow_pool and np.any(status == 1) and pool < MAX_POOL_SIZE:
            pool = min(4 * pool, MAX_POOL_SIZE)
        elif grow_runs and np.any(status == 4) and runs_per_lane(receiver_runs, lane_count) < MAX_RUNS_PER_LANE:
            receiver_runs = min(4 * int(receiver_runs), MAX_RUNS_PER_LANE * lane_count)
        elif grow_lanes and np.any(status == 5) and lane_count < width:
            share = runs_per_lane(receiver_runs, lane_count)
            lane_count = min(2 * lane_count, width)  # twice, not four times: each lane costs every iteration
            if grow_pool:
                pool = max(pool, pool_size_for(plan, lane_count))
            if grow_runs:  # each lane keeps the share it had (the store grows with the lanes)
                receiver_runs = max(share * lane_count, receiver_runs_for(plan, lane_count))
        else:
            break
    wall = time.perf_counter() - began
    dataset = _dataset(network, protocol, tables, plan, seeds, start, size, route, duration, step, sample, samples,
                       pool, int(receiver_runs), out, wall)
    dataset.attrs["lanes"] = lane_count
    dataset.attrs["batch"] = mode
    dataset.attrs["attempts"] = attempts
    return dataset


_CACHE: dict = {}

#: How `simulate_exact` simulates the runs of a call.
BATCH_MODES = ("auto", "vmap", "threads")


def _each_run(run, keys, arrays, params, timing, numbers) -> dict:
    """The compiled one-run program `run` on each run of the call, as many at once as the machine
    has cores (JAX releases the GIL while it computes); outputs stacked over the runs."""
    def one(k: int):
        take = lambda tree: jax.tree_util.tree_map(lambda a: a[k:k + 1], tree)  # noqa: E731
        return jax.device_get(run(take(keys), take(arrays), params, timing, numbers))

    workers = max(1, min(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1,
                         int(keys.shape[0])))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        outs = list(pool.map(one, range(int(keys.shape[0]))))
    return jax.tree_util.tree_map(lambda *parts: np.concatenate(parts), *outs)

#: The largest share of a lane in the store of out-of-order runs the default grows to (a run that
#: needs more has status 4).
MAX_RUNS_PER_LANE = 1 << 16
#: The largest packet pool the default grows to (a run that needs more has status 1).
MAX_POOL_SIZE = 1 << 22


def _forward_filled(values: np.ndarray) -> np.ndarray:
    """(run, sample, link) with each NaN replaced by the last value before it along the samples."""
    index = np.where(np.isnan(values), 0, np.arange(values.shape[1])[None, :, None])
    index = np.maximum.accumulate(index, axis=1)
    return np.take_along_axis(values, index, axis=1)


def _compiled(protocol, plan: Plan, shape: tuple, pool: int, receiver_runs: int, lanes: int, runs: int,
              flow_series: bool = False):
    """The jitted run for this protocol and plan, vmapped over the runs (kept, so that JAX reuses its
    compilation for every call of the same shapes; the parameters, the timing -- step, end,
    sample spacing and samples -- and the plan's numbers, `Plan.numbers`, are arguments: networks
    that differ only in capacities, delays and buffers share it). shape: (`fifo_links` at the
    run's end, the places of the time series, `sample_places`).
    One run is not vmapped: a vmapped loop whose condition differs between runs selects its whole
    state (the packet pool, the receivers' store) between old and new at every iteration, which
    costs one run as much as a batch of them."""
    fifo, room = shape
    key = (*compile_key(protocol, plan), fifo, room, pool, receiver_runs, lanes, runs == 1, flow_series)
    if key not in _CACHE:
        if len(_CACHE) >= 32:
            _CACHE.pop(next(iter(_CACHE)))

        def one(seed_key, flows_k, params, timing, numbers, batch_axis=None):
            step, end, sample, samples = timing
            return simulate_events(protocol, plan.with_numbers(numbers), flows_k, params, seed_key, step, end_s=end,
                                   sample_s=sample, samples=samples, sample_room=room, fifo=fifo, pool_size=pool,
                                   receiver_runs=receiver_runs, lanes=lanes, batch_axis=batch_axis,
                                   flow_series=flow_series)

        if runs == 1:
            def single(seed_keys, flows, params, timing, numbers):
                take = lambda tree: jax.tree_util.tree_map(lambda a: a[0], tree)  # noqa: E731
                out = one(take(seed_keys), take(flows), params, timing, numbers)
                return jax.tree_util.tree_map(lambda a: a[None], out)
            _CACHE[key] = jax.jit(single, compiler_options=compile_options())
        else:
            _CACHE[key] = jax.jit(jax.vmap(lambda k, f, p, s, n: one(k, f, p, s, n, batch_axis="runs"),
                                           in_axes=(0, 0, None, None, None), axis_name="runs"),
                                  compiler_options=compile_options())
    return _CACHE[key]


def _message(status: int, short: int) -> str:
    """A run's message: its status's, with the count of flows that found no lane for status 5."""
    if status == 5:
        return f"{short} flows found no free lane when they started and the run stopped there (raise lanes)"
    return STATUS[status]


def _dataset(network, protocol, tables, plan, seeds, start, size, route, duration, step, sample, samples, pool,
             receiver_runs, out, wall) -> xr.Dataset:
    per = ("run", "flow")
    padding = route < 0
    size = np.where(padding, np.nan, size)
    start = np.where(padding, np.nan, start)
    bins = {k: np.asarray(v)[:, :samples] for k, v in out["bins"].items()}  # the empty places and overflow dropped
    n_bins = bins["arrived"].shape[1]
    edges = np.minimum(np.arange(n_bins + 1) * sample, duration)

    def integral(t_index):
        """Packet-seconds of waiting up to each edge (exact: every wait begins and ends at an instant)."""
        n_in = np.concatenate([np.zeros_like(bins["wait_in_n"][:, :1]), np.cumsum(bins["wait_in_n"], axis=1)], axis=1)
        s_in = np.concatenate([np.zeros_like(bins["wait_in_n"][:, :1]), np.cumsum(bins["wait_in_sum"], axis=1)], axis=1)
        n_out = np.concatenate([np.zeros_like(bins["wait_in_n"][:, :1]), np.cumsum(bins["wait_out_n"], axis=1)], axis=1)
        s_out = np.concatenate([np.zeros_like(bins["wait_in_n"][:, :1]), np.cumsum(bins["wait_out_sum"], axis=1)],
                               axis=1)
        t = edges[None, :, None]
        return t * (n_in - n_out) - (s_in - s_out)

    waited = integral(None)
    width = np.diff(edges)[None, :, None]
    queue = np.diff(waited, axis=1) / width
    finish = np.asarray(out["finish"])
    status = np.asarray(out["status"])
    links = out["links"]
    data = {
        "start": (per, start, {"units": "s", "long_name": "flow start"}),
        "size": (per, size, {"units": "packets", "long_name": "flow size (inf: long-lived; NaN: padding)"}),
        "route_index": (per, route, {"long_name": "the network flow whose route it follows (-1: padding)"}),
        "sent": (per, out["sent"], {"units": "packets", "long_name": "data packets sent, retransmissions included"}),
        "delivered": (per, out["delivered"], {"units": "packets", "long_name": "data packets that reached the receiver"}),
        "received": (per, out["received"], {"units": "packets", "long_name": "in-order data at the receiver"}),
        "duplicates": (per, out["duplicates"], {"units": "packets", "long_name": "delivered again"}),
        "discarded": (per, out["discarded"], {"units": "packets", "long_name": "out-of-order data the receiver could not keep "
                                              "(its lane's share of the receivers' store, receiver_runs / lanes, was full)"}),
        "stored": (per, out["stored"], {"units": "packets", "long_name": "held out of order at the end"}),
        "dropped": (per, out["dropped"], {"units": "packets", "long_name": "data packets dropped"}),
        "control_dropped": (per, out["control_dropped"], {"units": "packets",
                                                           "long_name": "SYNs and ACKs of any kind dropped"}),
        "packets_sent": (per, out["packets_sent"], {"units": "packets",
                                                     "long_name": "data, SYNs and handshake ACKs sent"}),
        "acks_received": (per, out["acks_received"], {"units": "packets", "long_name": "ACKs and SYN-ACKs at the sender"}),
        "handshake_acks": (per, out["handshake_acks"], {"units": "packets",
                                                         "long_name": "handshake ACKs at the receiver (nothing answers them)"}),
        "held": (per, out["held"], {"units": "packets", "long_name": "packets and ACKs in the network at the end"}),
        "in_flight": (per, out["in_flight"], {"units": "packets", "long_name": "data in the network at the end"}),
        "first_sent": (per, out["first_sent"], {"units": "s"}),
        "last_delivered": (per, out["last_delivered"], {"units": "s"}),
        "finish": (per, finish, {"units": "s", "long_name": "the receiver has every packet (NaN: not by the end)"}),
        "fct": (per, finish - start, {"units": "s", "long_name": "flow completion time, start to last packet"}),
        "link_arrived": (("run", "link"), links["arrived"], {"units": "packets"}),
        "link_accepted": (("run", "link"), links["accepted"], {"units": "packets", "long_name": "data and ACKs"}),
        "link_data_accepted": (("run", "link"), links["data_accepted"], {"units": "packets"}),
        "link_dropped": (("run", "link"), links["dropped"], {"units": "packets"}),
        "busy": (("run", "link"), np.asarray(links["busy_s"]) / duration,
                 {"long_name": "fraction of the run the link was sending (service up to the end)"}),
        "queue_mean": (("run", "link"), waited[:, -1, :] / duration,
                       {"units": "packets", "long_name": "packets waiting (not in service), time average"}),
        "queue": (("run", "sample", "link"), queue, {"units": "packets", "long_name": "mean packets waiting per sample"}),
        "accepted": (("run", "sample", "link"), bins["accepted"], {"units": "packets"}),
        "drops": (("run", "sample", "link"), bins["dropped"], {"units": "packets", "long_name": "dropped per sample"}),
        "served": (("run", "sample", "link"), bins["served_bytes"] / plan.data_bytes,
                   {"units": "packets", "long_name": "bytes whose service began, in data packets"}),
        "receiver_runs_peak": (("run",), out["receiver_runs_peak"],
                               {"long_name": "most runs of out-of-order data the receivers held at once "
                                "(of receiver_runs)"}),
        "lanes_peak": (("run",), out["lanes_peak"], {"long_name": "most flows in a lane at once (of lanes)"}),
        "flows_without_lane": (("run",), out["flows_without_lane"],
                               {"long_name": "flows that found no free lane when they started (status 5)"}),
        **{f"work_{name}": (("run",), value, {"long_name": f"engine work: {name.replace('_', ' ')}"})
           for name, value in out["work"].items()},
        "status": (("run",), status, {"long_name": "0: ok; see message"}),
        "message": (("run",), np.array([_message(int(s), int(n)) for s, n in zip(status, out["flows_without_lane"])]),
                    {}),
    }
    if np.asarray(out["flow_delivered"]).shape[-1] > 0:
        data["delivered_series"] = (("run", "sample", "flow"), np.asarray(out["flow_delivered"])[:, :samples, :],
                                    {"units": "packets", "long_name": "data packets that reached the flow's receiver "
                                     "in each sample (duplicates included)"})
    for name, value in out["protocol"].items():
        data[name] = (per, np.asarray(value), {"source": "protocol", "units": "events"})
    for name, value in protocol.observe(out["router"], None).items():
        data[name] = (("run", "link"), np.asarray(value), {"source": "router", "long_name": "at the end of the run"})
    for name, value in out["observed"].items():
        data[f"{name}_series"] = (("run", "sample", "link"), _forward_filled(np.asarray(value)[:, :samples]),
                                  {"source": "router", "long_name": f"{name} after the last router update up to "
                                   "the end of each sample (NaN: no update yet)"})
    coords = {"seed": ("run", seeds), "flow": np.arange(start.shape[1]), "link": network.link_names,
              "sample_time": ("sample", edges[1:], {"units": "s"})}
    attrs = {"title": "fluidcc packet simulation (exact engine)", "protocol": protocol.name,
             "protocol_settings": json.dumps(getattr(protocol, "settings", lambda: {})()), **stamp(jax_version=False),
             "step_s": step, "lookahead_s": plan.lookahead_s, "duration_s": duration, "pool_size": pool,
             "receiver_runs": receiver_runs,
             "network": json.dumps(network.to_dict()), "wall_s": wall,
             "buffer_packets": json.dumps(plan.buffer.tolist()), "flow_names": json.dumps(network.flow_names)}
    return xr.Dataset(data, coords=coords, attrs=attrs)


__all__ = ["simulate_exact"]
