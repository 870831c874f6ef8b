"""Packet studies through the batch layer: two scenario files x 50 seeds, in process and on a Dask
LocalCluster of 2 workers, stored in Zarr; runs/s, peak memory per worker, the same results bit for
bit, and the means over the seeds with their 95 % intervals.

The two studies are the example scenarios, shortened by a one-value grid axis (so the store records
the change): `examples/scenarios/tcp_dumbbell.toml` (50 long-lived TCP NewReno flows, 100 Mb/s,
RTPD 80 ms) with ``duration=--tcp-duration`` and `examples/scenarios/rcp_fct.toml` (RCP, Pareto
flows at load 0.9 on 40 Mb/s) with ``duration`` and ``workload.arrivals`` both ``--rcp-duration``.
Each is run over ``seeds=1:--seeds`` in chunks of `--chunk-runs` runs (a chunk is one batch of the
exact engine), first in process, then on 2 workers, each into its own ``study.zarr``; the two
stores are then compared variable by variable (bit for bit, NaN equal to NaN).

Run from the repository root, e.g.

    PYTHONPATH=src python benchmarks/packet_study.py --seeds 50 --out packet_study.json
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

import numpy as np
import xarray as xr

from _harness import peak_rss_mib, same_zarr, timed, write_dask_result

from fluidcc.sweep import PacketStudy, cluster, run_packet_study

ROOT = Path(__file__).resolve().parent.parent
SCENARIOS = ROOT / "examples" / "scenarios"


def means(dataset: xr.Dataset) -> dict:
    """Each headline number's mean over the seeds and the half-width of its 95 % interval
    (normal, from the seeds' standard deviation), over the runs that completed (status 0), as
    `fluidcc packet --grid` counts them."""
    out = {}
    ok = dataset["status"] == 0
    for name, variable in dataset.data_vars.items():
        if not np.issubdtype(variable.dtype, np.floating):
            continue
        for label, column in ([(name, variable)] if "link" not in variable.dims else
                              [(f"{name}[{link}]", variable.sel(link=link)) for link in variable.link.values]):
            values = column.where(ok).values.reshape(-1)
            values = values[np.isfinite(values)]
            if values.size:
                half = 1.96 * values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
                out[label] = {"mean": float(values.mean()), "ci95_half": float(half), "runs": int(values.size)}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=50)
    parser.add_argument("--tcp-duration", default="5s")
    parser.add_argument("--rcp-duration", default="10s")
    parser.add_argument("--chunk-runs", type=int, default=10)
    parser.add_argument("--out", default="packet_study.json")
    args = parser.parse_args()
    studies = {
        "tcp_dumbbell": PacketStudy.from_file(SCENARIOS / "tcp_dumbbell.toml",
                                              [f"duration={args.tcp_duration}", f"seeds=1:{args.seeds}"]),
        "rcp_fct": PacketStudy.from_file(SCENARIOS / "rcp_fct.toml",
                                         [f"duration={args.rcp_duration}", f"workload.arrivals={args.rcp_duration}",
                                          f"seeds=1:{args.seeds}"]),
    }
    root = Path(tempfile.mkdtemp(prefix="fluidcc-packet-study-"))
    runs, checks, figures = [], {}, {}
    try:
        for label, study in studies.items():
            for name, workers in (("in process", None), ("2 workers", 2)):
                folder = root / f"{label}-{name.replace(' ', '_')}"
                with cluster(workers=workers) as client:
                    dataset, wall = timed(lambda: run_packet_study(study, folder, chunk_runs=args.chunk_runs,
                                                                   client=client))
                    peaks = sorted(client.run(peak_rss_mib).values()) if client is not None else []
                n = int(np.prod(study.shape))
                statuses = [int(s) for s in np.unique(dataset.status.values)]
                row = {"study": label, "configuration": name, "runs": n, "wall_s": wall, "runs_per_s": n / wall,
                       "worker_peak_rss_mib": peaks, "failed_chunks": dataset.attrs["chunks_failed"],
                       "statuses": statuses}
                runs.append(row)
                print(f"{label:>13} {name:>10}: {n} runs in {wall:.1f} s, {n / wall:.2f} runs/s; statuses {statuses}; "
                      f"failed chunks {row['failed_chunks']}; worker peak RSS {peaks} MiB", flush=True)
                if workers is None:
                    figures[label] = means(dataset)
            checks[f"{label}: 2 workers == in process"] = same_zarr(root / f"{label}-in_process" / "study.zarr",
                                                                    root / f"{label}-2_workers" / "study.zarr")
        for label, table in figures.items():
            print(label)
            for name, row in table.items():
                print(f"  {name:32s} {row['mean']:12.5g} ± {row['ci95_half']:.3g}  ({row['runs']} runs)")
        write_dask_result(args.out, checks, chunk_runs=args.chunk_runs, runs=runs, means=figures,
                          studies={k: {"axes": [[a.key, list(a.values)] for a in s.axes], "seeds": len(s.seeds)}
                                   for k, s in studies.items()})
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
