"""Parameter sweeps: grid specification, chunked resumable runner, NetCDF storage."""

from ._runner import run_sweep as run_sweep
from ._simulate import simulate as simulate
from ._spec import GRID_FORMAT as GRID_FORMAT
from ._spec import GridAxis as GridAxis
from ._spec import SweepSpec as SweepSpec
from ._spec import parse_grid as parse_grid
from ._spec import parse_set as parse_set
from ._stability import METHODS as STABILITY_METHODS
from ._stability import analytic_boundary as analytic_boundary
from ._stability import linear_map as linear_map
from ._stability import run_stability as run_stability

__all__ = [
    "GRID_FORMAT", "STABILITY_METHODS", "GridAxis", "SweepSpec", "analytic_boundary", "linear_map", "parse_grid", "parse_set",
    "run_stability", "run_sweep", "simulate",
]
