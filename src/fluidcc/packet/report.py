"""What a packet scenario's run becomes: the per-flow table, the summary, the files and figures.

They read the dataset of the exact engine (`fluidcc.packet.simulate_exact`, through
`fluidcc.packet.scenario.run_scenario`): its per-run ``status`` and ``message`` are in the summary,
and every run whose status is not 0 is listed there (``failed_runs``).
"""

from __future__ import annotations

import json
import math
import numbers
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

#: Files `write_outputs` writes (afct.png only when there are flows of finite size).
OUTPUT_FILES = ("run.nc", "flows.csv", "summary.json", "afct.png", "link.png")


class Outputs(NamedTuple):
    """What `write_outputs` wrote (paths) and the summary it wrote to summary.json."""

    paths: list[Path]
    summary: dict


def flow_frame(dataset):
    """One row per flow and run (padding left out), as a pandas DataFrame.

    Columns: run, seed, flow, route (the network flow's name), start_s, size_packets (inf:
    long-lived), fct_s (NaN: unfinished), sent, delivered, dropped, received, duplicates (data
    packets), and for Poisson workloads slowdown (fct / processor-sharing fct, `metrics.slowdown`, with the
    dataset's offered_load, bottleneck_capacity_pps and rtpd_s).
    """
    import pandas as pd

    from . import metrics

    names = json.loads(dataset.attrs["flow_names"])
    route = dataset["route_index"].values
    real = route >= 0
    runs, flows = np.nonzero(real)
    frame = pd.DataFrame({
        "run": runs, "seed": dataset["seed"].values[runs], "flow": dataset["flow"].values[flows],
        "route": [names[i] for i in route[real]],
        "start_s": dataset["start"].values[real], "size_packets": dataset["size"].values[real],
        "fct_s": dataset["fct"].values[real],
    })
    for name in ("sent", "delivered", "dropped", "received", "duplicates"):
        frame[name] = dataset[name].values[real]
    reference = _reference(dataset)
    if reference is not None:
        size = frame["size_packets"].to_numpy()
        value = np.full(len(frame), np.nan)
        finite = np.isfinite(size)
        if finite.any():
            value[finite] = metrics.slowdown(frame["fct_s"].to_numpy()[finite], size[finite], *reference)
        frame["slowdown"] = value
    return frame


def summarize(dataset) -> dict:
    """Headline numbers per run and over the runs, as a JSON-ready dict (NaN becomes None).

    Per run: seed; status (0: ok) and message (the engine's: a run that stopped early counts up
    to where it stopped); flows (of finite size), finished, unfinished, long_lived; afct_s; per
    link utilization (the bytes whose service began during the run, in data packets, over the
    packets its capacity, schedule included, could send in the run: `metrics.link_capacity_packets`),
    mean_queue_packets (packets waiting, the one in service not counted, time-averaged) and
    link_drop_rate (dropped / arrived at the link: data, SYNs and ACKs); drop_rate (the flows'
    data packets dropped / sent); for long-lived flows mean_throughput_pps and jain_fairness
    (goodput: packets received in order, once, / time between start and stop or the end); for
    Poisson workloads mean_slowdown, sample_load (the sizes that arrived / (capacity x arrival
    window)) and afct_by_size (`metrics.afct_by_size` with the M/G/1-PS reference ps_afct_s, and
    sample_ps_afct_s: the mean `metrics.ps_fct_of` of the run's own arrivals over the same
    finished flows). "mean": the runs' numbers averaged (status left out); its afct_by_size pools
    the runs' flows. Top level: the scenario's and the engine's settings (step_s, lookahead_s,
    pool_size, receiver_runs, lanes) and failed_runs, the runs whose status is not 0 (run, seed, status,
    message; empty when every run is ok).
    """
    from . import metrics

    from ..network import Network

    reference = _reference(dataset)
    links = [str(name) for name in dataset["link"].values]
    interval = float(dataset["sample_time"].values[0])
    end = float(dataset.attrs["duration_s"])
    could_send = metrics.link_capacity_packets(Network.from_dict(json.loads(dataset.attrs["network"])), [0.0, end])[0]
    runs, pooled = [], {"size": [], "fct": [], "sample_ps": []}
    for r in range(dataset.sizes["run"]):
        real = dataset["route_index"].values[r] >= 0
        start, size = dataset["start"].values[r][real], dataset["size"].values[r][real]
        fct, received = dataset["fct"].values[r][real], dataset["received"].values[r][real].astype(float)
        stop = dataset["stop"].values[r][real] if "stop" in dataset else np.full(start.shape, np.inf)
        finite = np.isfinite(size)
        finished = finite & np.isfinite(fct)
        served = dataset["served"].values[r].sum(axis=0)
        arrived = dataset["link_arrived"].values[r].astype(float)
        link_dropped = dataset["link_dropped"].values[r].astype(float)
        sent = float(dataset["sent"].values[r][real].sum())
        row: dict[str, Any] = {
            "run": r, "seed": int(dataset["seed"].values[r]), "status": int(dataset["status"].values[r]),
            "message": str(dataset["message"].values[r]),
            "flows": int(finite.sum()), "finished": int(finished.sum()), "unfinished": int((finite & ~finished).sum()),
            "long_lived": int((~finite).sum()),
            "afct_s": float(np.mean(fct[finished])) if finished.any() else math.nan,
            "utilization": dict(zip(links, (served / could_send).tolist())),
            "mean_queue_packets": dict(zip(links, dataset["queue_mean"].values[r].tolist())),
            "link_drop_rate": dict(zip(links, np.divide(link_dropped, arrived, out=np.zeros_like(arrived),
                                                        where=arrived > 0).tolist())),
            "drop_rate": float(dataset["dropped"].values[r][real].sum()) / sent if sent > 0 else 0.0,
        }
        if (~finite).any():
            until = np.minimum(np.where(np.isfinite(stop), stop, end), end)[~finite]
            with np.errstate(invalid="ignore", divide="ignore"):
                throughput = received[~finite] / (until - start[~finite])  # goodput: in order, once
            throughput = throughput[np.isfinite(throughput)]
            row["mean_throughput_pps"] = float(np.mean(throughput)) if throughput.size else math.nan
            row["jain_fairness"] = (float(metrics.jain_fairness(throughput))
                                    if throughput.size and np.any(throughput > 0) else math.nan)
        if reference is not None and finite.any():
            capacity, load, rtpd = reference
            row["mean_slowdown"] = metrics.summary(start[finite], start[finite] + fct[finite], size[finite],
                                                   received[finite], end_s=end, capacity_pps=capacity, load=load,
                                                   rtpd_s=rtpd)["mean_slowdown"]
            window = float(dataset.attrs.get("arrival_window_s", end))
            row["sample_load"] = float(size[finite].sum() / (capacity * window))
            sample_ps = np.where(finished[finite], metrics.ps_fct_of(start[finite], size[finite], capacity, rtpd),
                                 np.nan)
            row["afct_by_size"] = _bins(size[finite], fct[finite], sample_ps, reference)
            pooled["size"].append(size[finite])
            pooled["fct"].append(fct[finite])
            pooled["sample_ps"].append(sample_ps)
        runs.append(row)
    mean = _mean_of(runs)
    if pooled["size"]:
        mean["afct_by_size"] = _bins(*(np.concatenate(pooled[k]) for k in ("size", "fct", "sample_ps")), reference)
    attrs = dataset.attrs
    failed = [{key: row[key] for key in ("run", "seed", "status", "message")} for row in runs if row["status"] != 0]
    return _json_ready({
        "protocol": attrs.get("protocol"), "protocol_settings": json.loads(attrs.get("protocol_settings", "{}")),
        "workload_kind": attrs.get("workload_kind"), "workload_route": attrs.get("workload_route"),
        "bottleneck_link": attrs.get("bottleneck_link"),
        "bottleneck_capacity_pps": attrs.get("bottleneck_capacity_pps"), "offered_load": attrs.get("offered_load"),
        "rtpd_s": attrs.get("rtpd_s"), "duration_s": end, "step_s": attrs.get("step_s"),
        "lookahead_s": attrs.get("lookahead_s"), "pool_size": attrs.get("pool_size"),
        "receiver_runs": attrs.get("receiver_runs"), "lanes": attrs.get("lanes"), "sample_interval_s": interval,
        "seeds": [int(s) for s in dataset["seed"].values], "failed_runs": failed,
        "scenario_file": attrs.get("scenario_file"), "command": attrs.get("command"),
        "fluidcc_version": attrs.get("fluidcc_version"), "created": attrs.get("created"), "wall_s": attrs.get("wall_s"),
        "runs": runs, "mean": mean,
    })


def write_outputs(dataset, scenario, out_dir: str | Path) -> Outputs:
    """Write a `run_scenario` dataset to `out_dir` (created): run.nc (the dataset, NetCDF 3),
    flows.csv (`flow_frame`), summary.json (`summarize`), afct.png (AFCT against flow size with
    the processor-sharing references; only with flows of finite size) and link.png (utilization
    and queue of every link over time). Returns the paths written and the summary, whose
    failed_runs lists the runs whose status is not 0 (their files are written all the same).

    The dataset's attributes are completed from `scenario` if it did not come from `run_scenario`.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    dataset = dataset.copy()
    for key, value in scenario.attributes().items():
        dataset.attrs.setdefault(key, value)
    paths = []
    target = out / "run.nc"
    dataset.to_netcdf(target, engine="scipy")
    paths.append(target)
    target = out / "flows.csv"
    flow_frame(dataset).to_csv(target, index=False)
    paths.append(target)
    summary = summarize(dataset)
    target = out / "summary.json"
    target.write_text(json.dumps(summary, indent=2, allow_nan=False) + "\n")
    paths.append(target)
    if np.any(np.isfinite(dataset["size"].values)):
        paths.append(afct_figure(dataset, summary, out / "afct.png"))
    paths.append(link_figure(dataset, out / "link.png"))
    return Outputs(paths, summary)


def afct_figure(dataset, summary: dict, path: str | Path) -> Path:
    """The run's AFCT against flow size (`fluidcc.plotting.packet_afct_figure`), written to `path`."""
    from ..plotting import packet_afct_figure

    bins = [row for row in summary["mean"].get("afct_by_size", []) if row["flows"] > 0]
    packet_afct_figure(dataset, bins, _reference(dataset), path)
    return Path(path)


def link_figure(dataset, path: str | Path) -> Path:
    """The links' utilization and queue over time (`fluidcc.plotting.packet_links_figure`), written to `path`."""
    from ..plotting import packet_links_figure

    packet_links_figure(dataset, path)
    return Path(path)


def _reference(dataset):
    """(capacity_pps, load, rtpd_s) of the processor-sharing comparison, or None."""
    attrs = dataset.attrs
    load = attrs.get("offered_load")
    if attrs.get("workload_kind") != "poisson" or load is None or not np.isfinite(load):
        return None
    return float(attrs["bottleneck_capacity_pps"]), float(load), float(attrs["rtpd_s"])




def _bins(size, fct, sample_ps, reference) -> list[dict]:
    from . import metrics

    capacity, load, rtpd = reference
    frame = metrics.afct_by_size(size, fct, capacity_pps=capacity, load=load, rtpd_s=rtpd)
    # the same bins (the sizes are the same); the sample's PS times of the finished flows
    frame["sample_ps_afct_s"] = metrics.afct_by_size(size, sample_ps)["afct_s"].to_numpy()
    frame = frame.astype({"flows": int, "unfinished": int, "enough": bool})
    return frame.to_dict(orient="records")


def _mean_of(runs: list[dict]) -> dict:
    mean: dict[str, Any] = {}
    for key, value in runs[0].items():
        if key in ("run", "seed", "status", "afct_by_size"):
            continue
        if isinstance(value, dict):
            mean[key] = {k: float(np.nanmean([r[key][k] for r in runs])) if any(
                np.isfinite(r[key][k]) for r in runs) else math.nan for k in value}
        elif isinstance(value, numbers.Real):
            values = [float(r[key]) for r in runs if key in r]
            mean[key] = float(np.nanmean(values)) if any(np.isfinite(values)) else math.nan
    return mean


def _json_ready(value):
    if isinstance(value, dict):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    if isinstance(value, (numbers.Real, np.floating)):
        return float(value) if math.isfinite(value) else (None if math.isnan(value) else str(float(value)))
    return value

