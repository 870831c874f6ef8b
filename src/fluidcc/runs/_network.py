"""One simulation of a fluid model on a `Network`, beside the max-min allocation, as an xarray dataset."""

from __future__ import annotations

import json
import math

import numpy as np
import xarray as xr

from ..dde import solve
from ..errors import ParameterError
from ..maxmin import maxmin_at
from ..network import Network
from ..protocols import network_model as network_model_of
from ._provenance import provenance


def network_model(model: str, network: Network, values: dict[str, float] | None = None):
    """(system, params, merged values) of protocol `model`'s fluid model on `network`, with
    parameters `values` (SI; the model's defaults for the rest)."""
    return network_model_of(model).build(network, values)


def simulate_network(
    model: str,
    network: Network,
    values: dict[str, float] | None = None,
    *,
    duration_s: float | None = None,
    save_step_s: float | None = None,
    steps_per_delay: int = 32,
    command: str = "",
) -> xr.Dataset:
    """Integrate protocol `model`'s fluid model on `network` (any protocol of
    `fluidcc.protocols.names("network")`) and compare with max-min.

    values: model parameters in SI units (`fluidcc.protocols.network_model(model).defaults()`).
    duration_s: horizon (default: the model's `settle_s` after the last start or stop).
    save_step_s: spacing of saved times (default: the smallest RTT over the model's
    `saves_per_rtt`, e.g. a quarter of it for RCP and QCP, whose flow rates are read from the
    saved offers one RTT back; at most 2000 saves). Returns, over time and per flow: rate (packets/s;
    0 while a flow does not send), maxmin_rate (the max-min allocation of the flows active at
    that time) and their ratio; per link: load (packets/s) and utilization, the queue (packets)
    for all but MIAIMD, and for RCP and QCP the rate each router offers (packets/s), its estimate
    of the number of flows (RCP: C/R; QCP: the count of eq. (4)) and the fluid accounting
    (packets sent per flow, arrived and departed per link, over the run); per flow: the model's
    equilibrium of the last phase, solved from its fluid equations.
    """
    entry = network_model_of(model)
    system, params, merged = entry.build(network, values)
    events = [t for t in (*network.start_s, *network.stop_s) if math.isfinite(t)]
    duration = float(duration_s) if duration_s is not None else max(events, default=0.0) + entry.settle_s
    if not (math.isfinite(duration) and duration > 0):
        raise ParameterError("duration_s", duration_s, "a horizon > 0 s")
    rtt = network.rtt_s
    finest = float(np.min(rtt)) / entry.saves_per_rtt
    step = float(save_step_s) if save_step_s is not None else max(finest, duration / 2000.0)
    if not (math.isfinite(step) and step > 0):
        raise ParameterError("save_step_s", save_step_s, "a spacing > 0 s")
    times = np.arange(int(np.floor(duration / step + 1e-9)) + 1) * step
    solution = solve(system, params, duration, times, steps_per_delay=steps_per_delay)
    active = np.stack([network.active(t) for t in times])
    rates, queues, extra = system.observe_run(times, solution.ys[0], params)
    rates = np.where(active, rates, 0.0)
    fair = _maxmin_over_time(network, times)
    load = rates @ network.routing_matrix.T
    equilibrium = system.equilibrium(params)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(fair > 0, rates / fair, np.nan)
    data = {
        "rate": (("time", "flow"), rates, {"units": "packets/s"}),
        "maxmin_rate": (("time", "flow"), fair, {"units": "packets/s", "long_name": "max-min fair rate"}),
        "rate_over_maxmin": (("time", "flow"), ratio, {"long_name": "rate / max-min rate"}),
        "load": (("time", "link"), load, {"units": "packets/s"}),
        "utilization": (("time", "link"), load / network.capacities_pps, {"long_name": "load / capacity"}),
        "equilibrium_rate": (("flow",), np.asarray(equilibrium["flow_rate"]), {"units": "packets/s"}),
        "equilibrium_bottleneck": (("flow",), np.asarray(equilibrium["bottleneck"]),
                                   {"long_name": "link each flow follows at the equilibrium (-1: inactive)"}),
    }
    if queues is not None:
        data["queue"] = (("time", "link"), queues, {"units": "packets"})
    data.update(extra)
    attrs = provenance(model, merged, solution, None, command)
    attrs.update({
        "title": f"fluidcc simulation of {model} on a network",
        "network": json.dumps(network.to_dict()),
        "packet_bytes": network.packet_bytes,
        "equilibrium_residual": float(equilibrium["residual"]),
    })
    coords = {
        "time": ("time", times, {"units": "s"}),
        "flow": ("flow", network.flow_names),
        "link": ("link", network.link_names),
        "rtt": ("flow", rtt, {"units": "s"}),
        "capacity": ("link", network.capacities_pps, {"units": "packets/s"}),
    }
    return xr.Dataset(data, coords=coords, attrs=attrs)


def _maxmin_over_time(network: Network, times: np.ndarray) -> np.ndarray:
    """Max-min rates of the active flows at each time (computed once per phase)."""
    fair = np.zeros((len(times), network.n_flows))
    for start, stop in network.phases():
        inside = (times >= start) & (times < stop)
        if inside.any():
            fair[inside] = np.asarray(maxmin_at(network, start).rates_pps, dtype=np.float64)
    return fair


def settling_times(dataset: xr.Dataset, tolerance: float = 0.02) -> list[dict]:
    """For each phase between starts and stops: how long after the change every active flow
    stays within `tolerance` (relative) of its max-min rate until the phase ends (inf if never),
    and the largest deviation at the end of the phase."""
    network = Network.from_dict(json.loads(dataset.attrs["network"]))
    times = dataset["time"].values
    rates = dataset["rate"].values
    fair = dataset["maxmin_rate"].values
    rows = []
    for start, stop in network.phases():
        inside = np.flatnonzero((times >= start) & (times < stop))
        if inside.size == 0:
            continue
        on = fair[inside[0]] > 0
        deviation = np.max(np.abs(rates[inside][:, on] / fair[inside][:, on] - 1.0), axis=1)
        bad = np.flatnonzero(deviation > tolerance)
        if bad.size == 0:
            settle = 0.0
        elif bad[-1] == inside.size - 1:
            settle = math.inf
        else:
            settle = float(times[inside[bad[-1] + 1]] - start)
        rows.append({"start_s": start, "stop_s": stop, "settling_s": settle,
                     "final_deviation": float(deviation[-1]), "max_deviation_last_5s":
                     float(np.max(deviation[times[inside] >= times[inside[-1]] - 5.0]))})
    return rows
