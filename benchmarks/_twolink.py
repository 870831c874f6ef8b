"""The iXCP paper's Fig. 1 network, shared by the explicit-rate benchmarks (`qcp_packet.py`,
`rcp_packet.py`): 155 and 100 Mb/s, 20 ms each; one flow on the first link, 16 across both; and its
ns-3 program (`benchmarks/ns3/twolink.cc`) with its replay in fluidcc, shared by the TCP comparisons
(`packet_exact.py`, `twolink_timeline.py`)."""

from __future__ import annotations

import argparse
import json
import subprocess
from pathlib import Path

import numpy as np

from fluidcc.network import Flow, Link, Network
from fluidcc.packet import simulate_exact
from fluidcc.packet.workloads import FlowTable
from fluidcc.units import mbps_to_pps

HERE = Path(__file__).resolve().parent
NS3_TWOLINK = HERE / "ns3" / "build" / "twolink"
#: the ns-3 senders' 10 Gb/s access links and their 2 us to the first router (ns-3's link 1 gives
#: its 2 us to the access links)
NIC_PPS = mbps_to_pps(10_000.0)
NIC_TO_ROUTER_S = 2e-6
#: ns-3's access links: 1 us each way, 10 Gb/s; a data packet is 1 002 bytes on their wire (0.80 us),
#: an ACK 54 (52 with the timestamp option, and the point-to-point header; 0.04 us)
NS3_ACCESS_S = 1e-6
NS3_DATA_ON_ACCESS_S = 1002 * 8 / 10e9
NS3_ACK_ON_ACCESS_S = 54 * 8 / 10e9
#: an ACK's size in fluidcc's bytes: the ns-3 links run at (1 002 / 1 000) x the nominal rate, so
#: 54 bytes on their wire take as long as this many at fluidcc's rate
NS3_ACK_BYTES = 54 * 1000 / 1002
#: the TCP segment of the ns-3 programs, bytes: a 1000-byte IP packet less 20 + 20 + 12 bytes of
#: IPv4, TCP and timestamp headers (`benchmarks/ns3/common.h`); their windows count these bytes
NS3_MSS_BYTES = 948


def twolink_network(scale: float, stagger: float) -> Network:
    """The network with both capacities times `scale`, the long flows starting `stagger` s apart."""
    c1, c2 = mbps_to_pps(155.0 * scale), mbps_to_pps(100.0 * scale)
    return Network((Link("l1", c1, 0.02), Link("l2", c2, 0.02)),
                   (Flow("short", ("l1",)),
                    *(Flow(f"long{k}", ("l1", "l2"), start_s=stagger * k) for k in range(16))))


def long_lived(network: Network) -> FlowTable:
    """One long-lived flow per network flow, each from the network's start time for it."""
    starts = np.asarray(network.start_s, dtype=float)
    return FlowTable(starts, np.full(starts.size, np.inf), route=np.arange(starts.size))


def second_half_goodput(network: Network, protocol, duration_s: float, sample_s: float):
    """Runs `long_lived(network)` to the end and to the half (the engine is deterministic, so the
    first half is the same in both); returns (the full run, the half run, each flow's goodput over
    the second half: in-order data at its receiver, packets/s)."""
    table = long_lived(network)
    half = duration_s / 2
    full = simulate_exact(network, protocol, table, duration_s=duration_s, sample_s=sample_s).isel(run=0)
    first = simulate_exact(network, protocol, table, duration_s=half, sample_s=0.5).isel(run=0)
    return full, first, (full.received.values - first.received.values) / (duration_s - half)


def ns3_twolink(stagger: float, duration: float, seed: int, drop_log: bool = False) -> dict:
    """One run of the ns-3 program (TCP NewReno, limited transmit off; built first if missing): its
    JSON result. drop_log: each link's entry lists every drop (`drops`: [time in ns, flow])."""
    if not NS3_TWOLINK.exists():
        subprocess.run(["bash", str(HERE / "ns3" / "build.sh")], check=True)
    text = subprocess.run([str(NS3_TWOLINK), f"--stagger={stagger:g}", f"--duration={duration:g}", f"--seed={seed}",
                           "--limitedTransmit=0", f"--drop-log={int(drop_log)}"], check=True, capture_output=True,
                          text=True).stdout
    return json.loads(text.strip().splitlines()[-1])


def ns3_replay(result: dict, ack_links: bool = True) -> tuple[Network, FlowTable]:
    """ns-3's network and its flows at their start times, for the exact engine (run it with
    `TCP(ack_bytes=NS3_ACK_BYTES)`).

    ack_links (default): the ACKs cross the links' reverse directions as ns-3's do (`l2_back`,
    `l1_back`: same capacity and delay, 54-byte ACKs serialized there), and the receivers' access
    links of ns-3 (1 us and the serialization at 10 Gb/s; a receiver hangs off the router after its
    last link) are added to the delays: the data's to l1 (every flow crosses it; l2 carries only
    long flows, all shifted alike), the ACKs' to l1_back. False: the ACKs return over a fixed delay
    (the links' delays and 2 us of access), fluidcc's default for links without reverses; the
    per-flow trajectories then part from ns-3's after about a second."""
    l1, l2 = ({**l, "delay_s": float(l["delay_s"]), "capacity_pps": float(l["capacity_pps"])} for l in result["links"])
    if ack_links:
        data_rx = NS3_DATA_ON_ACCESS_S + NS3_ACCESS_S
        ack_rx = NS3_ACK_ON_ACCESS_S + NS3_ACCESS_S
        links = (Link("l1", l1["capacity_pps"], l1["delay_s"] + data_rx, buffer_packets=float(l1["buffer_packets"])),
                 Link("l2", l2["capacity_pps"], l2["delay_s"], buffer_packets=float(l2["buffer_packets"])),
                 Link("l2_back", l2["capacity_pps"], l2["delay_s"], buffer_packets=10_000),
                 Link("l1_back", l1["capacity_pps"], l1["delay_s"] + ack_rx, buffer_packets=10_000))
        access = NS3_ACCESS_S
        senders = (Flow("short", ("l1",), access_delay_s=access, interface_pps=NIC_PPS, reverse_route=("l1_back",)),
                   Flow("long", ("l1", "l2"), access_delay_s=access, interface_pps=NIC_PPS,
                        reverse_route=("l2_back", "l1_back")))
    else:
        links = tuple(Link(l["name"], l["capacity_pps"], l["delay_s"], buffer_packets=float(l["buffer_packets"]))
                      for l in (l1, l2))
        senders = (Flow("short", ("l1",), access_delay_s=NIC_TO_ROUTER_S, interface_pps=NIC_PPS),
                   Flow("long", ("l1", "l2"), access_delay_s=NIC_TO_ROUTER_S, interface_pps=NIC_PPS))
    network = Network(links, senders)
    flows = result["flows"]
    table = FlowTable(np.array([f["start_s"] for f in flows]), np.full(len(flows), np.inf),
                      route=np.array([0 if f["name"] == "short" else 1 for f in flows]))
    return network, table


def add_mss_option(parser, note: str = "") -> None:
    """`--mss`: the segment fluidcc's TCP windows count in, bytes, a whole number >= 1 (default:
    ns-3's, `NS3_MSS_BYTES`), refused by the parser before any simulation runs."""
    def whole_bytes(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = 0
        if value < 1:
            raise argparse.ArgumentTypeError(f"{text!r}: a segment of whole bytes >= 1")
        return value

    parser.add_argument("--mss", type=whole_bytes, default=NS3_MSS_BYTES,
                        help=f"the segment fluidcc's TCP windows count in, bytes "
                             f"(default: ns-3's, {NS3_MSS_BYTES}{note})")


def add_handshake_option(parser) -> None:
    """`--no-handshake-ack`: fluidcc's TCP leaves out the handshake's pure ACK (`TCP(handshake_ack=
    False)`), as it did before it sent one; ns-3 always sends it."""
    parser.add_argument("--no-handshake-ack", dest="handshake_ack", action="store_false",
                        help="fluidcc's TCP does not answer the SYN-ACK with a pure ACK (ns-3 does; the tables "
                             "measured before the ACK was sent were made so)")


def seed_list(parser, text: str) -> list[int]:
    """The seeds of a `--seed-list` ("3,4"): distinct whole numbers >= 0, else the parser's error
    naming the value."""
    try:
        seeds = [int(x) for x in text.split(",")]
    except ValueError:
        parser.error(f"--seed-list: {text!r} is not whole numbers separated by commas")
    if not seeds or min(seeds) < 0 or len(set(seeds)) != len(seeds):
        parser.error(f"--seed-list: {text!r}; give distinct whole numbers >= 0")
    return seeds
