"""The packet scenarios that drive fluidcc's exact engine and ns-3's programs alike (a helper, not
a benchmark): the dumbbell of `ns3/dumbbell.cc` and the short flows of `ns3/shortflows.cc`, as
fluidcc networks, and the ns-3 runs of each, one process per run, as many at once as asked.

Dumbbell: long-lived TCP NewReno flows through one 100 Mb/s bottleneck, RTPD 80 ms, drop-tail
buffer of one BDP (1000 packets); each sender has a 10 Gb/s interface 2 us from the bottleneck.
Short flows: Poisson arrivals of Pareto flows (shape 1.2, mean 25 packets) on 100 Mb/s, RTPD
100 ms, buffer one BDP; ns-3 writes its flow table and fluidcc replays it flow for flow.
"""

from __future__ import annotations

import json
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from fluidcc.network import Flow, Link, Network
from fluidcc.packet.workloads import FlowTable
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
