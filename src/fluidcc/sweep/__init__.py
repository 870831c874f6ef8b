"""Parameter sweeps: grid specification, chunked resumable runner, NetCDF storage."""

from ._runner import run_sweep as run_sweep
from ._simulate import simulate as simulate
from ._spec import GRID_FORMAT as GRID_FORMAT
from ._spec import GridAxis as GridAxis
from ._spec import SweepSpec as SweepSpec
from ._spec import parse_grid as parse_grid
from ._spec import parse_set as parse_set

__all__ = ["GRID_FORMAT", "GridAxis", "SweepSpec", "parse_grid", "parse_set", "run_sweep", "simulate"]
