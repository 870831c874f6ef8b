"""Parameter sweeps: grid specification, chunked resumable runner, NetCDF storage."""

from ._network import NETWORK_MODELS as NETWORK_MODELS
from ._network import network_model as network_model
from ._network import settling_times as settling_times
from ._network import simulate_network as simulate_network
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
    "NETWORK_MODELS", "network_model", "settling_times", "simulate_network", "GRID_FORMAT", "STABILITY_METHODS", "GridAxis", "SweepSpec", "analytic_boundary", "linear_map", "parse_grid", "parse_set",
    "run_stability", "run_sweep", "simulate",
]
