"""Parameter sweeps: grid specification, chunked resumable runner, Zarr store of record (and NetCDF),
chunks run in process or on a Dask cluster (`cluster`).

`simulate`, `simulate_network`, `network_model` and `settling_times` are the single runs of
`fluidcc.runs`, kept here under their earlier names.
"""

from ..runs import network_model as network_model
from ..runs import settling_times as settling_times
from ..runs import simulate as simulate
from ..runs import simulate_network as simulate_network
from ._execute import cluster as cluster
from ._packet import PacketAxis as PacketAxis
from ._packet import PacketStudy as PacketStudy
from ._packet import parse_packet_grid as parse_packet_grid
from ._packet import run_packet_study as run_packet_study
from ._runner import NETCDF_MAX_POINTS as NETCDF_MAX_POINTS
from ._runner import run_sweep as run_sweep
from ._store import ChunkLayout as ChunkLayout
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
    "network_model", "settling_times", "cluster", "ChunkLayout", "NETCDF_MAX_POINTS", "PacketAxis", "PacketStudy",
    "parse_packet_grid", "run_packet_study", "simulate_network", "GRID_FORMAT", "STABILITY_METHODS", "GridAxis",
    "SweepSpec", "analytic_boundary", "linear_map", "parse_grid", "parse_set", "run_stability", "run_sweep",
    "simulate",
]
