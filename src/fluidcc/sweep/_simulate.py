"""One simulation of a model with per-flow state, as an xarray dataset with provenance."""

from __future__ import annotations

import datetime as _dt
import json

import jax
import numpy as np
import xarray as xr

from .._version import __version__
from ..dde import solve
from ..errors import ParameterError
from ..models import get_model


def simulate(
    model: str,
    values: dict[str, float] | None = None,
    rtts=None,
    *,
    duration_s: float | None = None,
    saves_per_rtt: int = 20,
    steps_per_delay: int = 32,
    rtol: float | None = 1e-6,
    command: str = "",
) -> xr.Dataset:
    """Integrate one point of `model` with a window per flow.

    values: parameters in SI units (missing ones take the model defaults); rtts: per-flow RTTs in
    seconds (default: `flows` copies of `rtt`); duration_s: horizon in seconds (default 200 times
    the largest RTT). Returns windows (packets), rates (packets/s) and the load factor over time,
    with the closed-form equilibrium and the solver status in the attributes.
    """
    entry = get_model(model)
    merged = entry.defaults()
    merged.update(values or {})
    if entry.flow is None:
        if rtts is not None:
            raise ParameterError("--rtts", rtts, f"per-flow RTTs only for models with per-flow state; {model} is "
                                 "an aggregate model: set its delay with --set rtt=...")
        return _simulate_aggregate(entry, merged, duration_s=duration_s, saves_per_rtt=saves_per_rtt,
                                   steps_per_delay=steps_per_delay, rtol=rtol, command=command)
    if rtts is None:
        flows = int(round(merged["flows"]))
        if flows < 1 or flows != merged["flows"]:
            raise ParameterError("flows", merged["flows"], "a whole number >= 1")
        rtts = np.full(flows, merged["rtt"])
    rtts = np.atleast_1d(np.asarray(rtts, dtype=np.float64))
    system, params = entry.flow({k: np.asarray([v]) for k, v in merged.items()}, rtts)
    duration = float(duration_s) if duration_s is not None else 200.0 * float(np.max(rtts))
    if not (np.isfinite(duration) and duration > 0):
        raise ParameterError("duration", duration_s, "a horizon > 0 s")
    if saves_per_rtt < 1:
        raise ParameterError("saves_per_rtt", saves_per_rtt, "a whole number >= 1")
    step = float(np.min(rtts)) / saves_per_rtt
    times = np.arange(int(np.floor(duration / step + 1e-9)) + 1) * step
    solution = solve(system, params, duration, times, steps_per_delay=steps_per_delay, rtol=rtol,
                     max_steps_per_delay=max(256, steps_per_delay))
    windows = solution.ys[0]
    rates = windows / rtts[None, :]
    equilibrium = system.equilibrium(params)
    load = _load_factor(times, windows, rtts, merged, float(np.asarray(params.initial_window)[0]))
    flows = np.arange(len(rtts))
    dataset = xr.Dataset(
        {
            "window": (("time", "flow"), windows, {"units": "packets"}),
            "rate": (("time", "flow"), rates, {"units": "packets/s"}),
            "load_factor": (("time",), load, {"long_name": "load factor at the link, eq. (12)"}),
            "equilibrium_window": (("flow",), np.asarray(equilibrium["flow_window"])[0], {"units": "packets"}),
            "equilibrium_rate": (("flow",), np.asarray(equilibrium["flow_rate"])[0], {"units": "packets/s"}),
        },
        coords={"time": ("time", times, {"units": "s"}), "flow": flows, "rtt": ("flow", rtts, {"units": "s"})},
        attrs=_provenance(model, merged, solution, rtol, command),
    )
    return dataset


def _provenance(model, merged, solution, rtol, command) -> dict:
    return {
        "title": f"fluidcc simulation of {model}",
        "model": model,
        "fluidcc_version": __version__,
        "jax_version": jax.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": command,
        "parameters_si": json.dumps(merged, sort_keys=True),
        "status": int(solution.status[0]),
        "status_message": str(solution.messages[0]) or "ok",
        "solver": "rk4",
        "solver_steps_per_delay": int(solution.steps_per_delay[0]),
        "solver_rtol": rtol if rtol is not None else "none",
        "seed": "none (deterministic)",
    }


def _simulate_aggregate(entry, merged, *, duration_s, saves_per_rtt, steps_per_delay, rtol, command) -> xr.Dataset:
    """One point of an aggregate model: every state component over time, with its equilibrium."""
    system, params = entry.aggregate({k: np.asarray([v]) for k, v in merged.items()})
    delay = float(merged[entry.delay_parameter])
    duration = float(duration_s) if duration_s is not None else 200.0 * delay
    if not (np.isfinite(duration) and duration > 0):
        raise ParameterError("duration", duration_s, "a horizon > 0 s")
    if saves_per_rtt < 1:
        raise ParameterError("saves_per_rtt", saves_per_rtt, "a whole number >= 1")
    step = delay / saves_per_rtt
    times = np.arange(int(np.floor(duration / step + 1e-9)) + 1) * step
    solution = solve(system, params, duration, times, steps_per_delay=steps_per_delay, rtol=rtol,
                     max_steps_per_delay=max(256, steps_per_delay))
    equilibrium = np.asarray(system.equilibrium_state(params))[0]
    data = {}
    for i, name in enumerate(solution.state_names):
        unit = entry.observed_unit if name == entry.observed else ("packets" if name == "queue" else "")
        data[name] = (("time",), solution.ys[0, :, i], {"units": unit})
        data["equilibrium_" + name] = ((), float(equilibrium[i]), {"units": unit, "long_name": f"equilibrium {name}"})
    attrs = _provenance(entry.name, merged, solution, rtol, command)
    attrs["observed_state"] = entry.observed
    return xr.Dataset(data, coords={"time": ("time", times, {"units": "s"})}, attrs=attrs)


def _load_factor(times, windows, rtts, values, initial_window):
    """rho(t) = sum_j [w_j(t - T_j) / T_j] / (gamma C), interpolating log w on the save grid."""
    total = np.zeros_like(times)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        for j, rtt in enumerate(rtts):
            log_w = np.interp(times - rtt, times, np.log(windows[:, j]))
            delayed = np.where(times - rtt < 0, initial_window, np.exp(log_w))
            total = total + delayed / rtt
    return total / (values["gamma"] * values["capacity"])
