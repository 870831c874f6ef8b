"""A MIAIMD sweep in process and on a Dask LocalCluster of 1 and 2 workers: points/s, peak memory
per worker, and the same results bit for bit.

The grid: kappa x RTT x N (`--kappa`, `--rtt`, `--flows` points: 0.05-2, 10 ms-1 s log, 10-1000
log), C = 150 Mb/s, `--horizon-rtts` RTTs, chunks of `--chunk-points`; the sweep's defaults
otherwise (solver auto: Chebyshev, rtol 1e-5 as the command line). Each configuration writes its
own Zarr store; the stores are then compared variable by variable (bit for bit, NaN equal to NaN).

Order: in process first (it also fills JAX's persistent compilation cache, so every configuration
after it loads its kernels instead of compiling them; the in-process time is therefore given
twice, the first run and a second one with the cache filled), then 1 worker, then 2 workers.
Peak resident memory: of each worker process (its VmHWM, read on the worker at the end) and of
this process. `--also-quarter` runs the sweep at a quarter of the kappa points too, so that the
peaks of a grid and of one 4x as large (4x the chunks) can be compared.

Run from the repository root, e.g.

    PYTHONPATH=src python benchmarks/sweep_distributed.py --kappa 16 --rtt 16 --flows 16 --chunk-points 512 \
        --also-quarter --out sweep_distributed.json
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from _harness import peak_rss_mib, same_zarr, timed, write_dask_result

from fluidcc.sweep import SweepSpec, cluster, parse_grid, run_sweep


def spec_of(kappa: int, rtt: int, flows: int, horizon: float) -> SweepSpec:
    axes = (parse_grid("miaimd", f"kappa=0.05:2:{kappa}"), parse_grid("miaimd", f"rtt=10ms:1s:{rtt}:log"),
            parse_grid("miaimd", f"flows=10:1000:{flows}:log"))
    return SweepSpec(model="miaimd", axes=axes, fixed={"capacity": 18750.0}, horizon_rtts=horizon, rtol=1e-5,
                     max_steps_per_delay=256)


def measure(spec: SweepSpec, folder: Path, chunk: int, workers: int | None) -> dict:
    with cluster(workers=workers) as client:
        dataset, wall = timed(lambda: run_sweep(spec, folder, chunk_points=chunk, client=client))
        peaks = sorted(client.run(peak_rss_mib).values()) if client is not None else []
    return {"workers": workers or 0, "points": spec.size, "wall_s": wall, "points_per_s": spec.size / wall,
            "worker_peak_rss_mib": peaks, "failed_chunks": dataset.attrs["chunks_failed"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kappa", type=int, default=64)
    parser.add_argument("--rtt", type=int, default=64)
    parser.add_argument("--flows", type=int, default=16)
    parser.add_argument("--horizon-rtts", type=float, default=250.0)
    parser.add_argument("--chunk-points", type=int, default=2048)
    parser.add_argument("--also-quarter", action="store_true", help="also the grid with a quarter of the kappa points")
    parser.add_argument("--out", default="sweep_distributed.json")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="fluidcc-sweep-bench-"))
    runs, checks = [], {}
    try:
        sizes = [args.kappa] + ([max(1, args.kappa // 4)] if args.also_quarter else [])
        for kappa in sizes:
            spec = spec_of(kappa, args.rtt, args.flows, args.horizon_rtts)
            label = f"{kappa}x{args.rtt}x{args.flows}"
            for name, workers in (("in process, first", None), ("in process", None), ("1 worker", 1),
                                  ("2 workers", 2)):
                folder = root / f"{label}-{name.replace(' ', '_').replace(',', '')}"
                row = {"grid": label, "configuration": name, **measure(spec, folder, args.chunk_points, workers)}
                runs.append(row)
                print(f"{label:>12} {name:>18}: {row['points']} points in {row['wall_s']:.1f} s, "
                      f"{row['points_per_s']:.1f} points/s; worker peak RSS {row['worker_peak_rss_mib']} MiB",
                      flush=True)
            reference = root / f"{label}-in_process_first"
            for name in ("in_process", "1_worker", "2_workers"):
                checks[f"{label} {name} == in process"] = same_zarr(reference / "sweep.zarr",
                                                                   root / f"{label}-{name}" / "sweep.zarr")
        write_dask_result(args.out, checks, horizon_rtts=args.horizon_rtts, chunk_points=args.chunk_points, runs=runs)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
