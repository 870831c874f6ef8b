"""How long the exact engine takes to compile a run, against the number of links, and whether
runs of other lengths compile again.

For each protocol (TCP, XCP, VCP) and each chain of n links (n = 1, 2, 4, 8; 10 Mb/s and 10 ms
each; one flow across every link and one flow on each link alone), a first `simulate_exact`
call of 2 s with the persistent compilation cache off: the time JAX reports for tracing,
lowering and compiling (`CompileClock`), the number of XLA compilations, and the call's wall
time. Then the same network for 4 s: its compilations (0 when the run's length is an argument of
the program, as the engine's module docstring says, unless a default store had to grow: then
`attempts` > 1 and each size compiles) and wall time.

Run:

    FLUIDCC_JAX_CACHE= PYTHONPATH=src python benchmarks/packet_compile.py [--links 1 2 4 8] [--out FILE]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("FLUIDCC_JAX_CACHE", "")  # cold: every program compiled here, as in CI

from _harness import CompileClock, Table, machine_info, write_json  # noqa: E402

from fluidcc.network import Flow, Link, Network  # noqa: E402
from fluidcc.packet import simulate_exact  # noqa: E402
from fluidcc.packet.exact_protocols import TCP, VCP, XCP  # noqa: E402
from fluidcc.units import mbps_to_pps  # noqa: E402

PROTOCOLS = {"tcp": TCP, "xcp": XCP, "vcp": VCP}


def chain(n_links: int) -> Network:
    """n links in series; one flow across all of them and one on each link alone."""
    links = tuple(Link(f"l{k}", mbps_to_pps(10.0), 0.01) for k in range(n_links))
    flows = [Flow("long", tuple(link.name for link in links), access_delay_s=0.01)]
    flows += [Flow(f"cross{k}", (f"l{k}",), access_delay_s=0.01) for k in range(n_links)]
    return Network(links, tuple(flows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--links", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
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
