"""Where the exact engine's time goes: compilation, steps, the sorts of a stage's rounds, the
senders' iterations and the links' events.

Each configuration is simulated twice with `fluidcc.packet.simulate_exact` (the first call
compiles; `CompileClock` measures how long); the second call's wall time is the run's. The engine
counts its work per run (`work_*`: steps; rounds of the senders' stage and of the link stages, a
round being one chunk of a stage's events sorted; iterations of the senders' loop, each moving
every lane by one action; link iterations, one packet or router timer each). Over the
configurations the wall times are fitted by non-negative least squares as

    wall = sum_k cost_k * count_k   (k: steps, sender rounds, sender iterations, sender iterations
                                      times lanes, link rounds, link iterations; counts summed
                                      over the runs of a call)

and each configuration's time is split by those costs. One run per call (`--batch 1`, default)
or batches of seeds (`--batch 8`, vmapped: the costs are then per iteration of the batch's loops,
which run until the run with the most work is done, so the largest count of a batch is used).

The configurations: a network whose one flow starts after the end (steps and nothing else); the
dumbbell of `packet_exact.py` (100 Mb/s, RTPD 80 ms, buffer one BDP, 10 Gb/s interfaces) with 2,
20 and 50 long-lived TCP flows; the same with 20 flows at a tenth of the lookahead as the step;
short TCP flows (Poisson arrivals, Pareto sizes of mean 25 packets, shape 1.2, on that link with
RTPD 100 ms) at load 0.5 and 0.9, and at load 0.5 on 1024 lanes (what a lane costs).

Operations per iteration (`--ops`): for the dumbbell of 50 flows and the short flows at load 0.9,
the optimized program XLA compiles (dumped by a child process of this script) is read, and the
operations that one execution of each of these executes are counted: an iteration of the senders'
loop; a link event, where a link takes its events one by one (routers, capacity schedules); and,
where a link takes a round in one vectorized pass, the round's own operations (a loop inside it
counted once), a pass of its admission (one per drop, plus one per `ADMISSION_WINDOW` packets) and a packet it takes one by one
at a receiver. Counted: every instruction of the body but parameters, tuples, constants and
bitcasts; of a branch, the larger side; the engine names the bodies with JAX name scopes. On a
CPU the XLA runtime calls each such operation separately, so their number sets much of the cost
of an iteration (the size of their arrays the rest).

Where a run's time goes, operation by operation (`--trace NAME`, e.g. "dumbbell 50 flows"): the
configuration is compiled and run in a child process that dumps XLA's optimized program, then run
once more under JAX's profiler (`jax.profiler.trace`). Each operation the XLA runtime calls at the
program's top level is timed by the profiler; an operation's own time is its time less that of
the operations it calls. Each is named by its kind and the engine's scope: that of its own source,
or, for a loop or a call, the scope most of the instructions inside it carry (the senders'
iteration, a link's round, its admission or its receivers). The table lists the operations by own
time, with the calls per run, and sums them by kind (sorts, loops, the rest).

Run:

    PYTHONPATH=src python benchmarks/packet_profile.py [--seconds 4] [--batch 1] [--out FILE]
    PYTHONPATH=src python benchmarks/packet_profile.py --ops
    PYTHONPATH=src python benchmarks/packet_profile.py --trace "dumbbell 50 flows" --seconds 20
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from scipy.optimize import nnls

from _harness import CompileClock, machine_info, timed, write_json
from _packet_scenarios import network, shortflow_network

HERE = Path(__file__).resolve().parent
UNITS = ("steps", "sender_rounds", "sender_iterations", "sender_lane_iterations", "link_rounds", "link_iterations",
         "link_passes", "link_one_by_one")
#: The counts the engine reports (work_*); sender_lane_iterations is sender_iterations times the
#: lanes an iteration moves (a block of `fluidcc.packet.exact.sender_block()`, or all where fewer).
COUNTED = ("steps", "sender_rounds", "sender_iterations", "link_rounds", "link_iterations", "link_passes",
           "link_one_by_one")


def configurations(seconds: float):
    from fluidcc.network import Flow, Network
    from fluidcc.packet.exact_protocols import TCP
    from fluidcc.packet.workloads import FlowTable, Pareto, PoissonArrivals

    def spread(n: int) -> FlowTable:
        """n long-lived flows starting i / n s apart."""
        return FlowTable(np.arange(n) / n, np.full(n, np.inf), route=np.arange(n))

    tcp = TCP(initial_window=2, mss_bytes=948)
    short = TCP(initial_window=10, min_rto_s=1.0, mss_bytes=948)
    late = Network(network(1).links, (Flow("late", ("bottleneck",), start_s=10 * seconds),))
    yield "idle", late, tcp, None, {}
    for n in (2, 20, 50):
        yield f"dumbbell {n} flows", network(n), tcp, spread(n), {}
    yield "dumbbell 20 flows, step lookahead/10", network(20), tcp, spread(20), {"step_s": 0.1 * 0.08 * (1 - 1e-6)}
    links = shortflow_network()
    arrivals = {load: PoissonArrivals.for_load(load, Pareto(1.2, 25.0), float(links.capacities_pps[0]),
                                               duration_s=seconds, seed=1).table() for load in (0.5, 0.9)}
    for load, table in arrivals.items():
        yield f"short flows load {load}", links, short, table, {}
    yield "short flows load 0.5, 1024 lanes", links, short, arrivals[0.5], {"lanes": 1024}


#: The loops whose bodies `--ops` counts: the engine's name scope of each.
SCOPES = {"sender_iteration": "an iteration of the senders' loop",
          "link_event": "a link event (event by event: routers, schedules)",
          "link_round": "a link round in one pass (loops once each)",
          "link_admission": "a pass of its admission",
          "link_receiver": "a packet it takes one by one at a receiver"}
OPS_CONFIGURATIONS = ("dumbbell 50 flows", "short flows load 0.9")
_TRIVIAL = re.compile(r" (parameter|get-tuple-element|tuple|constant|bitcast)\(")


def _computations(text: str) -> dict[str, list[str]]:
    """The computations of an HLO module's text: name -> its instruction lines."""
    out, current = {}, None
    for line in text.splitlines():
        head = re.match(r"^(?:ENTRY )?%?([\w.\-]+) .*\{$", line)
        if head and not line.startswith(" "):
            current = out.setdefault(head.group(1), [])
        elif current is not None and line.startswith("  ") and "=" in line:
            current.append(line)
    return out


def _ops(computations, name: str) -> tuple[int, int]:
    """(operations one execution of computation `name` runs, of which copies): its instructions
    but the trivial ones, with a conditional's larger branch counted in."""
    ops = copies = 0
    for line in computations.get(name, []):
        if _TRIVIAL.search(line):
            continue
        ops += 1
        copies += " copy(" in line
        branches = re.search(r"branch_computations=\{([^}]*)\}", line)
        names = (re.findall(r"%?([\w.\-]+)", branches.group(1)) if branches
                 else re.findall(r"(?:true|false)_computation=%?([\w.\-]+)", line))
        if names:
            inner = max((_ops(computations, b) for b in names), key=lambda x: x[0])
            ops, copies = ops + inner[0], copies + inner[1]
    return ops, copies


def _own_times(trace_file: Path) -> tuple[collections.Counter, collections.Counter]:
    """(own microseconds, calls) per operation name, from a profiler trace (perfetto JSON): an
    event's own time is its duration less that of the events inside it on its thread."""
    import gzip
    import json

    data = json.load(gzip.open(trace_file))
    events = [e for e in (data["traceEvents"] if isinstance(data, dict) else data)
              if e.get("ph") == "X" and not e["name"].startswith("$")]
    threads = collections.defaultdict(list)
    for e in events:
        threads[(e["pid"], e["tid"])].append(e)
    own, calls = collections.Counter(), collections.Counter()
    for thread in threads.values():
        thread.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []
        for e in thread:
            while stack and stack[-1]["ts"] + stack[-1]["dur"] <= e["ts"]:
                stack.pop()
            if stack:
                own[stack[-1]["name"]] -= e["dur"]
            own[e["name"]] += e["dur"]
            calls[e["name"]] += 1
            stack.append(e)
    return own, calls


def _where(computations, line: str) -> str:
    """The engine's scope of an instruction (its line of the dumped program): for one that calls
    computations (a loop, a call), the scope of `SCOPES` most of their instructions carry."""
    inside, seen, todo = collections.Counter(), set(), re.findall(r"(?:calls|to_apply|body|condition)=%?([\w.\-]+)", line)
    while todo:
        name = todo.pop()
        if name in seen or name not in computations:
            continue
        seen.add(name)
        for inner in computations[name]:
            inside.update(scope for scope in SCOPES if f"/{scope}/" in inner)
            todo.extend(re.findall(r"(?:calls|to_apply|body|condition|branch_computations=\{)=?%?([\w.\-]+)", inner))
    if inside:
        return f"loop: {inside.most_common(1)[0][0]}"
    name = re.search(r'op_name="([^"]*)"', line)
    return re.sub(r"(while/body/)+", "", name.group(1)).replace("jit(single)/", "") if name else ""


def trace_ops(name: str, seconds: float) -> dict:
    """Configuration `name` in a child process (`--trace-child`): its top-level operations by own
    time under JAX's profiler, named from XLA's dumped program."""
    with tempfile.TemporaryDirectory() as folder:
        env = dict(os.environ, FLUIDCC_JAX_CACHE="",
                   XLA_FLAGS=f"--xla_dump_to={folder}/dump --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=NONE")
        subprocess.run([sys.executable, __file__, "--trace-child", name, "--seconds", str(seconds), "--out",
                        f"{folder}/trace"], env=env, check=True, capture_output=True)
        dumps = sorted(Path(folder, "dump").glob("*cpu_after_optimizations.txt"), key=lambda p: p.stat().st_size)
        text = dumps[-1].read_text()
        own, calls = _own_times(next(Path(folder, "trace").rglob("perfetto_trace.json.gz")))
    computations = _computations(text)
    lines = {m.group(1): line for lines in computations.values() for line in lines
             if (m := re.match(r"\s*(?:ROOT )?%?([\w.\-]+) = ", line))}
    rows = []
    for op, us in own.items():
        if op not in lines:
            continue  # the runtime's own events, not the program's operations
        # the kind follows the shape, which ends in "]", "}" or ")" (a tuple's, with comments inside)
        kind = re.search(r"[\]})] ([a-z][\w\-]*)\(", lines[op])
        shape = re.match(r"\s*(?:ROOT )?%?[\w.\-]+ = (\S+)", lines[op]).group(1)
        rows.append({"op": op, "kind": kind.group(1) if kind else "?", "shape": shape[:40], "calls": calls[op],
                     "own_s": us / 1e6, "where": _where(computations, lines[op])})
    rows.sort(key=lambda r: -r["own_s"])
    return {"configuration": name, "seconds": seconds, "ops": rows,
            "total_s": sum(r["own_s"] for r in rows)}


def loop_ops(name: str) -> dict:
    """Configuration `name` compiled in a child process that dumps XLA's optimized program; the
    operations per iteration of each loop of `SCOPES` (the body whose instructions carry its
    scope the most)."""
    with tempfile.TemporaryDirectory() as folder:
        # the persistent compilation cache off: a program loaded from it is not compiled, nor dumped
        env = dict(os.environ, FLUIDCC_JAX_CACHE="",
                   XLA_FLAGS=f"--xla_dump_to={folder} --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=NONE")
        subprocess.run([sys.executable, __file__, "--dump-child", name, "--seconds", "0.2"], env=env, check=True,
                       capture_output=True)
        dumps = sorted(Path(folder).glob("*cpu_after_optimizations.txt"), key=lambda p: p.stat().st_size)
        computations = _computations(dumps[-1].read_text())
    bodies = {re.search(r"body=%?([\w.\-]+)", line).group(1)
              for lines in computations.values() for line in lines if " while(" in line}
    out = {}
    for scope in SCOPES:
        marked = {b: sum(f"/{scope}/" in line for line in computations[b]) for b in bodies}
        body = max(marked, key=marked.get)
        if marked[body] == 0:
            continue  # not in this program (the links of a protocol without routers take rounds in one pass)
        ops, copies = _ops(computations, body)
        kinds = collections.Counter(re.sub(r"(_fusion)?(\.\d+)?$", "", m.group(1)) for line in computations[body]
                                    if not _TRIVIAL.search(line) and (m := re.match(r"\s*(?:ROOT )?%?([\w\-]+)", line)))
        out[scope] = {"ops": ops, "copies": copies, "kinds": dict(kinds.most_common(8))}
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="simulated seconds per run")
    parser.add_argument("--batch", type=int, default=1, help="runs (seeds) per call")
    parser.add_argument("--batch-mode", choices=("vmap", "threads"), default="vmap",
                        help="how a call simulates its runs (simulate_exact's batch)")
    parser.add_argument("--ops", action="store_true", help="count the operations per iteration instead")
    parser.add_argument("--dump-child", help=argparse.SUPPRESS)  # --ops: compile one configuration
    parser.add_argument("--trace", metavar="NAME", help="where one configuration's run goes, operation by operation")
    parser.add_argument("--trace-child", help=argparse.SUPPRESS)  # --trace: run and trace one configuration
    parser.add_argument("--out", default=str(HERE / "packet_profile.json"))
    args = parser.parse_args()
    from fluidcc.packet import simulate_exact
    from fluidcc.packet.exact import sender_block

    if args.dump_child:
        for name, net, protocol, table, options in configurations(args.seconds):
            if name == args.dump_child:
                simulate_exact(net, protocol, table, duration_s=args.seconds, **options)
        return 0
    if args.trace_child:
        import jax

        for name, net, protocol, table, options in configurations(args.seconds):
            if name == args.trace_child:
                call = lambda: simulate_exact(net, protocol, table, duration_s=args.seconds,  # noqa: E731
                                              sample_s=args.seconds / 100, **options)
                call(), call()  # compiled, then run once (one-time costs of a first run)
                with jax.profiler.trace(args.out, create_perfetto_trace=True):
                    call()
        return 0
    if args.trace:
        names = [name for name, *_ in configurations(args.seconds)]
        if args.trace not in names:
            raise SystemExit(f"--trace: {args.trace!r} is not a configuration; one of: {', '.join(names)}")
        traced = trace_ops(args.trace, args.seconds)
        total = traced["total_s"]
        print(f"{args.trace}, {args.seconds:g} s: {total:.3f} s in the program's top-level operations")
        by_kind = collections.Counter()
        for row in traced["ops"]:
            group = "sort" if row["kind"] == "sort" else ("loops" if row["where"].startswith("loop:") else "other")
            by_kind[group] += row["own_s"]
        print(", ".join(f"{k} {100 * v / total:.0f} %" for k, v in by_kind.most_common()))
        for row in traced["ops"][:30]:
            print(f"{1e3 * row['own_s']:8.1f} ms {100 * row['own_s'] / total:5.1f} % {row['calls']:6d} calls  "
                  f"{row['kind']:12s} {row['shape']:28s} {row['where'][-70:]}")
        write_json(args.out, {"machine": machine_info(extras=()), "trace": traced}, announce=True)
        return 0
    if args.ops:
        counted = {name: loop_ops(name) for name in OPS_CONFIGURATIONS}
        for name, loops in counted.items():
            for scope, row in loops.items():
                print(f"{name:24s} {SCOPES[scope]:36s} {row['ops']:4d} operations ({row['copies']} copies): "
                      + ", ".join(f"{k} {n}" for k, n in row["kinds"].items()), flush=True)
        write_json(args.out, {"machine": machine_info(extras=()), "ops": counted}, announce=True)
        return 0

    rows = []
    clock = CompileClock()
    seeds = list(range(args.batch))
    for name, net, protocol, table, options in configurations(args.seconds):
        call = lambda: simulate_exact(net, protocol, table, duration_s=args.seconds, seeds=seeds,  # noqa: E731
                                      sample_s=args.seconds / 100, batch=args.batch_mode, **options)
        with clock:
            first, first_wall = timed(call)
        compile_s = clock.seconds
        run, wall = timed(call)
        assert (run.status == 0).all(), f"{name}: {run.message.values}"
        counts = {unit: int(run[f"work_{unit}"].values.max()) if args.batch > 1 else int(run[f"work_{unit}"].sum())
                  for unit in COUNTED}
        # an iteration moves a block of lanes (`sender_block`), or every lane where they are fewer
        block = sender_block(batched=run.attrs["batch"] == "vmap" and args.batch > 1)
        counts["sender_lane_iterations"] = counts["sender_iterations"] * min(int(run.attrs["lanes"]), block)
        events = int(run.link_arrived.sum())
        rows.append({"name": name, "wall_s": wall, "first_call_s": first_wall, "compile_s": compile_s,
                     "link_arrivals": events, "lanes": int(run.attrs["lanes"]), **counts})
        print(f"{name:40s} wall {wall:7.2f} s, compile {compile_s:6.2f} s, " +
              ", ".join(f"{unit} {counts[unit]}" for unit in UNITS), flush=True)
    # batches: the loops run until the run with the most work ends; the largest count is the cost
    matrix = np.array([[row[unit] for unit in UNITS] for row in rows], dtype=float)
    walls = np.array([row["wall_s"] for row in rows])
    costs, residual = nnls(matrix, walls)
    fitted = matrix @ costs
    print("\ncost per unit (s): " + ", ".join(f"{unit} {c:.3g}" for unit, c in zip(UNITS, costs)))
    print(f"{'configuration':40s} {'wall':>8s} {'fitted':>8s} " + " ".join(f"{u[:14]:>14s}" for u in UNITS))
    for row, fit, counts in zip(rows, fitted, matrix):
        shares = counts * costs / max(fit, 1e-12)
        row["fitted_s"] = float(fit)
        row["shares"] = {unit: float(x) for unit, x in zip(UNITS, shares)}
        print(f"{row['name']:40s} {row['wall_s']:8.2f} {fit:8.2f} " + " ".join(f"{100 * x:13.0f}%" for x in shares))
    write_json(args.out, {"machine": machine_info(extras=()), "seconds": args.seconds, "batch": args.batch,
                          "batch_mode": args.batch_mode,
                          "costs_s": dict(zip(UNITS, costs.tolist())), "residual_s": float(residual),
                          "configurations": rows}, announce=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
