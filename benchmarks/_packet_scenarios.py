"""The packet scenarios that drive fluidcc's exact engine and ns-3's programs alike (a helper, not
a benchmark): the dumbbell of `ns3/dumbbell.cc` and the short flows of `ns3/shortflows.cc`, as
fluidcc networks, and the ns-3 runs of each, one process per run, as many at once as asked.

Dumbbell: long-lived TCP NewReno flows through one 100 Mb/s bottleneck, RTPD 80 ms, drop-tail
buffer of one BDP (1000 packets); each sender has a 10 Gb/s interface 2 us from the bottleneck.
Short flows: Poisson arrivals of Pareto flows (shape 1.2, mean 25 packets) on 100 Mb/s, RTPD
100 ms, buffer one BDP; ns-3 writes its flow table and fluidcc replays it flow for flow.

Scenario files: `ns3_scenario_runs` runs a fluidcc scenario file (`fluidcc.packet.scenario`) of
TCP on one link in ns-3 (`ns3/shortflows.cc` with the scenario's flow table, link and TCP
settings), so that one file drives both simulators; `ns3_scenario_arguments` is the translation,
and refuses, naming the key, what the ns-3 program cannot run as the file says.
"""

from __future__ import annotations

import json
import math
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from fluidcc.errors import ParameterError
from fluidcc.network import Flow, Link, Network
from fluidcc.packet.workloads import FlowTable, write_trace
from fluidcc.units import mbps_to_pps

HERE = Path(__file__).resolve().parent
BOTTLENECK_PPS = mbps_to_pps(100.0)
ROUND_TRIP_S = 0.080
NIC_PPS = mbps_to_pps(10_000.0)
NIC_TO_BOTTLENECK_S = 2e-6
SHORT_BOTTLENECK_PPS = mbps_to_pps(100.0)
SHORT_ROUND_TRIP_S = 0.100


def network(n: int) -> Network:
    """The dumbbell with n senders."""
    link = Link("bottleneck", BOTTLENECK_PPS, ROUND_TRIP_S / 2 - NIC_TO_BOTTLENECK_S,
                buffer_packets=round(BOTTLENECK_PPS * ROUND_TRIP_S))
    senders = tuple(Flow(f"f{i}", ("bottleneck",), access_delay_s=NIC_TO_BOTTLENECK_S, interface_pps=NIC_PPS)
                    for i in range(n))
    return Network((link,), senders)


def dumbbell_tables(n: int, seeds) -> list[FlowTable]:
    """The dumbbell's flows, one table per seed: n long-lived flows starting uniformly in [0, 1) s."""
    return [FlowTable(np.random.default_rng(s).uniform(0.0, 1.0, n), np.full(n, np.inf), route=np.arange(n))
            for s in seeds]


def shortflow_network() -> Network:
    """The short flows' link; every flow of the table takes its one route."""
    link = Link("bottleneck", SHORT_BOTTLENECK_PPS, SHORT_ROUND_TRIP_S / 2 - NIC_TO_BOTTLENECK_S,
                buffer_packets=round(SHORT_BOTTLENECK_PPS * SHORT_ROUND_TRIP_S))
    return Network((link,), (Flow("short", ("bottleneck",), access_delay_s=NIC_TO_BOTTLENECK_S,
                                  interface_pps=NIC_PPS),))


def ns3_binary(name: str) -> Path:
    """The ns-3 program `name` (built from `ns3/` with Debian's libns3-dev when missing)."""
    binary = HERE / "ns3" / "build" / name
    if not binary.exists():
        subprocess.run(["bash", str(HERE / "ns3" / "build.sh")], check=True)
    return binary


def ns3_runs(name: str, argument_lists: list[list[str]], processes: int = 1) -> tuple[list[dict], float]:
    """ns-3 program `name` once per argument list, `processes` at a time: (each run's JSON result,
    the wall seconds of them all). Each result keeps the program's own `wall_s`."""
    binary = ns3_binary(name)

    def one(arguments):
        text = subprocess.run([str(binary), *arguments], check=True, capture_output=True, text=True).stdout
        return json.loads(text.strip().splitlines()[-1])

    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, processes)) as pool:
        results = list(pool.map(one, argument_lists))
    return results, time.perf_counter() - began


def dumbbell_arguments(n: int, seed: int, duration: float) -> list[str]:
    """The ns-3 dumbbell's arguments, configured as the packet_exact comparison runs it."""
    return [f"--flows={n}", f"--seed={seed}", f"--duration={duration:g}", "--limitedTransmit=0"]


def shortflow_arguments(load: float, seed: int, duration: float, drain: float, csv: Path) -> list[str]:
    """The ns-3 short flows' arguments; the program writes its flow table to `csv`."""
    return [f"--load={load:g}", f"--seed={seed}", f"--duration={duration:g}", f"--drain={drain:g}",
            f"--flows-csv={csv}"]


#: What ns-3's programs fix and a scenario must therefore say to run there: 1000-byte IP packets of
#: 948 bytes of payload (`ns3/common.h`), senders behind 10 Gb/s interfaces, ns-3's SYN timeout.
NS3_PACKET_BYTES = 1000
NS3_MSS_BYTES = 948.0
NS3_INTERFACE_PPS = NIC_PPS
NS3_SYN_TIMEOUT_S = 3.0
#: The most packets a path may hold (BDP + buffer) for ns-3's 8 MiB socket buffers never to limit
#: a window (8 MiB of 948-byte segments).
NS3_MOST_IN_FLIGHT = (8 << 20) // 948


def ns3_scenario_arguments(scenario, seed: int, trace: Path, table=None) -> list[str]:
    """The arguments of ns-3's `shortflows` that run `scenario` (a `fluidcc.packet.scenario.Scenario`)
    with the flow table of `seed` (`table`, when the caller has drawn it already) written to
    `trace` (fluidcc's trace format, which the program reads with --flows-in): its one link's capacity, round-trip propagation delay and buffer, its
    TCP's initial window, minimum RTO and limited transmit, its duration (a Poisson workload: the
    arrivals, then the rest as drain). Raises ParameterError naming the scenario key of anything
    the program would run otherwise than the file says (more than one link, a capacity schedule,
    another protocol or packet size, senders' interfaces other than 10 Gb/s, flows with other
    RTPDs or ACKs over a reverse route, more in flight than ns-3's socket buffers allow, ...).
    Not translated: fluidcc's `ack_bytes` (the size of its SYNs and ACKs; ns-3's are 54-58 bytes
    on the wire)."""
    from fluidcc.packet.exact import default_buffers
    from fluidcc.packet.exact_protocols import TCP

    net, tcp = scenario.network, scenario.protocol
    if len(net.links) != 1:
        raise ParameterError("network.links", [link.name for link in net.links],
                             "ns-3's scenario program runs one link: exactly one")
    link = net.links[0]
    if link.schedule:
        raise ParameterError(f"network: link '{link.name}': schedule", link.schedule,
                             "none: ns-3's scenario program keeps one capacity")
    if net.packet_bytes != NS3_PACKET_BYTES:
        raise ParameterError("network.packet_bytes", net.packet_bytes,
                             f"{NS3_PACKET_BYTES}: the size of ns-3's full data packets")
    buffer = float(default_buffers(net)[0])
    if not buffer.is_integer() or buffer < 1:
        raise ParameterError(f"network: link '{link.name}': buffer", buffer, "a whole number of packets >= 1")
    rtt = scenario.rtpd_s
    in_flight = scenario.bottleneck_capacity_pps * rtt + buffer
    if in_flight > NS3_MOST_IN_FLIGHT:
        raise ParameterError(f"network: link '{link.name}'", f"{in_flight:g} packets in flight (BDP + buffer)",
                             f"at most {NS3_MOST_IN_FLIGHT}: ns-3's 8 MiB socket buffers would limit the window")
    if not isinstance(tcp, TCP):
        raise ParameterError("protocol.name", type(tcp).__name__.lower(), "tcp: ns-3 runs its own TCP")
    fixed = {"mss_bytes": (tcp.mss_bytes, NS3_MSS_BYTES, "948: 1000-byte packets less 52 of headers"),
             "syn_timeout": (tcp.syn_timeout_s, NS3_SYN_TIMEOUT_S, "3s, ns-3's ConnTimeout"),
             "receive_window": (tcp.receive_window, math.inf, "inf: ns-3's 8 MiB buffers never limit"),
             "handshake_ack": (tcp.handshake_ack, True, "true: ns-3 answers the SYN-ACK with an ACK")}
    for key, (value, wanted, allowed) in fixed.items():
        if value != wanted:
            raise ParameterError(f"protocol.{key}", value, allowed)
    if not float(tcp.initial_window).is_integer():
        raise ParameterError("protocol.initial_window", tcp.initial_window, "a whole number of segments")
    arrivals = scenario.workload.arrivals_s if scenario.workload.kind == "poisson" else scenario.duration_s
    arrivals = min(float(arrivals), scenario.duration_s)
    long_lived = scenario.workload.kind == "long_lived"
    if table is None:
        table = scenario.tables()[list(scenario.seeds).index(seed)]
    for i in np.unique(table.route):
        flow = net.flows[int(i)]
        if flow.interface_pps != NS3_INTERFACE_PPS:
            raise ParameterError(f"network: flow '{flow.name}': interface", flow.interface_pps,
                                 f"10Gbps ({NS3_INTERFACE_PPS:g} packets/s), ns-3's access links (none in fluidcc "
                                 "is the first link's rate)")
        if flow.reverse_route:
            raise ParameterError(f"network: flow '{flow.name}': reverse_route", list(flow.reverse_route),
                                 "none: ns-3's ACKs take the link's other direction, where nothing queues")
        if abs(float(net.rtt_s[int(i)]) - rtt) > 1e-12:
            raise ParameterError(f"network: flow '{flow.name}': access_delay", flow.access_delay_s,
                                 f"that of the other flows: ns-3 gives every flow one RTPD ({rtt:g} s)")
    if np.any(np.isfinite(table.stop_s)):
        source = "workload.file: stop_s" if scenario.workload.kind == "trace" else "network: flows: stop"
        raise ParameterError(source, table.stop_s[np.isfinite(table.stop_s)][:3],
                             "none (inf): ns-3's flows send until they are done or the run ends")
    write_trace(table, trace, net)
    return [f"--flows-in={trace}", f"--seed={seed}", f"--duration={arrivals!r}",
            f"--drain={scenario.duration_s - arrivals!r}", f"--capacity-pps={scenario.bottleneck_capacity_pps!r}",
            f"--rtpd={rtt!r}", f"--buffer={int(buffer)}",
            f"--initial-cwnd={int(tcp.initial_window)}", f"--min-rto={tcp.min_rto_s!r}",
            f"--limitedTransmit={int(tcp.limited_transmit)}",
            # long-lived flows each on their own host, as in the dumbbell; short ones share 100
            f"--hosts={max(1, len(table)) if long_lived else 100}"]


def ns3_scenario_runs(scenario, processes: int = 1) -> tuple[list[dict], float]:
    """Each run (seed) of `scenario` in ns-3, `processes` at a time: (each run's JSON summary with
    its flow table under "flows_table" (ns-3's per-flow CSV as arrays), the wall seconds of them all)."""
    with tempfile.TemporaryDirectory() as folder:
        lists, tables = [], []
        for seed, table in dict(zip(scenario.seeds, scenario.tables())).items():  # each seed's flows, drawn once
            lists.append(ns3_scenario_arguments(scenario, seed, Path(folder) / f"trace_seed{seed}.csv", table))
            tables.append(Path(folder) / f"ns3_flows_seed{seed}.csv")
            lists[-1].append(f"--flows-csv={tables[-1]}")
        results, wall = ns3_runs("shortflows", lists, processes)
        for result, path in zip(results, tables):
            rows = np.genfromtxt(path, delimiter=",", names=True, ndmin=1)
            result["flows_table"] = {name: rows[name] for name in rows.dtype.names}
    return results, wall
