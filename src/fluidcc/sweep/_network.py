"""One simulation of a fluid model on a `Network`, beside the max-min allocation, as an xarray dataset."""

from __future__ import annotations

import inspect
import json
import math

import numpy as np
import xarray as xr

from ..dde import solve
from ..errors import ParameterError
from ..maxmin import maxmin_at
from ..models import miaimd_network, qcp_network, rcp_network, xcp_network
from ..network import Network
from ._simulate import _provenance

NETWORK_MODELS = ("xcp", "ixcp", "miaimd", "rcp", "qcp")

#: The scalar parameters a user sets for each network model (the rest come from the network).
_USER_PARAMETERS = {
    "xcp": ("alpha", "beta", "gamma"),
    "ixcp": ("alpha", "beta", "gamma"),
    "miaimd": ("kappa", "alpha", "gamma", "initial_window"),
    "rcp": ("alpha", "beta", "rate_interval", "rtt_gain", "initial_rate_fraction"),
    "qcp": ("alpha", "beta", "control_interval", "initial_rate_fraction"),
}

_BUILDERS = {"xcp": xcp_network.network_params, "ixcp": xcp_network.network_params,
             "miaimd": miaimd_network.network_params, "rcp": rcp_network.network_params,
             "qcp": qcp_network.network_params}


def _builder(model: str):
    return _BUILDERS[model]


#: Parameters each network model takes (SI units) and their defaults, read from the models' own
#: `network_params`, so the two cannot disagree.
NETWORK_DEFAULTS = {
    model: {name: inspect.signature(_builder(model)).parameters[name].default for name in names}
    for model, names in _USER_PARAMETERS.items()
}

#: Default horizon after the last start or stop (seconds): MIAIMD's fairness converges slowly.
SETTLE_S = {"xcp": 30.0, "ixcp": 30.0, "miaimd": 150.0, "rcp": 40.0, "qcp": 20.0}


def network_model(model: str, network: Network, values: dict[str, float] | None = None):
    """(system, params) of a network model with parameters `values` (SI; defaults for the rest)."""
    if model not in NETWORK_MODELS:
        raise ParameterError("model", model, f"a model with a network form: {', '.join(NETWORK_MODELS)}")
    merged = dict(NETWORK_DEFAULTS[model])
    for name, value in (values or {}).items():
        if name not in merged:
            raise ParameterError("parameter", name, f"a parameter of {model} on a network: {', '.join(merged)}")
        merged[name] = float(value)
    params = _builder(model)(network, **merged)
    if model == "miaimd":
        return miaimd_network.MIAIMDNetwork(network), params, merged
    if model == "rcp":
        return rcp_network.RCPNetwork(network, accounting=True), params, merged
    if model == "qcp":
        return qcp_network.QCPNetwork(network, accounting=True), params, merged
    return xcp_network.XCPNetwork(network, model), params, merged


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
    """Integrate `model` ("xcp", "ixcp", "miaimd", "rcp" or "qcp") on `network` and compare with max-min.

    values: model parameters in SI units (see NETWORK_DEFAULTS). duration_s: horizon (default:
    SETTLE_S after the last start or stop). save_step_s: spacing of saved times (default: the
    smallest RTT, a quarter of it for RCP and QCP, whose flow rates are read from the saved
    offers one RTT back; at most 2000 saves). Returns, over time and per flow: rate (packets/s;
    0 while a flow does not send), maxmin_rate (the max-min allocation of the flows active at
    that time) and their ratio; per link: load (packets/s) and utilization, the queue (packets)
    for all but MIAIMD, and for RCP and QCP the rate each router offers (packets/s), its estimate
    of the number of flows (RCP: C/R; QCP: the count of eq. (4)) and the fluid accounting
    (packets sent per flow, arrived and departed per link, over the run); per flow: the model's
    equilibrium of the last phase, solved from its fluid equations.
    """
    system, params, merged = network_model(model, network, values)
    events = [t for t in (*network.start_s, *network.stop_s) if math.isfinite(t)]
    duration = float(duration_s) if duration_s is not None else max(events, default=0.0) + SETTLE_S[model]
    if not (math.isfinite(duration) and duration > 0):
        raise ParameterError("duration", duration_s, "a horizon > 0 s")
    rtt = network.rtt_s
    explicit_rate = model in ("rcp", "qcp")
    finest = float(np.min(rtt)) / (4.0 if explicit_rate else 1.0)
    step = float(save_step_s) if save_step_s is not None else max(finest, duration / 2000.0)
    if not (math.isfinite(step) and step > 0):
        raise ParameterError("save_step", save_step_s, "a spacing > 0 s")
    times = np.arange(int(np.floor(duration / step + 1e-9)) + 1) * step
    solution = solve(system, params, duration, times, steps_per_delay=steps_per_delay)
    state = solution.ys[0]
    n, L = network.n_flows, network.n_links
    active = np.stack([network.active(t) for t in times])
    extra = {}
    if model == "miaimd":
        rates = system.rates(state)
        queues = None
    elif explicit_rate:
        observed = system.observe(times, state, params)
        rates, queues = observed["rate"], system.block(state, "queue")
        extra = {
            "offered_rate": (("time", "link"), observed["offered"],
                             {"units": "packets/s", "long_name": "rate the router offers, R_l"}),
            "flow_estimate": (("time", "link"), observed["flow_estimate"],
                              {"long_name": "the router's estimate of its number of flows"}),
            "sent": (("flow",), system.block(state[-1], "sent"), {"units": "packets", "long_name": "sent over the run"}),
            "arrived": (("link",), system.block(state[-1], "arrived"), {"units": "packets"}),
            "departed": (("link",), system.block(state[-1], "departed"), {"units": "packets"}),
        }
    else:
        rates = state[:, :n]
        queues = state[:, n : n + L]
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
    attrs = _provenance(model, merged, solution, None, command)
    attrs.update({
        "title": f"fluidcc simulation of {model} on a network",
        "network": json.dumps(network.to_dict()),
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
