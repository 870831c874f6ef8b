"""One run of a protocol's single-link fluid model, as an xarray dataset with provenance."""

from __future__ import annotations

import numpy as np
import xarray as xr

from ..dde import solve
from ..errors import ParameterError
from ..protocols import single_link_model
from ._provenance import provenance


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
    """Integrate one point of protocol `model`'s single-link fluid model.

    values: parameters in SI units (missing ones take the model defaults); rtts: per-flow RTTs in
    seconds, for models with a window per flow (default: `flows` copies of `rtt`); duration_s:
    horizon in seconds (default 200 times the largest RTT); saves_per_rtt: saves per smallest
    RTT. With a window per flow, returns windows (packets), rates (packets/s), what the model
    observes besides (MIAIMD: the load factor, eq. (12)) and the closed-form equilibrium; for an
    aggregate model, every state component and its equilibrium. The solver status and the
    provenance are in the attributes. Errors name these parameters.
    """
    entry = single_link_model(model)
    merged = entry.defaults()
    merged.update(values or {})
    if entry.flow is None:
        if rtts is not None:
            raise ParameterError("rtts", rtts, f"per-flow RTTs only for models with per-flow state; {model} is "
                                 "an aggregate model: set its delay with the parameter rtt")
        system, params = entry.aggregate({k: np.asarray([v]) for k, v in merged.items()})
        times, solution = _run(system, params, float(merged[entry.delay_parameter]), duration_s, saves_per_rtt,
                               steps_per_delay, rtol)
        return _aggregate_dataset(entry, merged, system, params, times, solution, rtol, command)
    if rtts is None:
        flows = int(round(merged["flows"]))
        if flows < 1 or flows != merged["flows"]:
            raise ParameterError("flows", merged["flows"], "a whole number >= 1")
        rtts = np.full(flows, merged["rtt"])
    rtts = np.atleast_1d(np.asarray(rtts, dtype=np.float64))
    system, params = entry.flow({k: np.asarray([v]) for k, v in merged.items()}, rtts)
    times, solution = _run(system, params, rtts, duration_s, saves_per_rtt, steps_per_delay, rtol)
    windows = solution.ys[0]
    equilibrium = system.equilibrium(params)
    data = {
        "window": (("time", "flow"), windows, {"units": "packets"}),
        "rate": (("time", "flow"), windows / rtts[None, :], {"units": "packets/s"}),
        **(system.observe_run(times, windows, params) if hasattr(system, "observe_run") else {}),
        "equilibrium_window": (("flow",), np.asarray(equilibrium["flow_window"])[0], {"units": "packets"}),
        "equilibrium_rate": (("flow",), np.asarray(equilibrium["flow_rate"])[0], {"units": "packets/s"}),
    }
    coords = {"time": ("time", times, {"units": "s"}), "flow": np.arange(len(rtts)), "rtt": ("flow", rtts, {"units": "s"})}
    return xr.Dataset(data, coords=coords, attrs=provenance(model, merged, solution, rtol, command))


def _run(system, params, rtts, duration_s, saves_per_rtt, steps_per_delay, rtol):
    """Save times (one grid of `saves_per_rtt` per smallest RTT up to the horizon) and the solution."""
    duration = float(duration_s) if duration_s is not None else 200.0 * float(np.max(rtts))
    if not (np.isfinite(duration) and duration > 0):
        raise ParameterError("duration_s", duration_s, "a horizon > 0 s")
    if saves_per_rtt < 1:
        raise ParameterError("saves_per_rtt", saves_per_rtt, "a whole number >= 1")
    step = float(np.min(rtts)) / saves_per_rtt
    times = np.arange(int(np.floor(duration / step + 1e-9)) + 1) * step
    solution = solve(system, params, duration, times, steps_per_delay=steps_per_delay, rtol=rtol,
                     max_steps_per_delay=max(256, steps_per_delay))
    return times, solution


def _aggregate_dataset(entry, merged, system, params, times, solution, rtol, command) -> xr.Dataset:
    """One point of an aggregate model: every state component over time, with its equilibrium."""
    equilibrium = np.asarray(system.equilibrium_state(params))[0]
    data = {}
    for i, name in enumerate(solution.state_names):
        unit = entry.observed_unit if name == entry.observed else ("packets" if name == "queue" else "")
        data[name] = (("time",), solution.ys[0, :, i], {"units": unit})
        data["equilibrium_" + name] = ((), float(equilibrium[i]), {"units": unit, "long_name": f"equilibrium {name}"})
    attrs = provenance(entry.name, merged, solution, rtol, command)
    attrs["observed_state"] = entry.observed
    return xr.Dataset(data, coords={"time": ("time", times, {"units": "s"})}, attrs=attrs)
