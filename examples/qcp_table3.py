"""Flows finished under heavy load at packet level: QCP against RCP (QCP paper, Table 3, Figs. 6-7).

The QCP paper's scenario: one 400 Mb/s link of 50 ms (RTPD 100 ms), buffer one BDP, flows
arriving as a Poisson process of 8333.3 flows/s with Pareto sizes (shape 1.2, mean 30 packets of
1000 bytes) -- an offered load of about 5 -- for 26.061 s; Table 3 counts the flows that finished
in that time: RCP 17 280, QCP 66 212 (3.8 times as many). Fig. 6 plots the AFCT of the flows that
finish in each 2 s interval against time, Fig. 7 the FCT CDF of the 17 280 finished RCP flows
against the first 17 280 QCP flows to finish. RCP runs with alpha = 0.1, beta = 1 (as the paper's
"rest of the paper"), QCP with alpha = beta = 1, both on fluidcc's packet engine
(`fluidcc.packet.protocols`), with the same arrivals; QCP's simplified rate (eq. (14)) runs too.

Scale: the link's capacity and the arrival rate are both multiplied by `scale` (load, flow sizes,
RTPD, buffer in RTTs and the time stay the paper's), because the engine keeps one lane per flow
(at full scale 217 000 flows). Full run: scale 0.05 (20 Mb/s, 416.7 flows/s, about 10 900
flows); quick: scale 0.02 (8 Mb/s). Slots of five packet times. The paper's counts are compared
as the ratio QCP / RCP and as fractions of the flows that arrived.

Run:

    python examples/qcp_table3.py --out qcp-table3            # a few minutes on 2 cores
    python examples/qcp_table3.py --quick --out qcp-table3    # scale 0.02

It prints the table, and writes table3.csv, fig6_7.png and results.json into --out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from _report import run, table, write_csv  # examples/_report.py

CAPACITY_PPS = 50_000.0  # 400 Mb/s of 1000-byte packets
ARRIVALS_PER_S = 8333.3
SHAPE, MEAN = 1.2, 30.0
LINK_DELAY = 0.05
HORIZON = 26.061
PAPER = {"rcp": 17_280, "qcp": 66_212}
INTERVAL = 2.0  # s, Fig. 6's bins of finishing time


def main(argv: list[str] | None = None) -> int:
    sections = (("table3", table3),)
    return run(__doc__.split("\n\n")[0], sections, "scale 0.02 (8 Mb/s) instead of 0.05 (20 Mb/s)", argv)


def table3(out: Path, quick: bool) -> dict:
    import matplotlib.pyplot as plt

    from fluidcc.network import Flow, Link, Network
    from fluidcc.packet import simulate
    from fluidcc.packet.protocols import QCP, RCP
    from fluidcc.packet.workloads import Pareto, PoissonArrivals

    scale = 0.02 if quick else 0.05
    capacity = CAPACITY_PPS * scale
    network = Network((Link("bottleneck", capacity, LINK_DELAY),), (Flow("f", ("bottleneck",)),))
    flows = PoissonArrivals(ARRIVALS_PER_S * scale, Pareto(SHAPE, MEAN), duration_s=HORIZON, seed=1).table()
    offered = float(flows.size_packets.sum() / (capacity * HORIZON))
    print(f"scale {scale:g}: {capacity * 8 / 1000:g} Mb/s, {len(flows)} flows in {HORIZON} s, "
          f"offered load {offered:.2f}")
    summary = {"scale": scale, "capacity_pps": capacity, "flows": len(flows), "offered_load": offered,
               "paper": PAPER}
    protocols = (("rcp", RCP(alpha=0.1, beta=1.0)), ("qcp", QCP()), ("qcp_simplified", QCP(variant="simplified")))
    finish_times = {}
    rows, csv_rows = [], []
    for name, protocol in protocols:
        result = simulate(network, protocol, flows, duration_s=HORIZON, slot_s=5.0 / capacity, sample_s=1.0)
        fct = result.fct.values[0]
        done = np.isfinite(fct)
        finish_times[name] = (flows.start_s[done] + fct[done], fct[done])
        entry = {"protocol": name, "finished": int(done.sum()), "fraction": float(done.mean()),
                 "afct_finished_s": float(fct[done].mean()) if done.any() else float("nan"),
                 "utilization": float(result.link_accepted.sum() / (capacity * HORIZON)),
                 "drops": int(result.dropped.sum()), "wall_s": float(result.attrs["wall_s"])}
        summary[name] = entry
        csv_rows.append(entry)
    base = summary["rcp"]["finished"]
    for entry in csv_rows:
        name = entry["protocol"]
        paper = PAPER.get(name)  # the paper ran RCP and QCP, not the simplified rate
        rows.append([name, entry["finished"], f"{entry['fraction']:.3f}", f"{entry['finished'] / max(base, 1):.2f}",
                     f"{paper / PAPER['rcp']:.2f}" if paper else "", f"{entry['afct_finished_s']:.2f}",
                     f"{entry['utilization']:.3f}", entry["drops"], f"{entry['wall_s']:.0f}"])
    print(table(["protocol", "finished", "of arrivals", "/ RCP", "paper / RCP", "AFCT finished (s)", "utilization",
                 "drops", "wall (s)"], rows))
    summary["qcp_over_rcp"] = summary["qcp"]["finished"] / max(base, 1)
    summary["paper_qcp_over_rcp"] = PAPER["qcp"] / PAPER["rcp"]
    write_csv(out / "table3.csv", csv_rows)

    figure, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    edges = np.arange(0.0, HORIZON + INTERVAL, INTERVAL)
    for name, style in (("rcp", "o-"), ("qcp", "s-"), ("qcp_simplified", "^--")):
        end, fct = finish_times[name]
        which = np.digitize(end, edges) - 1
        means = [fct[which == k].mean() if np.any(which == k) else np.nan for k in range(len(edges) - 1)]
        left.plot(edges[1:], means, style, label=name.replace("_", " ").upper())
        first = np.sort(fct[np.argsort(end)][:base])  # the first `base` flows to finish (Fig. 7)
        right.plot(first, np.arange(1, len(first) + 1) / max(len(first), 1), label=name.replace("_", " ").upper())
    left.set(xlabel="time (s)", ylabel=f"AFCT of flows finishing in each {INTERVAL:g} s (s)",
             title="Fig. 6: AFCT of finishing flows over time")
    right.set(xscale="log", xlabel="FCT (s)", ylabel="CDF",
              title=f"Fig. 7: FCT CDF, the first {base} flows to finish")
    for axis in (left, right):
        axis.legend(fontsize=8)
    figure.suptitle(f"QCP paper Table 3 at scale {scale:g}: {capacity * 8 / 1000:g} Mb/s, "
                    f"{ARRIVALS_PER_S * scale:.1f} flows/s, Pareto({SHAPE:g}, {MEAN:g} packets)", fontsize=10)
    figure.tight_layout()
    figure.savefig(out / "fig6_7.png", dpi=120)
    plt.close(figure)
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
