"""Flow completion times at packet level: TCP, RCP and QCP against processor sharing (RCP paper, Fig. 7).

With fluidcc's packet engine (`fluidcc.packet`): one bottleneck, RTPD 100 ms, flows arriving as a
Poisson process with Pareto sizes (shape 1.2, mean 25 packets of 1000 bytes) at offered load
rho = 0.9 and 0.5 (RCP paper, section 3.2, Fig. 7 at rho = 0.9), every flow from its SYN to its
last packet. The three protocols see the same arrivals (QCP: eqs. (4) and (12) of the QCP paper,
alpha = beta = 1). References: processor sharing by eq. (3),
1.5 RTPD + L / (C (1 - rho)), and processor sharing of the very sample of arrivals
(`metrics.ps_fct_of`: a heavy-tailed sample offers a load that can be far from rho), and for TCP
the slow-start curve [log2(L/2 + 1) + 1/2] RTPD + L/C. The paper ran C = 2.4 Gb/s; here C is
40 Mb/s (5000 packets/s, 30 s of arrivals: about 5 400 flows, each a lane of the engine, which is
what runs in minutes on 2 cores).

Run:

    python examples/packet_fct.py --out packet-fct            # a few minutes on 2 cores
    python examples/packet_fct.py --quick --out packet-fct    # 8 Mb/s, 10 s of arrivals

It prints per size bin the AFCT of each protocol, the two PS references and their ratios, and
writes afct_rho0.9.png/.csv, afct_rho0.5.png/.csv and results.json into --out.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from _report import run, table, write_csv  # examples/_report.py

RTPD = 0.1
SHAPE, MEAN = 1.2, 25.0
#: Bins with at least this many finished flows are the ones compared (the issue's criterion).
MIN_FLOWS = 200


def main(argv: list[str] | None = None) -> int:
    sections = (("rho_0.9", lambda out, quick: afct(out, quick, 0.9)),
                ("rho_0.5", lambda out, quick: afct(out, quick, 0.5)))
    return run(__doc__.split("\n\n")[0], sections, "8 Mb/s and 10 s of arrivals instead of 40 Mb/s and 30 s", argv)


def afct(out: Path, quick: bool, load: float) -> dict:
    import matplotlib.pyplot as plt

    from fluidcc.network import Flow, Link, Network
    from fluidcc.packet import simulate
    from fluidcc.packet.metrics import afct_by_size, ps_fct_of, slow_start_fct
    from fluidcc.packet.protocols import QCP, RCP, TCP
    from fluidcc.packet.workloads import Pareto, PoissonArrivals

    capacity, arrivals = (1000.0, 10.0) if quick else (5000.0, 30.0)
    slot = 5.0 / capacity  # five packet times
    network = Network((Link("bottleneck", capacity, RTPD / 2),), (Flow("f", ("bottleneck",)),))
    flows = PoissonArrivals.for_load(load, Pareto(SHAPE, MEAN), capacity, duration_s=arrivals, seed=1).table()
    sizes = flows.size_packets
    sample_load = float(sizes.sum() / (capacity * arrivals))
    sample_ps = ps_fct_of(flows.start_s, sizes, capacity, RTPD)
    print(f"rho = {load}: {len(flows)} flows in {arrivals:g} s on {capacity * 8 / 1000:g} Mb/s; the sample "
          f"offers {sample_load:.3f}")
    columns = {}
    summary = {"flows": len(flows), "sample_load": sample_load, "capacity_pps": capacity, "slot_s": slot}
    for name, protocol in (("tcp", TCP()), ("rcp", RCP()), ("qcp", QCP())):
        result = simulate(network, protocol, flows, duration_s=arrivals + 20.0, slot_s=slot, sample_s=1.0)
        fct = result.fct.values[0]
        frame = afct_by_size(sizes, fct, min_flows=MIN_FLOWS, capacity_pps=capacity, load=load, rtpd_s=RTPD)
        reference = afct_by_size(sizes, np.where(np.isfinite(fct), sample_ps, np.nan), min_flows=MIN_FLOWS)
        # slow start: each finished flow's own curve, averaged per bin like its FCT (the curve at a
        # bin's mean size would miss that its ceil(log2) steps up inside the bin)
        own = afct_by_size(sizes, np.where(np.isfinite(fct), slow_start_fct(sizes, RTPD, capacity), np.nan),
                           min_flows=MIN_FLOWS)
        columns[name] = (frame, reference, own)
        summary[name] = {"unfinished": int(np.sum(~np.isfinite(fct))), "drops": int(result.dropped.sum()),
                         "utilization": float(result.link_accepted.sum() / (capacity * (arrivals + 20.0))),
                         "wall_s": float(result.attrs["wall_s"])}
    rows, csv_rows = [], []
    frame_tcp, _, slow_start = columns["tcp"]
    frame_rcp, ref_rcp, _ = columns["rcp"]
    frame_qcp, _, _ = columns["qcp"]
    for k in range(len(frame_rcp)):
        if frame_rcp.flows[k] == 0:
            continue
        mean_size = float(frame_rcp.mean_size_packets[k])
        entry = {"bin": f"[{frame_rcp.bin_low[k]:g}, {frame_rcp.bin_high[k]:g})", "flows": int(frame_rcp.flows[k]),
                 "mean_size": mean_size, "tcp_afct_s": float(frame_tcp.afct_s[k]),
                 "rcp_afct_s": float(frame_rcp.afct_s[k]), "qcp_afct_s": float(frame_qcp.afct_s[k]),
                 "ps_eq3_s": float(frame_rcp.ps_afct_s[k]),
                 "ps_sample_s": float(ref_rcp.afct_s[k]),
                 "slow_start_s": float(slow_start.afct_s[k]),
                 "enough": bool(frame_rcp.flows[k] >= MIN_FLOWS)}
        entry["rcp_over_ps_sample"] = entry["rcp_afct_s"] / entry["ps_sample_s"]
        entry["rcp_over_ps_eq3"] = entry["rcp_afct_s"] / entry["ps_eq3_s"]
        entry["qcp_over_ps_sample"] = entry["qcp_afct_s"] / entry["ps_sample_s"]
        entry["tcp_over_slow_start"] = entry["tcp_afct_s"] / entry["slow_start_s"]
        csv_rows.append({"load": load, **entry})
        rows.append([entry["bin"], entry["flows"], f"{mean_size:.1f}", f"{entry['tcp_afct_s']:.3f}",
                     f"{entry['rcp_afct_s']:.3f}", f"{entry['qcp_afct_s']:.3f}", f"{entry['ps_sample_s']:.3f}",
                     f"{entry['ps_eq3_s']:.3f}", f"{entry['rcp_over_ps_sample']:.2f}", f"{entry['rcp_over_ps_eq3']:.2f}",
                     f"{entry['qcp_over_ps_sample']:.2f}",
                     f"{entry['tcp_over_slow_start']:.2f}", "yes" if entry["enough"] else ""])
    print(table(["bin (packets)", "flows", "mean L", "TCP", "RCP", "QCP", "PS sample", "PS eq.3", "RCP/PS sample",
                 "RCP/PS eq.3", "QCP/PS sample", "TCP/slow start", f">= {MIN_FLOWS}"], rows))
    for name in ("tcp", "rcp", "qcp"):
        s = summary[name]
        print(f"{name}: {s['unfinished']} unfinished, {s['drops']} drops, utilization {s['utilization']:.3f}, "
              f"{s['wall_s']:.1f} s")
    write_csv(out / f"afct_rho{load}.csv", csv_rows)
    figure, axis = plt.subplots(figsize=(6.5, 4.5))
    size_axis = np.array([r["mean_size"] for r in csv_rows])
    axis.plot(size_axis, [r["tcp_afct_s"] for r in csv_rows], "s-", label="TCP NewReno")
    axis.plot(size_axis, [r["rcp_afct_s"] for r in csv_rows], "o-", label="RCP")
    axis.plot(size_axis, [r["qcp_afct_s"] for r in csv_rows], "^-", label="QCP")
    axis.plot(size_axis, [r["ps_sample_s"] for r in csv_rows], "k--", label="PS, this sample")
    curve = np.geomspace(max(size_axis.min(), 1.0), size_axis.max(), 100)
    axis.plot(curve, 1.5 * RTPD + curve / (capacity * (1 - load)), "k:", label=f"PS, eq. (3), rho = {load}")
    axis.plot(curve, slow_start_fct(curve, RTPD, capacity, continuous=True), color="grey", lw=0.8,
              label="slow start")
    axis.set(xscale="log", yscale="log", xlabel="flow size (packets)", ylabel="AFCT (s)",
             title=f"AFCT by flow size, rho = {load}, C = {capacity * 8 / 1000:g} Mb/s, RTPD {RTPD * 1000:g} ms")
    axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(out / f"afct_rho{load}.png", dpi=120)
    plt.close(figure)
    summary["bins"] = csv_rows
    return summary


if __name__ == "__main__":
    raise SystemExit(main())
