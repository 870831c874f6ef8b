"""Chunked sweep runner: solve, classify, keep every finished chunk on disk, assemble a dataset.

An interrupted sweep keeps what it finished: each chunk of points is written to
``OUT/partial-<digest>/chunk_<k>.npz`` as soon as it is done, and a rerun of the same sweep into
the same folder resumes from there. The final dataset is ``OUT/sweep.nc`` (NetCDF) with its
provenance in the attributes.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path
from typing import Callable

import numpy as np
import xarray as xr

from .._version import stamp
from ..dde import RK4, Chebyshev, require_linear_form, resolve_method, solve
from ..protocols import single_link_model
from ..stability.classify import BEHAVIOUR_NAMES, Behaviour, Thresholds, classify
from ._spec import SweepSpec

#: Parameter points per stored chunk (each chunk is solved, classified and written at once).
DEFAULT_CHUNK_POINTS = 2048

#: Behaviours that a longer horizon may change, so points with them are integrated again.
HORIZON_BOUND = (int(Behaviour.TRANSIENT), int(Behaviour.CONVERGING))

_FIELDS = ("behaviour", "amplitude", "period", "deviation", "final", "equilibrium", "status",
           "steps_per_delay", "error_estimate", "horizon_rtts")


def run_sweep(
    spec: SweepSpec,
    out_dir: str | Path | None = None,
    *,
    chunk_points: int = DEFAULT_CHUNK_POINTS,
    thresholds: Thresholds = Thresholds(),
    progress: Callable[[int, int], None] | None = None,
    command: str = "",
    smooth: bool = False,
    longer_for: tuple[int, ...] = HORIZON_BOUND,
) -> xr.Dataset:
    """Run a sweep and return its dataset; with `out_dir`, keep partial results and write sweep.nc.

    longer_for: the behaviours whose points are integrated again over a longer horizon (default:
    transient and converging, whose class the horizon decides).
    smooth: simulate the model's smooth form (`linearizable()`: without the projection of the
    queue at 0), the nonlinear model that linear analysis linearizes.
    """
    entry = single_link_model(spec.model)
    values = spec.values()
    # Validate the whole grid before any work, so bad input fails at once.
    system, params = entry.aggregate(values)
    if spec.solver == "chebyshev":
        require_linear_form(system, params, field="solver")
    elif spec.solver == "auto":
        spec = dataclasses.replace(spec, solver=resolve_method("auto", system, params).name)
    partial = None
    if out_dir is not None:
        out_dir = Path(out_dir)
        partial = out_dir / f"partial-{spec.digest()}{'-smooth' if smooth else ''}"
        partial.mkdir(parents=True, exist_ok=True)
        (partial / "spec.json").write_text(spec.to_json())

    results = {name: [] for name in _FIELDS}
    n_chunks = (spec.size + chunk_points - 1) // chunk_points
    for k in range(n_chunks):
        lo, hi = k * chunk_points, min(spec.size, (k + 1) * chunk_points)
        path = partial / f"chunk_{k:05d}.npz" if partial is not None else None
        if path is not None and path.exists():
            with np.load(path) as stored:
                chunk = {name: stored[name] for name in _FIELDS}
        else:
            chunk = _solve_chunk(spec, entry, {n: v[lo:hi] for n, v in values.items()}, thresholds, smooth,
                                 longer_for)
            if path is not None:
                tmp = path.with_suffix(".tmp.npz")
                np.savez(tmp, **chunk)
                tmp.replace(path)
        for name in _FIELDS:
            results[name].append(chunk[name])
        if progress is not None:
            progress(hi, spec.size)

    dataset = _dataset(spec, {n: np.concatenate(v) for n, v in results.items()}, thresholds, command, longer_for)
    dataset.attrs["simulated_form"] = "smooth (no projection at q = 0)" if smooth else "model as defined"
    if out_dir is not None:
        target = out_dir / ("sweep-smooth.nc" if smooth else "sweep.nc")
        dataset.to_netcdf(target.with_suffix(".tmp.nc"), engine="scipy")
        target.with_suffix(".tmp.nc").replace(target)
        shutil.rmtree(partial, ignore_errors=True)
    return dataset


def _build(entry, values, smooth):
    system, params = entry.aggregate(values)
    return (system.linearizable() if smooth else system), params


def _solve_chunk(spec: SweepSpec, entry, values, thresholds, smooth=False, longer_for=HORIZON_BOUND):
    system, params = _build(entry, values, smooth)
    equilibrium = entry.equilibrium(values)
    observed = entry.observed_index(system, params)
    delay = values[entry.delay_parameter]
    size = len(delay)
    result = _simulate_and_classify(spec, system, params, delay, equilibrium, spec.horizon_rtts, thresholds, observed)
    horizon = np.full(size, spec.horizon_rtts)
    # Points whose verdict the horizon decides: still in their start-up transient, or converging
    # (the approach ends inside the last fifth of the horizon, so whether they settle or keep a
    # small oscillation is not seen yet): integrate again over a longer horizon.
    longer = spec.horizon_rtts
    while longer * 4 <= spec.horizon_limit_rtts:
        pending = np.flatnonzero(np.isin(result["behaviour"], longer_for))
        if pending.size == 0:
            break
        longer *= 4
        sub_system, sub_params = _build(entry, {n: v[pending] for n, v in values.items()}, smooth)
        again = _simulate_and_classify(spec, sub_system, sub_params, delay[pending], equilibrium[pending],
                                       longer, thresholds, observed)
        for name, value in again.items():
            result[name][pending] = value
        horizon[pending] = longer
    result["equilibrium"] = equilibrium
    result["horizon_rtts"] = horizon
    return result


def _simulate_and_classify(spec, system, params, delay, equilibrium, horizon_rtts, thresholds, observed):
    saves = np.arange(int(round(horizon_rtts * spec.saves_per_rtt)) + 1) / spec.saves_per_rtt
    save_times = saves[None, :] * delay[:, None]
    method = Chebyshev() if spec.solver == "chebyshev" else \
        RK4(steps_per_delay=spec.steps_per_delay, max_steps_per_delay=max(spec.max_steps_per_delay, spec.steps_per_delay))
    solution = solve(system, params, horizon_rtts * delay, save_times, method=method, rtol=spec.rtol)
    trajectory = solution.ys[..., observed]
    result = classify(save_times, trajectory, equilibrium, solution.status, thresholds)
    error = solution.error_estimate if solution.error_estimate is not None else np.full(len(delay), np.nan)
    return {
        "behaviour": result.behaviour,
        "amplitude": result.amplitude,
        "period": result.period,
        "deviation": result.deviation,
        "final": trajectory[:, -1],
        "status": solution.status,
        "steps_per_delay": solution.steps_per_delay if solution.steps_per_delay is not None
        else np.full(len(delay), np.nan),
        "error_estimate": error,
    }


def _dataset(spec: SweepSpec, flat: dict[str, np.ndarray], thresholds: Thresholds, command: str,
             longer_for: tuple[int, ...]) -> xr.Dataset:
    entry = single_link_model(spec.model)
    dims = tuple(a.name for a in spec.axes)
    coords = {}
    for axis in spec.axes:
        unit = entry.parameter(axis.name).unit
        coords[axis.name] = (axis.name, np.asarray(axis.values), {"units": unit, "grid": axis.text})

    def grid(name):
        return (dims, flat[name].reshape(spec.shape))

    data = {
        "behaviour": (dims, flat["behaviour"].astype(np.int8).reshape(spec.shape), {
            "long_name": "nonlinear behaviour of the simulated point",
            "flag_values": np.arange(len(Behaviour), dtype=np.int8),
            "flag_meanings": " ".join(BEHAVIOUR_NAMES),
        }),
        "amplitude": grid("amplitude") + ({"long_name": "relative half peak-to-peak of x/x* over the end of the horizon"},),
        "period": grid("period") + ({"long_name": "oscillation period", "units": "s"},),
        "deviation": grid("deviation") + ({"long_name": "max |x/x* - 1| over the final window"},),
        "final": grid("final") + ({"long_name": f"{entry.observed} at the end of the horizon",
                                   "units": entry.observed_unit},),
        "equilibrium": grid("equilibrium") + ({"long_name": f"equilibrium {entry.observed} of the model",
                                               "units": entry.observed_unit},),
        "status": (dims, flat["status"].astype(np.int8).reshape(spec.shape), {
            "long_name": "solver status", "flag_values": np.arange(5, dtype=np.int8),
            "flag_meanings": "ok overflow non_finite tolerance_not_reached solver_failed",
        }),
        "steps_per_delay": grid("steps_per_delay") + ({"long_name": "RK4 steps per delay used (NaN with the chebyshev solver)"},),
        "error_estimate": grid("error_estimate") + ({"long_name": "estimated max relative solver error"},),
        "horizon_rtts": grid("horizon_rtts") + ({"long_name": "integration horizon used (longer for points first "
                                                              + " or ".join(BEHAVIOUR_NAMES[b] for b in longer_for) + ")",
                                                 "units": f"multiples of {entry.delay_parameter}"},),
    }
    fixed = {name: value for name, value in entry.defaults().items() if name not in dims}
    fixed.update(spec.fixed)
    attrs = {
        "title": f"fluidcc stability sweep of {spec.model}",
        "model": spec.model,
        "model_description": entry.description,
        **stamp(),
        "command": command,
        "fixed_parameters_si": json.dumps(fixed, sort_keys=True),
        "horizon_rtts_first": spec.horizon_rtts,
        "horizon_rtts_limit": spec.horizon_limit_rtts,
        "points_integrated_longer": int(np.sum(flat["horizon_rtts"] > spec.horizon_rtts)),
        "saves_per_rtt": spec.saves_per_rtt,
        "observed_state": entry.observed,
        "solver": spec.solver,
        "solver_steps_per_delay": spec.steps_per_delay,
        "solver_rtol": spec.rtol if spec.rtol is not None else "none",
        "solver_max_steps_per_delay": spec.max_steps_per_delay,
        "seed": "none (deterministic)",
        "spec_json": spec.to_json(),
        **thresholds.as_attrs(),
    }
    return xr.Dataset(data, coords=coords, attrs=attrs)
