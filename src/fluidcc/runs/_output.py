"""What a run's dataset becomes outside Python: a time-series file and the tables of a network run."""

from __future__ import annotations

import math
from pathlib import Path

import xarray as xr

from ..errors import ParameterError
from ..network import Network
from ..units import pps_to_mbps
from ._network import settling_times

#: Formats `write_timeseries` writes.
TIMESERIES_FORMATS = ("netcdf", "csv")

_LINK_SERIES = ("utilization", "load", "queue", "offered_rate", "flow_estimate")


def write_timeseries(dataset: xr.Dataset, out_dir: str | Path, fmt: str = "netcdf") -> Path:
    """Write a run (`simulate` or `simulate_network`) to OUT_DIR/timeseries.nc or .csv; returns the path.

    CSV has one row per save time and one column per series: `NAME_FLOW` per flow (windows and
    rates; a network run's rates against max-min), `NAME_LINK` per link, plain names for the rest.
    """
    if fmt not in TIMESERIES_FORMATS:
        raise ParameterError("fmt", fmt, f"one of {', '.join(TIMESERIES_FORMATS)}")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    if fmt == "netcdf":
        path = out_dir / "timeseries.nc"
        dataset.to_netcdf(path, engine="scipy")
        return path
    path = out_dir / "timeseries.csv"
    if "maxmin_rate" in dataset:  # a run on a network
        columns = dataset.reset_coords(drop=True)  # rtt, capacity: constants, not time series
        per_flow = _by(columns[["rate", "maxmin_rate", "rate_over_maxmin"]].to_dataframe(), "flow")
        per_link = _by(columns[[n for n in _LINK_SERIES if n in dataset]].to_dataframe(), "link")
        per_flow.join(per_link).to_csv(path)
    elif "window" in dataset:  # a window per flow
        frame = _by(dataset[["window", "rate"]].to_dataframe(), "flow")
        for name in dataset.data_vars:
            if dataset[name].dims == ("time",):
                frame[name] = dataset[name].values
        frame.to_csv(path)
    else:
        dataset[[n for n in dataset.data_vars if dataset[n].dims == ("time",)]].to_dataframe().to_csv(path)
    return path


def _by(frame, dimension: str):
    """A long frame indexed by (time, dimension) as one column per (series, member)."""
    frame = frame.unstack(dimension)
    frame.columns = [f"{name}_{member}" for name, member in frame.columns]
    return frame


def final_rates(dataset: xr.Dataset) -> list[dict]:
    """Per flow of a network run, at its last save: rate and max-min rate (packets/s and Mb/s, in
    the network's packet size) and their ratio (None where the flow does not send)."""
    packet_bytes = int(dataset.attrs["packet_bytes"])
    rows = []
    for i, name in enumerate(dataset["flow"].values):
        rate = float(dataset["rate"].values[-1, i])
        fair = float(dataset["maxmin_rate"].values[-1, i])
        rows.append({"flow": str(name), "rate_pps": rate, "maxmin_pps": fair,
                     "rate_mbps": pps_to_mbps(rate, packet_bytes), "maxmin_mbps": pps_to_mbps(fair, packet_bytes),
                     "ratio": rate / fair if fair > 0 else None})
    return rows


def final_links(dataset: xr.Dataset, network: Network) -> list[dict]:
    """Per link of an explicit-rate network run (RCP, QCP), at its last save: the offered rate,
    the router's estimate of its number of flows, the flows sending through it, utilization, queue."""
    if "flow_estimate" not in dataset:
        return []
    sending = (dataset["rate"].values[-1] > 0).astype(float)
    counts = network.routing_matrix @ sending
    rows = []
    for l, name in enumerate(dataset["link"].values):
        offered = float(dataset["offered_rate"].values[-1, l])
        rows.append({"link": str(name), "offered_pps": offered,
                     "offered_mbps": pps_to_mbps(offered, network.packet_bytes),
                     "flow_estimate": float(dataset["flow_estimate"].values[-1, l]), "flows_sending": float(counts[l]),
                     "utilization": float(dataset["utilization"].values[-1, l]),
                     "queue_packets": float(dataset["queue"].values[-1, l])})
    return rows


def settling_rows(dataset: xr.Dataset, tolerance: float) -> list[dict]:
    """`settling_times` with each phase's stop cut at the end of the run and None for never settled."""
    end = float(dataset["time"].values[-1])
    return [dict(row, stop_s=min(row["stop_s"], end),
                 settling_s=row["settling_s"] if math.isfinite(row["settling_s"]) else None)
            for row in settling_times(dataset, tolerance=tolerance)]
