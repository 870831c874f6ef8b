"""Chunked sweep runner: solve, classify, keep every finished chunk in a Zarr store, assemble.

With an output folder, ``OUT/sweep.zarr`` is the store of record: each chunk of points is
written into its region as soon as it is done (`fluidcc.sweep._store`), so an interrupted sweep
keeps what it finished and the same command resumes it, running only the chunks not done; a
store made by a different sweep is refused, naming the difference. Chunks run in this process or
as Dask tasks (`client`, `fluidcc.sweep.cluster`), with the same results bit for bit: a chunk is
the same batch wherever it runs. A chunk that raises is recorded (``chunk_errors``) and the
sweep goes on; running the sweep again retries it. Sweeps of up to `NETCDF_MAX_POINTS` points
are also written to ``OUT/sweep.nc`` (NetCDF) and returned in memory; larger ones are returned
as the store, opened lazily (dask arrays), so memory stays bounded by the chunks.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Callable

import numpy as np
import xarray as xr

from .._version import stamp
from ..dde import RK4, Chebyshev, require_linear_form, resolve_method, solve
from ..protocols import single_link_model
from ..stability.classify import BEHAVIOUR_NAMES, Behaviour, Thresholds, classify
from ._spec import SweepSpec
from ._store import (ChunkLayout, create_or_open, fill, open_result, run_pending, set_attrs, stored_errors,
                     write_chunk, write_netcdf)

#: Parameter points per stored chunk at most (each chunk is solved, classified and written at once).
DEFAULT_CHUNK_POINTS = 2048

#: Largest sweep also written to sweep.nc and returned in memory.
NETCDF_MAX_POINTS = 1 << 18

#: Behaviours that a longer horizon may change, so points with them are integrated again.
HORIZON_BOUND = (int(Behaviour.TRANSIENT), int(Behaviour.CONVERGING))

#: Each result of a point: its dtype and the value of a point not computed (a failed chunk).
_FIELDS = {"behaviour": (np.int8, -1), "amplitude": (np.float64, np.nan), "period": (np.float64, np.nan),
           "deviation": (np.float64, np.nan), "final": (np.float64, np.nan), "equilibrium": (np.float64, np.nan),
           "status": (np.int8, -1), "steps_per_delay": (np.float64, np.nan), "error_estimate": (np.float64, np.nan),
           "horizon_rtts": (np.float64, np.nan)}


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
    client=None,
) -> xr.Dataset:
    """Run a sweep and return its dataset; with `out_dir`, store it there (sweep.zarr, and
    sweep.nc up to `NETCDF_MAX_POINTS` points), resuming what a store there already holds.

    longer_for: the behaviours whose points are integrated again over a longer horizon (default:
    transient and converging, whose class the horizon decides).
    smooth: simulate the model's smooth form (`linearizable()`: without the projection of the
    queue at 0), the nonlinear model that linear analysis linearizes.
    client: a `dask.distributed.Client` to run the chunks on (see `fluidcc.sweep.cluster`); with a
    store, workers write their chunks into it, so its path must be one they see.
    progress(done, total): points done, as chunks finish (those found done in the store first).
    The dataset's ``chunks_failed`` attribute lists the chunks that raised (their points hold
    behaviour -1 and NaN); ``chunk_errors`` (JSON) has their errors.
    """
    if isinstance(chunk_points, bool) or not isinstance(chunk_points, (int, np.integer)) or chunk_points < 1:
        from ..errors import ParameterError

        raise ParameterError("chunk_points", chunk_points, "a whole number of points >= 1")
    system, params = validate_grid(spec)
    if spec.solver == "chebyshev":
        require_linear_form(system, params, field="solver")
    elif spec.solver == "auto":
        spec = dataclasses.replace(spec, solver=resolve_method("auto", system, params).name)
    del system, params
    layout = ChunkLayout(spec.shape, int(chunk_points))
    longer_for = tuple(int(b) for b in longer_for)
    store = None
    status = np.zeros(layout.n_chunks, dtype=np.int8)
    errors: dict[int, str] = {}
    if out_dir is not None:
        store = Path(out_dir) / ("sweep-smooth.zarr" if smooth else "sweep.zarr")
        store.parent.mkdir(parents=True, exist_ok=True)
        key = {"spec": json.loads(spec.to_json()), "smooth": smooth, "longer_for": list(longer_for),
               "thresholds": thresholds.as_attrs(), "chunk_block": list(layout.block)}
        status = create_or_open(store, _template(spec, layout, thresholds, command, longer_for, smooth), key,
                                layout.n_chunks)
        errors = stored_errors(store)
    job = _ChunkJob(spec, thresholds, smooth, longer_for, layout, str(store) if store is not None else None)
    in_memory, attrs = run_pending(job, layout, store, status, errors, client, progress)
    attrs["simulated_form"] = "smooth (no projection at q = 0)" if smooth else "model as defined"
    if store is not None:
        dataset = open_result(store)
        attrs["points_integrated_longer"] = int((dataset["horizon_rtts"] > spec.horizon_rtts).sum())
        attrs["store"] = str(store)
        set_attrs(store, attrs)
        dataset.attrs.update(attrs)
        if spec.size <= NETCDF_MAX_POINTS:
            dataset = dataset.load()
            write_netcdf(dataset, Path(out_dir) / ("sweep-smooth.nc" if smooth else "sweep.nc"))
        return dataset
    dataset = _template(spec, layout, thresholds, command, longer_for, smooth, lazy=False)
    fill(dataset, layout, in_memory)
    attrs["points_integrated_longer"] = int((dataset["horizon_rtts"].values > spec.horizon_rtts).sum())
    dataset.attrs.update(attrs)
    return dataset


#: Points validated at once (bounds the memory of validating a large grid).
VALIDATE_POINTS = 1 << 16


def validate_grid(spec: SweepSpec):
    """Check every point of the grid before any work, so that bad input fails at once, a block of
    points at a time; returns the model and parameters of the first block."""
    entry = single_link_model(spec.model)
    first = None
    for lo in range(0, spec.size, VALIDATE_POINTS):
        built = entry.aggregate(spec.values(lo, min(spec.size, lo + VALIDATE_POINTS)))
        first = first or built
    return first


@dataclasses.dataclass(frozen=True)
class _ChunkJob:
    """One sweep's chunk task, ``job(k)``: solve and classify chunk k, write it into the store (if
    any) and return a summary (with its values when there is no store). Picklable, so that Dask
    can send it to workers."""

    spec: SweepSpec
    thresholds: Thresholds
    smooth: bool
    longer_for: tuple[int, ...]
    layout: ChunkLayout
    store: str | None

    def __call__(self, k: int) -> dict:
        lo, hi = self.layout.flat(k)
        entry = single_link_model(self.spec.model)
        values = self.spec.values(lo, hi)
        result = _solve_chunk(self.spec, entry, values, self.thresholds, self.smooth, self.longer_for)
        variables = {name: (result[name], dtype) for name, (dtype, _) in _FIELDS.items()}
        if self.store is None:
            return {"chunk": k, "points": hi - lo, "values": variables}
        write_chunk(Path(self.store), self.layout, tuple(a.name for a in self.spec.axes), k, variables)
        return {"chunk": k, "points": hi - lo}


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


def _template(spec: SweepSpec, layout: ChunkLayout, thresholds: Thresholds, command: str,
              longer_for: tuple[int, ...], smooth: bool, lazy: bool = True) -> xr.Dataset:
    """The sweep's dataset before any point is computed: every variable filled with its
    not-computed value (lazy: a dask array chunked by `layout`; else a numpy array of its own),
    with its attributes; the dataset's provenance."""
    import dask.array as da

    entry = single_link_model(spec.model)
    dims = tuple(a.name for a in spec.axes)
    coords = {}
    for axis in spec.axes:
        unit = entry.parameter(axis.name).unit
        coords[axis.name] = (axis.name, np.asarray(axis.values), {"units": unit, "grid": axis.text})
    about = {
        "behaviour": {"long_name": "nonlinear behaviour of the simulated point (-1: not computed, its chunk failed)",
                      "flag_values": np.arange(-1, len(Behaviour), dtype=np.int8),
                      "flag_meanings": "not_computed " + " ".join(BEHAVIOUR_NAMES)},
        "amplitude": {"long_name": "relative half peak-to-peak of x/x* over the end of the horizon"},
        "period": {"long_name": "oscillation period", "units": "s"},
        "deviation": {"long_name": "max |x/x* - 1| over the final window"},
        "final": {"long_name": f"{entry.observed} at the end of the horizon", "units": entry.observed_unit},
        "equilibrium": {"long_name": f"equilibrium {entry.observed} of the model", "units": entry.observed_unit},
        "status": {"long_name": "solver status (-1: not computed)", "flag_values": np.arange(-1, 5, dtype=np.int8),
                   "flag_meanings": "not_computed ok overflow non_finite tolerance_not_reached solver_failed"},
        "steps_per_delay": {"long_name": "RK4 steps per delay used (NaN with the chebyshev solver)"},
        "error_estimate": {"long_name": "estimated max relative solver error"},
        "horizon_rtts": {"long_name": "integration horizon used (longer for points first "
                                      + " or ".join(BEHAVIOUR_NAMES[b] for b in longer_for) + ")",
                         "units": f"multiples of {entry.delay_parameter}"},
    }
    data = {}
    for name, (dtype, missing) in _FIELDS.items():
        filled = da.full(spec.shape, missing, dtype=dtype, chunks=layout.block) if lazy else \
            np.full(spec.shape, missing, dtype=dtype)
        variable = xr.Variable(dims, filled, about[name])
        variable.encoding = {"chunks": layout.block, "fill_value": missing}
        data[name] = variable
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
        "saves_per_rtt": spec.saves_per_rtt,
        "observed_state": entry.observed,
        "solver": spec.solver,
        "solver_steps_per_delay": spec.steps_per_delay,
        "solver_rtol": spec.rtol if spec.rtol is not None else "none",
        "solver_max_steps_per_delay": spec.max_steps_per_delay,
        "seed": "none (deterministic)",
        "spec_json": spec.to_json(),
        "chunk_points": int(np.prod(layout.block)),
        "simulated_form": "smooth (no projection at q = 0)" if smooth else "model as defined",
        **thresholds.as_attrs(),
    }
    return xr.Dataset(data, coords=coords, attrs=attrs)
