"""Memory of fluidcc's DDE engine as the batch grows to 10^6 points: the chunks keep it bounded.

The points are those of `dde_throughput.py` (eq. (14) of the VCP paper at random kappa, T, C, N,
alpha = 1, gamma = 0.98). Each configuration runs in a fresh Python process, which

1. builds the parameter batch and the save grid,
2. solves the whole batch once, so that every kernel the measured solve uses is compiled and
   loaded (the refinement's kernels depend on how many points reach each rung), and drops that
   solution,
3. returns the memory the allocator kept from that solve to the system (malloc_trim), resets the
   process's peak resident memory (/proc/self/clear_refs), reads the resident memory (the
   baseline), solves the whole batch again and reads the peak (VmHWM).

The growth of the peak during the second solve, less the memory the `Solution` must hold anyway
(saves, save times unless they are the caller's own array, error estimates, statuses, messages:
"output"), is the engine's working memory. The devices hold chunks of a bounded number of points;
what grows with the batch beyond the output is the host's bookkeeping per point. Memory is given
in MiB.

Run from the repository root, e.g.

    PYTHONPATH=src python benchmarks/dde_memory.py --out dde_memory.json
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import subprocess
import sys

import numpy as np

from _dde_points import draw_points, params_of, save_grid
from _harness import Table, machine_info, timed, write_json

CONFIGS = {
    # name: (method, keyword arguments of solve, RTTs integrated, saves: "final" or "per-rtt")
    "chebyshev 1x16": ("chebyshev", {"nodes": 16}, 250, "final"),
    "chebyshev rtol 1e-6": ("chebyshev", {"nodes": 8, "rtol": 1e-6}, 250, "final"),
    "rk4 M=32": ("rk4", {"steps_per_delay": 32}, 50, "final"),
    "chebyshev 1x16 saved every 10 RTTs": ("chebyshev", {"nodes": 16}, 250, "per-10-rtts"),
}


def _memory_bytes(field: str) -> int:
    """A field of /proc/self/status in bytes: VmRSS (resident now) or VmHWM (peak since the last
    reset)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status (this benchmark needs Linux)")


def _reset_peak() -> None:
    """Set the peak resident memory (VmHWM) to the current one."""
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")


def worker(name: str, size: int, seed: int) -> dict:
    from fluidcc.dde import solve
    from fluidcc.models import MIAIMDAggregate

    method, kwargs, rtts, saves = CONFIGS[name]
    points = draw_points(size, seed)
    params = params_of(points)
    t_final = rtts * points["rtt_s"]
    grid = None if saves == "final" else save_grid(points["rtt_s"], rtts, every=10)
    system = MIAIMDAggregate()

    solve(system, params, t_final, grid, method=method, **kwargs)  # compiles and loads every kernel
    gc.collect()
    ctypes.CDLL("libc.so.6").malloc_trim(0)  # else the second solve reuses what the first one freed
    _reset_peak()
    baseline = _memory_bytes("VmRSS")
    solution, wall = timed(lambda: solve(system, params, t_final, grid, method=method, **kwargs))
    peak = _memory_bytes("VmHWM")
    held = (solution.ys, solution.ts, solution.status, solution.messages, solution.steps_per_delay,
            solution.error_estimate, *solution.info.values())
    # the save times are the caller's own grid when given per point (no copy): not counted again
    output = sum(a.nbytes for a in held if isinstance(a, np.ndarray) and not (grid is not None
                                                                              and np.shares_memory(a, grid)))
    # an object array holds pointers; the strings themselves, once each (the '' of every ok point is one)
    output += sum(sys.getsizeof(m) for m in {id(m): m for m in solution.messages}.values())
    return {"config": name, "points": size, "wall_s": wall, "baseline_bytes": baseline, "peak_bytes": peak,
            "growth_bytes": peak - baseline, "output_bytes": output,
            "working_bytes": peak - baseline - output,
            "statuses": {str(k): int(v) for k, v in zip(*np.unique(np.asarray(solution.status), return_counts=True))}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,100000,1000000", help="batch sizes, comma-separated")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="configurations, comma-separated: "
                        + "; ".join(CONFIGS))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None, help="write the results as JSON here")
    parser.add_argument("--worker", nargs=2, metavar=("CONFIG", "SIZE"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(args.worker[0], int(args.worker[1]), args.seed)))
        return

    names = [n.strip() for n in args.configs.split(",") if n.strip()]
    for name in names:
        if name not in CONFIGS:
            parser.error(f"--configs: unknown configuration {name!r}; allowed: {', '.join(CONFIGS)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    machine = {**machine_info(), "node": platform.node(), "cpus": os.cpu_count()}
    print(f"{machine['node']} {machine['processor']}, {machine['cpus']} CPUs")
    table = Table("{:<38} {:>9} {:>7} {:>12} {:>10} {:>10} {:>11}", "configuration", "points", "wall s",
                  "baseline MiB", "growth MiB", "output MiB", "working MiB")
    print(table.header())
    for name in names:
        for size in sizes:
            done = subprocess.run([sys.executable, os.path.abspath(__file__), "--seed", str(args.seed),
                                   "--worker", name, str(size)], capture_output=True, text=True, check=True)
            row = json.loads(done.stdout.strip().splitlines()[-1])
            results.append(row)
            mib = [f"{row[key] / 2**20:.0f}" for key in ("baseline_bytes", "growth_bytes", "output_bytes",
                                                          "working_bytes")]
            print(table.row(name, size, f"{row['wall_s']:.1f}", *mib), flush=True)
    write_json(args.out, {"machine": machine, "results": results})


if __name__ == "__main__":
    main()
