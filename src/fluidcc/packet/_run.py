"""`simulate`: one network, one protocol, a batch of seeds, as an xarray dataset."""

from __future__ import annotations

import datetime as _dt
import json
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from .._version import __version__
from ..errors import ParameterError
from ..network import Network
from .engine import Paths, check_slot, default_slot, simulate_slots


def default_pool_size(network: Network, paths: Paths, slot_s: float) -> int:
    """Room for every buffer twice over and every link's capacity over the largest RTT (a power of two)."""
    in_flight = float(np.sum(network.capacities_pps)) * float(np.max(network.rtt_s))
    size = 2.0 * float(np.sum(paths.buffer_packets)) + 2.0 * in_flight + 64.0
    return 1 << int(math.ceil(math.log2(size)))


def simulate(network: Network, protocol, params, *, duration_s: float, slot_s: float | None = None,
             seeds=(0,), pool_size: int | None = None, sample_s: float | None = None,
             flow_route=None) -> xr.Dataset:
    """Simulate `protocol` (with its `params`, built for this slot) on `network` for each seed.

    flow_route: the route (a flow of `network`) each simulated flow follows; default: one flow per
    network flow. slot_s: default one packet time at the fastest link. sample_s: spacing of the
    queue samples (default: about 1000 samples). pool_size: most packets in the network at once
    (default `default_pool_size`); `pool_overflow` counts packets the sources could not send.

    Returns a dataset over (seed, flow) and (seed, link), and queue samples over (seed, sample,
    link): packets sent, delivered, dropped and in flight at the end per flow (sent = delivered +
    dropped + in flight, exactly), first send and last delivery times, per link packets accepted and dropped,
    mean queue (packets waiting or in service at slot boundaries).
    """
    slot = default_slot(network) if slot_s is None else slot_s
    timing = check_slot(slot, duration_s)
    paths = Paths.build(network, timing.slot_s)
    routes = np.arange(network.n_flows) if flow_route is None else np.asarray(flow_route)
    if routes.ndim != 1 or routes.size == 0 or np.any((routes < 0) | (routes >= network.n_flows)):
        raise ParameterError("flow_route", routes, f"route indices in [0, {network.n_flows})")
    pool = default_pool_size(network, paths, timing.slot_s) if pool_size is None else int(pool_size)
    if pool < 1:
        raise ParameterError("pool_size", pool_size, "a whole number >= 1")
    seeds = np.atleast_1d(np.asarray(seeds))
    if seeds.size == 0:
        raise ParameterError("seeds", [], "at least one seed")
    every = max(1, int(round((sample_s if sample_s is not None else duration_s / 1000.0) / timing.slot_s)))
    every = min(every, timing.n_slots)

    def one(key):
        return simulate_slots(protocol, paths, jnp.asarray(routes, dtype=jnp.int32), timing, pool, every, params, key)

    keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds, dtype=jnp.uint32))
    started = time.perf_counter()
    out = jax.device_get(jax.jit(jax.vmap(one))(keys))
    wall = time.perf_counter() - started
    slot_s_ = timing.slot_s

    def seconds(slots):
        slots = np.asarray(slots, dtype=np.float64)
        return np.where(slots >= 0, slots * slot_s_, np.nan)

    names_flow = [f"{network.flows[r].name}#{k}" if flow_route is not None else network.flows[r].name
                  for k, r in enumerate(routes)]
    n_samples = out["queue_samples"].shape[1]
    data = {
        "sent": (("seed", "flow"), out["sent"], {"units": "packets"}),
        "delivered": (("seed", "flow"), out["delivered"], {"units": "packets"}),
        "dropped": (("seed", "flow"), out["dropped"], {"units": "packets"}),
        "in_flight": (("seed", "flow"), out["in_flight"], {"units": "packets", "long_name": "in the network at the end"}),
        "first_sent": (("seed", "flow"), seconds(out["first_sent"]), {"units": "s"}),
        "last_delivered": (("seed", "flow"), seconds(out["last_delivered"]), {"units": "s"}),
        "link_accepted": (("seed", "link"), out["link_accepted"],
                          {"units": "packets", "long_name": "packets the link took (served, or queued at the end)"}),
        "link_dropped": (("seed", "link"), out["link_dropped"], {"units": "packets"}),
        "queue_mean": (("seed", "link"), out["queue_mean"], {"units": "packets",
                                                              "long_name": "mean backlog at slot boundaries"}),
        "queue": (("seed", "sample", "link"), out["queue_sample_means"], {"units": "packets",
                                                                         "long_name": "mean backlog per sample"}),
        "pool_overflow": (("seed",), out["pool_overflow"], {"units": "packets",
                                                            "long_name": "packets the sources could not send"}),
    }
    coords = {
        "seed": seeds, "flow": names_flow, "link": network.link_names,
        "sample_time": ("sample", (np.arange(n_samples) + 1) * every * slot_s_, {"units": "s"}),
        "route": ("flow", routes),
    }
    attrs = {
        "title": "fluidcc packet simulation", "protocol": getattr(protocol, "name", type(protocol).__name__),
        "fluidcc_version": __version__, "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "slot_s": slot_s_, "duration_s": timing.n_slots * slot_s_, "pool_size": pool,
        "network": json.dumps(network.to_dict()), "wall_s": wall,
        "buffer_packets": json.dumps(paths.buffer_packets.tolist()),
    }
    return xr.Dataset(data, coords=coords, attrs=attrs)
