"""Single runs of the fluid models: one point of a protocol's single-link model, or its per-flow
model on a `Network` beside the max-min allocation, each as an xarray dataset with provenance,
and the files and tables made from them.

* `simulate(model, values, rtts, duration_s=...)`: one point of a single-link model.
* `simulate_network(model, network, values, duration_s=...)`: a run on a network; `settling_times`
  per phase; `network_model` the (system, params, values) it integrates.
* `write_timeseries(dataset, out_dir, fmt)`: the run as NetCDF or CSV (one column per series).
* `final_rates(dataset)`, `final_links(dataset, network)`, `settling_rows(dataset, tolerance)`:
  the tables of a network run.
"""

from ._network import network_model as network_model
from ._network import settling_times as settling_times
from ._network import simulate_network as simulate_network
from ._output import final_links as final_links
from ._output import final_rates as final_rates
from ._output import settling_rows as settling_rows
from ._output import write_timeseries as write_timeseries
from ._provenance import provenance as provenance
from ._single_link import simulate as simulate

__all__ = ["final_links", "final_rates", "network_model", "provenance", "settling_rows", "settling_times",
           "simulate", "simulate_network", "write_timeseries"]
