"""How long the exact engine takes to compile a run, against the number of links, and whether
runs of other lengths compile again.

For each protocol (TCP, XCP, VCP) and each chain of n links (n = 1, 2, 4, 8; 10 Mb/s and 10 ms
each; one flow across every link and one flow on each link alone), a first `simulate_exact`
call of 2 s with the persistent compilation cache off: the time JAX reports for tracing,
lowering and compiling (`CompileClock`), the number of XLA compilations, and the call's wall
time. Then the same network for 4 s: its compilations (0 when the run's length is an argument of
the program, as the engine's module docstring says, unless a default store had to grow: then
`attempts` > 1 and each size compiles) and wall time.

With `--options`, the compile options instead (`fluidcc._jax_setup.compile_options`, which turn
XLA's newer CPU fusion emitters off for the packet programs): each protocol and chain is compiled
and run with fluidcc's options and with XLA's defaults, alternately, from a cold cache each time
(the kept programs are cleared, the persistent cache is off). For each: the compile time JAX
reports, the wall time of a run of --seconds simulated seconds once compiled (best of three), and
whether the two programs' outputs are the same bit for bit (if not: which differ, and by how much
at most, relative to the value).

Run:

    FLUIDCC_JAX_CACHE= PYTHONPATH=src python benchmarks/packet_compile.py [--links 1 2 4 8] [--out FILE]
    FLUIDCC_JAX_CACHE= PYTHONPATH=src python benchmarks/packet_compile.py --options [--seconds 20]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("FLUIDCC_JAX_CACHE", "")  # cold: every program compiled here, as in CI

from _harness import CompileClock, Table, machine_info, write_json  # noqa: E402

import numpy as np  # noqa: E402

from fluidcc.network import Flow, Link, Network  # noqa: E402
from fluidcc.packet import _run_exact, simulate_exact  # noqa: E402
from fluidcc.packet.exact_protocols import TCP, VCP, XCP  # noqa: E402
from fluidcc.units import mbps_to_pps  # noqa: E402

PROTOCOLS = {"tcp": TCP, "xcp": XCP, "vcp": VCP}


def chain(n_links: int) -> Network:
    """n links in series; one flow across all of them and one on each link alone."""
    links = tuple(Link(f"l{k}", mbps_to_pps(10.0), 0.01) for k in range(n_links))
    flows = [Flow("long", tuple(link.name for link in links), access_delay_s=0.01)]
    flows += [Flow(f"cross{k}", (f"l{k}",), access_delay_s=0.01) for k in range(n_links)]
    return Network(links, tuple(flows))


def _differing(a, b) -> dict:
    """The outputs of two runs that differ (none: the same bit for bit), each with its largest
    difference relative to the first run's value (NaN where one has a NaN and the other not, or
    for outputs that are not numbers)."""
    out = {}
    for name in sorted(a.data_vars):
        x, y = np.asarray(a[name].values), np.asarray(b[name].values)
        if np.array_equal(x, y, equal_nan=x.dtype.kind == "f"):
            continue
        if x.dtype.kind not in "fiub":
            out[name] = float("nan")
            continue
        x, y = x.astype(float), y.astype(float)
        if np.any(np.isnan(x) != np.isnan(y)):
            out[name] = float("nan")
            continue
        both = np.isfinite(x) & np.isfinite(y)
        out[name] = float(np.max(np.abs(x[both] - y[both]) / np.maximum(np.abs(x[both]), 1e-300)))
    return out


def compare_options(links, seconds: float, out) -> None:
    """fluidcc's compile options against XLA's defaults, per protocol and chain (module docstring)."""
    clock = CompileClock()
    ours = _run_exact.compile_options
    variants = {"fluidcc": ours, "xla defaults": lambda: {}}
    print(f"fluidcc's options here: {ours()}", flush=True)
    table = Table.markdown("protocol", "links:", "compile s (fluidcc):", "compile s (XLA defaults):", "ratio:",
                           f"{seconds:g} s run s (fluidcc):", f"{seconds:g} s run s (XLA defaults):", "same bits")
    print(table.header(), flush=True)
    rows = []
    for name, protocol_class in PROTOCOLS.items():
        for n in links:
            network, protocol = chain(n), protocol_class()
            row, outputs = {"protocol": name, "links": n}, {}
            for label, options in variants.items():
                _run_exact._CACHE.clear()
                _run_exact.compile_options = options
                try:
                    with clock:
                        run = simulate_exact(network, protocol, duration_s=seconds)
                    compile_s = clock.seconds
                    walls = []
                    for _ in range(3):
                        began = time.perf_counter()
                        run = simulate_exact(network, protocol, duration_s=seconds)
                        walls.append(time.perf_counter() - began)
                finally:
                    _run_exact.compile_options = ours
                assert int(run.status[0]) == 0, str(run.message.values[0])
                row[label] = {"compile_s": compile_s, "run_s": min(walls)}
                outputs[label] = run
            row["differing"] = _differing(outputs["fluidcc"], outputs["xla defaults"])
            row["same_bits"] = not row["differing"]
            rows.append(row)
            a, b = row["fluidcc"], row["xla defaults"]
            print(table.row(name, n, f"{a['compile_s']:.1f}", f"{b['compile_s']:.1f}",
                            f"{a['compile_s'] / b['compile_s']:.2f}", f"{a['run_s']:.2f}", f"{b['run_s']:.2f}",
                            "yes" if row["same_bits"] else "no: " + ", ".join(
                                f"{k} (at most {v:.1e} relative)" for k, v in row["differing"].items())), flush=True)
    fluid = sum(r["fluidcc"]["compile_s"] for r in rows)
    default = sum(r["xla defaults"]["compile_s"] for r in rows)
    print(f"compile time in all: {fluid:.1f} s with fluidcc's options, {default:.1f} s with XLA's defaults "
          f"(ratio {fluid / default:.2f}); outputs the same bit for bit in {sum(r['same_bits'] for r in rows)} "
          f"of {len(rows)}", flush=True)
    if out:
        write_json(out, {"machine": machine_info(extras=()), "options": ours(), "seconds": seconds, "rows": rows},
                   announce=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--options", action="store_true",
                        help="compare fluidcc's compile options with XLA's defaults (module docstring)")
    parser.add_argument("--seconds", type=float, default=20.0, help="with --options: the timed run's length")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.options:
        compare_options(args.links, args.seconds, args.out)
        return
    clock = CompileClock()
    rows = []
    table = Table.markdown("protocol", "links:", "compile s:", "compilations:", "first call s:",
                           "4 s run: compilations:", "attempts:", "4 s run s:")
    print(table.header(), flush=True)
    for name, protocol_class in PROTOCOLS.items():
        for n in args.links:
            network, protocol = chain(n), protocol_class()
            row = {"protocol": name, "links": n}
            for label, duration in (("first", 2.0), ("longer", 4.0)):
                began = time.perf_counter()
                with clock:
                    run = simulate_exact(network, protocol, duration_s=duration)
                assert int(run.status[0]) == 0, str(run.message.values[0])
                row.update({f"{label}_compile_s": clock.seconds, f"{label}_compilations": clock.backend_compiles,
                            f"{label}_wall_s": time.perf_counter() - began, f"{label}_attempts": run.attrs["attempts"]})
            rows.append(row)
            print(table.row(name, n, f"{row['first_compile_s']:.1f}", row["first_compilations"],
                            f"{row['first_wall_s']:.1f}", row["longer_compilations"], row["longer_attempts"],
                            f"{row['longer_wall_s']:.1f}"),
                  flush=True)
    if args.out:
        write_json(args.out, {"machine": machine_info(extras=()), "rows": rows}, announce=True)


if __name__ == "__main__":
    main()
