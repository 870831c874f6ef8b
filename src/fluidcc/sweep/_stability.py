"""Stability maps over a parameter grid: linear (characteristic roots), simulated, or both.

The linear map linearizes the model at its equilibrium at every grid point (automatic
differentiation of the model's vector field, `fluidcc.stability.linearize`) and computes the
rightmost characteristic roots (`fluidcc.stability.linear`); a point is linearly stable when the
spectral abscissa is negative. The simulated map is `run_sweep`'s classification. For a model with a projection (a queue kept
>= 0), its smooth form (`linearizable()`) is simulated too, and the points where the two settle
differently are marked `projection_changes`: there the nonlinearity at q = 0, not the linear
dynamics, decides. With both methods, the dataset records where linear and simulated verdicts
agree, away from the linear boundary (and, for projected models, away from `projection_changes`;
the agreement of the linear map with the smooth form is reported beside it).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import xarray as xr

from .._version import stamp
from ..errors import ParameterError, SolverError
from ..protocols import single_link_model
from ..stability.classify import Behaviour, Thresholds, settled
from ..stability.linearize import linear_roots
from ._execute import run_chunks
from ._runner import DEFAULT_CHUNK_POINTS, run_sweep, validate_grid
from ._spec import SweepSpec

METHODS = ("linear", "simulate", "both")

#: Points are "near the boundary" when the linear verdict changes within this fraction of an
#: axis' grid (in grid steps, rounded up) in either direction along any axis.
BOUNDARY_MARGIN = 0.02

#: Grid points per linear batch (memory bound and progress granularity).
LINEAR_CHUNK_POINTS = 8192


def linear_map(
    spec: SweepSpec, *, progress: Callable[[int, int], None] | None = None, chunk_points: int = LINEAR_CHUNK_POINTS,
    client=None,
) -> dict[str, np.ndarray]:
    """Linear stability of every grid point; flat arrays in grid (C) order.

    Returns abscissa (1/s), frequency (|Im| of the rightmost root, rad/s), stable (bool),
    converged (bool), nodes (Chebyshev nodes used) and equilibrium_residual (1/s). Chunks of
    `chunk_points` run in process, or as Dask tasks with `client` (`fluidcc.sweep.cluster`).
    """
    validate_grid(spec)  # the whole grid first, so that bad input fails at once
    job = _LinearJob(spec, chunk_points)
    n_chunks = -(-spec.size // chunk_points)
    parts: dict[int, dict] = {}
    failures: dict[int, str] = {}
    finished = [0]

    def done(k, summary, error):
        if error is not None:
            failures[k] = error
            return
        parts[k] = summary
        finished[0] += len(summary["abscissa"])
        if progress is not None:
            progress(finished[0], spec.size)

    run_chunks(job, range(n_chunks), done, client)
    if failures:
        k = min(failures)
        raise SolverError(f"the linear map failed on {len(failures)} chunk(s) of {chunk_points} points; "
                          f"chunk {k}: {failures[k].strip().splitlines()[-1]}")
    return {name: np.concatenate([parts[k][name] for k in range(n_chunks)]) for name in parts[0]}


@dataclass(frozen=True)
class _LinearJob:
    """Chunk k of a linear map (picklable, for Dask workers)."""

    spec: SweepSpec
    chunk_points: int

    def __call__(self, k: int) -> dict[str, np.ndarray]:
        lo, hi = k * self.chunk_points, min(self.spec.size, (k + 1) * self.chunk_points)
        system, params = single_link_model(self.spec.model).aggregate(self.spec.values(lo, hi))
        lin, roots = linear_roots(system, params, guarantee_from=0.0)
        return {"abscissa": np.asarray(roots.abscissa), "frequency": np.abs(np.asarray(roots.rightmost.imag)),
                "stable": np.asarray(roots.stable), "converged": np.asarray(roots.converged),
                "nodes": np.asarray(roots.nodes), "equilibrium_residual": np.asarray(lin.residual)}


def _settled(behaviour) -> np.ndarray:
    """Converged or converging, from a behaviour variable (DataArray or (dims, values, attrs))."""
    return settled(behaviour[1] if isinstance(behaviour, tuple) else behaviour.values)


def near_boundary(stable: np.ndarray, margin: float = BOUNDARY_MARGIN) -> np.ndarray:
    """Points whose linear verdict changes within `margin` of the grid along some axis."""
    near = np.zeros(stable.shape, dtype=bool)
    for axis, length in enumerate(stable.shape):
        reach = max(1, math.ceil(margin * length)) if length > 1 else 0
        for shift in range(1, reach + 1):
            lead = [slice(None)] * stable.ndim
            lag = [slice(None)] * stable.ndim
            lead[axis], lag[axis] = slice(shift, None), slice(None, -shift)
            differs = stable[tuple(lead)] != stable[tuple(lag)]
            near[tuple(lead)] |= differs
            near[tuple(lag)] |= differs
    return near


def run_stability(
    spec: SweepSpec,
    method: str = "both",
    out_dir: str | Path | None = None,
    *,
    thresholds: Thresholds = Thresholds(),
    progress: Callable[[str, int, int], None] | None = None,
    command: str = "",
    client=None,
    chunk_points: int = DEFAULT_CHUNK_POINTS,
) -> xr.Dataset:
    """Linear and/or simulated stability map of `spec`; writes OUT/stability.nc when out_dir is given
    (the simulations' stores are in OUT/simulation, see `run_sweep`).

    progress(stage, done, total) is called with stage "linear" or "simulate".
    client: a `dask.distributed.Client` to run the chunks on (`fluidcc.sweep.cluster`);
    chunk_points: points per chunk of the simulations.
    """
    if method not in METHODS:
        raise ParameterError("--method", method, f"one of {', '.join(METHODS)}")
    entry = single_link_model(spec.model)
    dims = tuple(a.name for a in spec.axes)
    coords = {a.name: (a.name, np.asarray(a.values), {"units": entry.parameter(a.name).unit, "grid": a.text})
              for a in spec.axes}
    data: dict = {}
    attrs: dict = {}
    if method in ("linear", "both"):
        lin = linear_map(spec, progress=(lambda d, t: progress("linear", d, t)) if progress else None, client=client)
        shape = spec.shape
        verdict = np.where(lin["converged"], lin["stable"].astype(np.int8), np.int8(-1))
        data["linear_stable"] = (dims, verdict.reshape(shape), {
            "long_name": "linear stability at the equilibrium", "flag_values": np.array([-1, 0, 1], dtype=np.int8),
            "flag_meanings": "not_resolved unstable stable"})
        data["abscissa"] = (dims, lin["abscissa"].reshape(shape), {
            "long_name": "spectral abscissa: largest real part of a characteristic root", "units": "1/s"})
        data["frequency"] = (dims, lin["frequency"].reshape(shape), {
            "long_name": "|imaginary part| of the rightmost root", "units": "rad/s"})
        data["collocation_nodes"] = (dims, lin["nodes"].reshape(shape), {"long_name": "Chebyshev nodes used"})
        data["equilibrium_residual"] = (dims, lin["equilibrium_residual"].reshape(shape), {
            "long_name": "max |f(x*)| / max(|x*|, 1) at the linearization point", "units": "1/s"})
        data["near_boundary"] = (dims, near_boundary(lin["stable"].reshape(shape)).astype(np.int8), {
            "long_name": f"linear verdict changes within {BOUNDARY_MARGIN:.0%} of the grid along some axis"})
        attrs.update(linear_method="Chebyshev collocation of the infinitesimal generator + Newton "
                     "(fluidcc.stability.linear), guarantee_from = 0 1/s",
                     boundary_margin=BOUNDARY_MARGIN)
    if method in ("simulate", "both"):
        system, _ = entry.aggregate({n: v[:1] for n, v in spec.values().items()})
        projected = system.linearizable() != system
        forms = (False, True) if projected else (False,)
        for smooth in forms:
            stage = "simulate smooth form" if smooth else "simulate"
            sim = run_sweep(
                spec, Path(out_dir) / "simulation" if out_dir is not None else None, thresholds=thresholds,
                progress=(lambda d, t, s=stage: progress(s, d, t)) if progress else None, command=command,
                smooth=smooth, longer_for=(int(Behaviour.TRANSIENT),), client=client, chunk_points=chunk_points,
            )  # a stability map counts converging and converged alike as settled: a longer horizon
            # cannot change the verdict of a converging point, only a transient one's
            suffix = "_smooth" if smooth else ""
            for name in sim.data_vars:
                data[name + suffix] = sim[name]
                if smooth:
                    data[name + suffix].attrs["long_name"] = (
                        sim[name].attrs.get("long_name", name) + " (smooth form: no projection at q = 0)")
            if not smooth:
                attrs.update({k: v for k, v in sim.attrs.items() if k not in ("title", "created", "command")})
        if projected:
            settled = _settled(data["behaviour"])
            settled_smooth = _settled(data["behaviour_smooth"])
            changes = settled != settled_smooth
            data["projection_changes"] = (dims, changes.astype(np.int8), {
                "long_name": "the projection of the queue at 0 changes the verdict: the model and its smooth "
                             "form (what linear analysis linearizes) settle differently"})
            attrs["projection_changes_fraction"] = float(changes.mean())
    if method == "both":
        linear = data["linear_stable"][1]
        away = (linear >= 0) & (data["near_boundary"][1] == 0)
        agree = (linear == 1) == _settled(data["behaviour"])
        data["agree"] = (dims, np.where(linear >= 0, agree, False).astype(np.int8), {
            "long_name": "linear verdict (stable) equals simulated (converged or converging)"})
        compared = away
        if "projection_changes" in data:
            compared = away & (data["projection_changes"][1] == 0)
            agree_smooth = (linear == 1) == _settled(data["behaviour_smooth"])
            attrs["agreement_smooth_away_from_boundary"] = float(agree_smooth[away].mean()) if away.any() else float("nan")
            attrs["agreement_everywhere_away_from_boundary"] = float(agree[away].mean()) if away.any() else float("nan")
        count = int(compared.sum())
        attrs["agreement_away_from_boundary"] = float(agree[compared].mean()) if count else float("nan")
        attrs["points_away_from_boundary"] = count
    attrs.update({
        "title": f"fluidcc stability map of {spec.model}",
        "model": spec.model,
        "model_description": entry.description,
        "method": method,
        **stamp(),
        "command": command,
        "fixed_parameters_si": json.dumps({**{k: v for k, v in entry.defaults().items() if k not in dims},
                                           **spec.fixed}, sort_keys=True),
        "spec_json": spec.to_json(),
    })
    dataset = xr.Dataset(data, coords=coords, attrs=attrs)
    if out_dir is not None:
        target = Path(out_dir) / "stability.nc"
        target.parent.mkdir(parents=True, exist_ok=True)
        dataset.to_netcdf(target.with_suffix(".tmp.nc"), engine="scipy")
        target.with_suffix(".tmp.nc").replace(target)
    return dataset


def analytic_boundary(spec: SweepSpec, *, max_lines: int = 40) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The D-subdivision boundary of a 2-D plane, for `stability_figure`.

    In closed form where SymPy solves it for the two grid parameters (the curve p1(omega),
    p2(omega), every other parameter at its value in the spec); otherwise numerically along the
    first axis (`fluidcc.stability.symbolic.crossing_values`, first crossing) at up to `max_lines`
    values of the second. Returns {label: (x along the second axis, y along the first)}; empty
    for grids that are not 2-D or models without a symbolic form.
    """
    from ..stability import symbolic

    if len(spec.axes) != 2:
        return {}
    entry = single_link_model(spec.model)
    values = spec.values()
    system, params = entry.aggregate({n: v[:1] for n, v in values.items()})
    try:
        model = symbolic.symbolic_model(system, params)
    except symbolic.SymbolicError:
        return {}
    first, second = (entry.parameter(a.name) for a in spec.axes)
    fixed = {entry.parameter(n).field_name: float(v[0]) for n, v in values.items()
             if n not in (first.name, second.name)}
    y_range = (min(spec.axes[0].values), max(spec.axes[0].values))
    x_range = (min(spec.axes[1].values), max(spec.axes[1].values))
    try:
        curve = symbolic.d_subdivision(model, (first.field_name, second.field_name))
    except (symbolic.SymbolicError, NotImplementedError):
        curve = None
    if curve is not None:
        delay = fixed.get(entry.parameter(entry.delay_parameter).field_name, 1.0)
        omega = np.linspace(1e-4, 2.0 * np.pi, 4000) / delay
        ys, xs = curve.evaluate(omega, fixed)
        inside = (ys >= y_range[0]) & (ys <= y_range[1]) & (xs >= x_range[0]) & (xs <= x_range[1])
        ys, xs = np.where(inside, ys, np.nan), np.where(inside, xs, np.nan)
        return {"D-subdivision (SymPy, closed form)": (xs, ys)}
    xs = np.asarray(spec.axes[1].values)
    if len(xs) > max_lines:
        xs = xs[np.linspace(0, len(xs) - 1, max_lines).round().astype(int)]
    ys = []
    for x in xs:
        point = {**fixed, second.field_name: float(x)}
        delay = point.get(entry.parameter(entry.delay_parameter).field_name, 1.0)
        crossings = symbolic.crossing_values(model, first.field_name, point, omega_max=2.0 * np.pi / delay,
                                             samples=2000)
        crossings = crossings[(crossings >= y_range[0]) & (crossings <= y_range[1])]
        ys.append(crossings[0] if crossings.size else np.nan)
    return {"D-subdivision (SymPy, numerical)": (xs, np.asarray(ys))}
