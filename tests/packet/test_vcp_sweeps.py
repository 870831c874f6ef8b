"""The VCP paper's section 4 sweeps (Figs. 3-6) at the CI scale: one point of each sweep, the four
as one batch (`fluidcc.scenarios.vcp_sweep`: disjoint link pairs of one network, two-way traffic,
buffers max(BDP, 2 packets per flow), 1000-byte packets), 60 s, statistics without the first 20 %
as the paper's. The full sweeps, and the points where the paper's figures are not reached with
the measured values and their causes, are in benchmarks/RESULTS.md (`benchmarks/vcp_packet.py`).

What is asserted, from the paper, before the run:

- Fig. 3 at its lowest capacity, 100 kb/s (RTT 80 ms, 50 flows each way): utilization >= 93 %
  ("across capacities"), and a mean queue of about half the buffer (the paper's "about 50 %"),
  taken as 40-60 %. Why half: 50 flows that each keep a packet in flight, on a path that holds
  one (BDP 1 packet), keep about 49 of the buffer's 100 places taken. That is a rough count, not
  a bound (flows waiting on a timeout hold nothing; the queue counts the reverse flows' ACKs
  too), so the band is the paper's, not this count's. The paper's loss there (0.6 %) is not
  asserted: the runs drop more (RESULTS.md).
- Fig. 5 at 10 flows each way on 15 Mb/s (80 ms), which is also a point of Fig. 3's capacity
  range: utilization >= 93 %, mean queue < 5 % of the buffer, no loss.
- Fig. 4 at 10 ms (15 Mb/s, 5 flows each way, the paper's rate per flow at a tenth of its
  capacity): utilization >= 90 %, no loss. Its mean queue (< 5 % in the paper) is not reached at
  this scale (RESULTS.md gives the measured value and the cause) and is not asserted.
- Fig. 6 at the paper's 100 short flows per second on 150 Mb/s, scaled with the capacity: 10 per
  second on 15 Mb/s (80 ms, 5 long flows each way, the basic setting at a tenth), Poisson, Pareto
  sizes of mean 30 packets (shape 1.2: the paper does not give it), arriving over the whole run on
  the forward link. The paper: "the bottleneck always maintains high utilization with small queue
  lengths and zero packet drops". Asserted: no loss, and utilization >= 90 %, the lowest figure
  the paper calls high on one link (Fig. 4's "higher than 90 %"). Its >= 93 % for this 80 ms
  setting in Fig. 3 is not asserted: it is not reached here (RESULTS.md). "Small" is not
  quantified for Fig. 6, and the paper's < 5 % of Figs. 4 and 5 is not asserted for it either
  (RESULTS.md gives the measured value).
"""

import numpy as np

from fluidcc import scenarios
from fluidcc.packet import simulate_exact
from fluidcc.packet.exact_protocols import VCP
from fluidcc.packet.workloads import Pareto, PoissonArrivals
from fluidcc.units import mbps_to_pps

DURATION = 60.0
SAMPLE = 0.1
# (capacity, RTT, flows each way); `benchmarks/vcp_packet.py --scenario ci` runs the same points
FIG3, FIG5, FIG4 = (mbps_to_pps(0.1), 0.08, 50), (mbps_to_pps(15.0), 0.08, 10), (mbps_to_pps(15.0), 0.01, 5)
FIG6 = (mbps_to_pps(15.0), 0.08, 5)
FIG6_SHORT = PoissonArrivals(10.0, Pareto(1.2, 30.0), duration_s=DURATION, seed=1003)


def test_one_point_of_each_sweep_in_one_batch_has_the_papers_figures(conserved):
    points = [FIG3, FIG5, FIG4, FIG6]
    short = FIG6_SHORT.table()
    network, tables, buffers = scenarios.vcp_sweep(points, later_s=2 * DURATION, short=[None, None, None, short])
    runs = simulate_exact(network, VCP(), tables, duration_s=DURATION, sample_s=SAMPLE,
                          seeds=list(range(len(points))), buffers=buffers)
    assert (runs.status == 0).all(), str(runs.message.values)
    conserved(runs)
    fig3, fig5, fig4, fig6 = scenarios.vcp_sweep_statistics(runs, points, buffers)  # after the first 20 %

    assert buffers[0] == 2 * FIG3[2]  # max(BDP, 2 packets per flow): the flows' part
    assert fig3["utilization"] >= 0.93 and 0.40 <= fig3["queue_mean_of_buffer"] <= 0.60, fig3

    assert fig5["utilization"] >= 0.93 and fig5["queue_mean_of_buffer"] < 0.05 and fig5["drop_fraction"] == 0, fig5

    assert fig4["utilization"] >= 0.90 and fig4["drop_fraction"] == 0, fig4

    # the scenario, not a figure of the paper: some 600 short flows (10/s for 60 s) came and went,
    # nine in ten or more finishing within the run; they are run 3's flows of finite size
    mine = np.isfinite(tables[3].size_packets) & (tables[3].start_s < DURATION)
    finished = np.isfinite(runs.isel(run=3).fct.values[mine])
    assert mine.sum() == len(short) > 500 and finished.mean() >= 0.9, (len(short), finished.sum())
    assert fig6["utilization"] >= 0.90 and fig6["drop_fraction"] == 0, fig6
