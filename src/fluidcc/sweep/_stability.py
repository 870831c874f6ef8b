"""Stability maps over a parameter grid: linear (characteristic roots), simulated, or both.

The linear map linearizes the model at its equilibrium at every grid point (automatic
differentiation of the model's vector field, `fluidcc.stability.linearize`) and computes the
rightmost characteristic roots (`fluidcc.stability.linear`); a point is linearly stable when the
spectral abscissa is negative. The simulated map is `run_sweep`'s classification. With both, the
dataset records where they agree, away from the linear boundary.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Callable

import jax
import numpy as np
import xarray as xr

from .._version import __version__
from ..errors import ParameterError
from ..models import get_model
from ..stability.classify import Behaviour, Thresholds
from ..stability.linearize import linear_roots
from ._runner import run_sweep
from ._spec import SweepSpec

METHODS = ("linear", "simulate", "both")

#: Points are "near the boundary" when the linear verdict changes within this fraction of an
#: axis' grid (in grid steps, rounded up) in either direction along any axis.
BOUNDARY_MARGIN = 0.02

#: Grid points per linear batch (memory bound and progress granularity).
LINEAR_CHUNK_POINTS = 8192


def linear_map(
    spec: SweepSpec, *, progress: Callable[[int, int], None] | None = None, chunk_points: int = LINEAR_CHUNK_POINTS
) -> dict[str, np.ndarray]:
    """Linear stability of every grid point; flat arrays in grid (C) order.

    Returns abscissa (1/s), frequency (|Im| of the rightmost root, rad/s), stable (bool),
    converged (bool), nodes (Chebyshev nodes used) and equilibrium_residual (1/s).
    """
    entry = get_model(spec.model)
    values = spec.values()
    entry.aggregate(values)  # validate the whole grid first
    out = {name: [] for name in ("abscissa", "frequency", "stable", "converged", "nodes", "equilibrium_residual")}
    for lo in range(0, spec.size, chunk_points):
        hi = min(spec.size, lo + chunk_points)
        system, params = entry.aggregate({n: v[lo:hi] for n, v in values.items()})
        lin, roots = linear_roots(system, params, guarantee_from=0.0)
        out["abscissa"].append(roots.abscissa)
        out["frequency"].append(np.abs(roots.rightmost.imag))
        out["stable"].append(roots.stable)
        out["converged"].append(roots.converged)
        out["nodes"].append(roots.nodes)
        out["equilibrium_residual"].append(lin.residual)
        if progress is not None:
            progress(hi, spec.size)
    return {name: np.concatenate(parts) for name, parts in out.items()}


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
) -> xr.Dataset:
    """Linear and/or simulated stability map of `spec`; writes OUT/stability.nc when out_dir is given.

    progress(stage, done, total) is called with stage "linear" or "simulate".
    """
    if method not in METHODS:
        raise ParameterError("--method", method, f"one of {', '.join(METHODS)}")
    entry = get_model(spec.model)
    dims = tuple(a.name for a in spec.axes)
    coords = {a.name: (a.name, np.asarray(a.values), {"units": entry.parameter(a.name).unit, "grid": a.text})
              for a in spec.axes}
    data: dict = {}
    attrs: dict = {}
    if method in ("linear", "both"):
        lin = linear_map(spec, progress=(lambda d, t: progress("linear", d, t)) if progress else None)
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
        sim = run_sweep(
            spec, Path(out_dir) / "simulation" if out_dir is not None else None, thresholds=thresholds,
            progress=(lambda d, t: progress("simulate", d, t)) if progress else None, command=command,
        )
        for name in sim.data_vars:
            data[name] = sim[name]
        attrs.update({k: v for k, v in sim.attrs.items() if k not in ("title", "created", "command")})
    if method == "both":
        settled = np.isin(data["behaviour"].values, [int(Behaviour.CONVERGED), int(Behaviour.CONVERGING)])
        linear = data["linear_stable"][1]
        resolved = (linear >= 0) & (data["near_boundary"][1] == 0)
        agree = (linear == 1) == settled
        data["agree"] = (dims, np.where(linear >= 0, agree, False).astype(np.int8), {
            "long_name": "linear verdict (stable) equals simulated (converged or converging)"})
        count = int(resolved.sum())
        attrs["agreement_away_from_boundary"] = float(agree[resolved].mean()) if count else float("nan")
        attrs["points_away_from_boundary"] = count
    attrs.update({
        "title": f"fluidcc stability map of {spec.model}",
        "model": spec.model,
        "model_description": entry.description,
        "method": method,
        "fluidcc_version": __version__,
        "jax_version": jax.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
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
