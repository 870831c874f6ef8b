"""Results of a packet simulation, independent of the engine: flow completion times, fairness and
what the links could carry.

The engine hands over per-flow arrays; everything here is vectorized NumPy. Units: sizes in
packets, capacities in packets/s, times in seconds (RTPD: round-trip propagation delay).

The references are the RCP paper ("Processor Sharing Flows in the Internet", section 3.1):
the flow completion time (FCT) runs from the sender's SYN until the receiver has the last packet,
so even an idle path takes 1.5 RTPD + L/C (one RTPD for SYN/SYN-ACK, half for the data);
under processor sharing (PS) a flow of L packets takes (equation 3)::

    FCT_PS = 1.5 RTPD + L / (C (1 - rho))

and under TCP slow start (section 3.2) ``[log2(L + 1) + 1/2] RTPD + L/C`` (`slow_start_fct`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ParameterError, ShapeError


# ------------------------------------------------------------------------------- references
def ps_fct(size_packets, capacity_pps, load, rtpd_s):
    """Processor-sharing flow completion time, s: 1.5 RTPD + L / (C (1 - rho)) (RCP paper, eq. 3).

    One RTPD of SYN/SYN-ACK, half an RTPD for the data to arrive, and the M/G/1-PS sojourn time
    L / (C (1 - rho)). size_packets: L > 0 (packets); capacity_pps: C > 0; load: rho in [0, 1);
    rtpd_s >= 0. Broadcasts; returns a float for scalar inputs, else a float64 array.
    """
    size = _array("size_packets", size_packets, lambda x: np.isfinite(x) & (x > 0), "finite sizes > 0 packets")
    capacity = _capacity(capacity_pps)
    rho = _ps_load(load)
    rtpd = _array("rtpd_s", rtpd_s, lambda x: np.isfinite(x) & (x >= 0), "a finite round-trip delay >= 0 s")
    return _out(1.5 * rtpd + size / (capacity * (1.0 - rho)))


def ps_fct_of(start_s, size_packets, capacity_pps, rtpd_s):
    """Each flow's completion time, s, if these very arrivals shared the link as processor sharing.

    The same decomposition as `ps_fct` (1.5 RTPD + the PS sojourn time), but the sojourn time is
    that of this sample of arrivals, not the M/G/1-PS mean: the link serves every flow in progress
    at C / n, event by event (arrivals and departures). `ps_fct` is its expectation; for
    heavy-tailed sizes a finite sample's load can differ from rho by far (Pareto with shape 1.2:
    a 60 s sample at rho = 0.9 offered 0.63), so this is the reference for one simulation run.
    start_s: (F,) arrival times, s; size_packets: (F,) finite sizes > 0; capacity_pps > 0;
    rtpd_s >= 0. Returns (F,) float64.
    """
    start = _array("start_s", start_s, np.isfinite, "finite start times, s")
    size = _array("size_packets", size_packets, lambda x: np.isfinite(x) & (x > 0), "finite sizes > 0 packets")
    _same_length(start_s=np.atleast_1d(start), size_packets=np.atleast_1d(size))
    capacity = float(_capacity(capacity_pps))
    rtpd = float(_array("rtpd_s", rtpd_s, lambda x: np.isfinite(x) & (x >= 0), "a finite round-trip delay >= 0 s"))
    start, size = np.atleast_1d(start), np.atleast_1d(size)
    order = np.argsort(start, kind="stable")
    finish = np.full(start.shape, np.nan)
    active: list[int] = []
    remaining: list[float] = []  # packets left, per active flow
    now = 0.0
    k = 0
    while k < len(order) or active:
        rate = capacity / len(active) if active else 0.0
        next_done = now + min(remaining) / rate if active else np.inf
        next_arrival = start[order[k]] if k < len(order) else np.inf
        until = min(next_done, next_arrival)
        if active:
            served = (until - now) * rate
            remaining = [r - served for r in remaining]
        now = until
        if next_done <= next_arrival:
            # every flow within rounding of done leaves now
            tol = 1e-9 * max(1.0, max(remaining, key=abs))
            keep = [(i, r) for i, r in zip(active, remaining) if r > tol]
            for i, r in zip(active, remaining):
                if r <= tol:
                    finish[i] = now
            active = [i for i, _ in keep]
            remaining = [r for _, r in keep]
        else:
            active.append(int(order[k]))
            remaining.append(float(size[order[k]]))
            k += 1
    return 1.5 * rtpd + (finish - start)


def slowdown(fct_s, size_packets, capacity_pps, load, rtpd_s):
    """FCT over the processor-sharing FCT of the same size (dimensionless; 1 = as good as PS).

    fct_s: measured completion times, s (>= 0; nan for an unfinished flow gives nan). The other
    arguments as in `ps_fct`.
    """
    fct = _array("fct_s", fct_s, lambda x: np.isnan(x) | (np.isfinite(x) & (x >= 0)),
                 "completion times >= 0 s (nan: unfinished)")
    return _out(fct / ps_fct(size_packets, capacity_pps, load, rtpd_s))


def slow_start_fct(size_packets, rtpd_s, capacity_pps, initial_window=2, *, continuous=False):
    """Completion time, s, of a flow that spends its life in TCP slow start on an idle path.

    With an initial window of w0 packets doubling every round trip, after r rounds the sender has
    sent w0 (2**r - 1) packets, so L packets take r = ceil(log2(L / w0 + 1)) rounds. The SYN/SYN-ACK
    takes one RTPD, the first round leaves with the handshake's ACK, round r leaves (r - 1) RTPD
    later and arrives half an RTPD after that, plus the transmission time L/C::

        FCT = handshake + (r - 1) RTPD + RTPD / 2 + L/C = [ceil(log2(L / w0 + 1)) + 1/2] RTPD + L/C

    The handshake is inside the bracket. For w0 = 1 this is the integer form of the RCP paper's
    slow-start curve ``[log2(L + 1) + 1/2] RTPD + L/C`` (section 3.2), which `continuous=True`
    returns (with L / w0 in place of L): both agree when L / w0 + 1 is a power of two. A one-packet
    flow takes 1.5 RTPD + 1/C, the idle-path minimum -- adding another handshake RTPD to the
    paper's expression would count it twice.

    size_packets: L > 0; rtpd_s >= 0; capacity_pps: C > 0; initial_window: w0, a whole number
    of packets >= 1 (2: the ns-2 TCP Reno the RCP paper compares with). Ignores queueing, losses
    and the slow-start threshold. Returns a float for scalar inputs, else a float64 array.
    """
    size = _array("size_packets", size_packets, lambda x: np.isfinite(x) & (x > 0), "finite sizes > 0 packets")
    rtpd = _array("rtpd_s", rtpd_s, lambda x: np.isfinite(x) & (x >= 0), "a finite round-trip delay >= 0 s")
    capacity = _capacity(capacity_pps)
    w0 = np.asarray(initial_window, dtype=np.float64)
    if w0.ndim or not (np.isfinite(w0) and w0 >= 1 and w0 == np.floor(w0)):
        raise ParameterError("initial_window", initial_window, "a whole number of packets >= 1")
    rounds = np.log2(size / w0 + 1.0)
    if not continuous:
        rounds = np.ceil(rounds)
        # log2 is not exact: make r the least whole number with w0 (2**r - 1) >= L
        rounds = np.where(w0 * (2.0 ** (rounds - 1.0) - 1.0) >= size, rounds - 1.0, rounds)
        rounds = np.where(w0 * (2.0**rounds - 1.0) < size, rounds + 1.0, rounds)
    return _out((rounds + 0.5) * rtpd + size / capacity)


# ------------------------------------------------------------------------------- aggregates
def afct_by_size(size_packets, fct_s, bins=None, min_flows=1, *, capacity_pps=None, load=None, rtpd_s=None):
    """Average flow completion time by flow size, as a pandas DataFrame (one row per bin).

    size_packets: (F,) sizes, finite > 0 packets. fct_s: (F,) completion times, s (nan:
    unfinished, counted in `unfinished` and left out of the averages).
    bins: None or "log": power-of-two bins [2**k, 2**(k+1)) covering the sizes; an int n: n
    log-spaced bins from the smallest to the largest size; an array: increasing bin edges (flows
    outside them are left out). Bins are [low, high), the last one of an int or array [low, high].
    min_flows: bins with fewer finished flows have ``enough = False`` (their numbers are kept).

    Columns: bin_low, bin_high (packets), flows (finished), unfinished, mean_size_packets,
    afct_s (nan if no finished flow), enough; with capacity_pps, load and rtpd_s (all three) also
    ps_afct_s, the mean `ps_fct` of the same finished flows.
    """
    size = _array("size_packets", size_packets, lambda x: np.isfinite(x) & (x > 0), "finite sizes > 0 packets")
    fct = _array("fct_s", fct_s, lambda x: np.isnan(x) | (np.isfinite(x) & (x >= 0)),
                 "completion times >= 0 s (nan: unfinished)")
    _same_length(size_packets=size, fct_s=fct)
    if not (isinstance(min_flows, (int, np.integer)) and not isinstance(min_flows, bool) and min_flows >= 1):
        raise ParameterError("min_flows", min_flows, "a whole number of flows >= 1")
    with_ps = _ps_given(capacity_pps, load, rtpd_s)

    edges = _edges(bins, size)
    n_bins = len(edges) - 1
    index = np.searchsorted(edges, size, side="right") - 1
    if not (bins is None or isinstance(bins, str)):
        index = np.where(size == edges[-1], n_bins - 1, index)  # last bin closed
    inside = (index >= 0) & (index < n_bins)
    done = inside & ~np.isnan(fct)

    def per_bin(mask, weights=None):
        return np.bincount(index[mask], weights=None if weights is None else weights[mask], minlength=n_bins)

    flows = per_bin(done).astype(np.int64)
    with np.errstate(invalid="ignore", divide="ignore"):
        frame = pd.DataFrame({
            "bin_low": edges[:-1], "bin_high": edges[1:], "flows": flows,
            "unfinished": per_bin(inside & np.isnan(fct)).astype(np.int64),
            "mean_size_packets": per_bin(done, size) / flows,
            "afct_s": per_bin(done, fct) / flows,
            "enough": flows >= min_flows,
        })
        if with_ps:
            reference = np.zeros_like(size)
            if np.any(done):
                reference[done] = ps_fct(size[done], capacity_pps, load, rtpd_s)
            else:
                ps_fct(1.0, capacity_pps, load, rtpd_s)  # validates the parameters all the same
            frame["ps_afct_s"] = per_bin(done, reference) / flows
    return frame


def jain_fairness(throughputs, axis=-1):
    """Jain's fairness index (sum x)**2 / (n sum x**2) along `axis`: 1 when all are equal, 1/n when
    one flow has everything. throughputs: >= 0 (any unit), at least one per row and one > 0 in
    each row. Returns a float for one row, else an array.
    """
    x = _array("throughputs", throughputs, lambda v: np.isfinite(v) & (v >= 0), "finite throughputs >= 0")
    if x.ndim == 0 or x.shape[axis] == 0:
        raise ParameterError("throughputs", throughputs, "at least one throughput (along the axis)")
    largest = x.max(axis=axis, keepdims=True)
    if np.any(largest == 0):
        raise ParameterError("throughputs", throughputs, "at least one throughput > 0 (all zero is 0/0)")
    x = x / largest  # the index is scale-free; this keeps x**2 from underflowing or overflowing
    return _out(x.sum(axis=axis) ** 2 / (x.shape[axis] * np.sum(x**2, axis=axis)))


def summary(start_s, finish_s, size_packets, delivered_packets, *, end_s=None, capacity_pps=None, load=None,
            rtpd_s=None) -> dict:
    """Headline numbers of one run from per-flow arrays (F,).

    start_s: flow starts, s. finish_s: completion times, s (nan: unfinished). size_packets: whole
    packets or inf (long-lived). delivered_packets: packets the receiver got, >= 0. end_s: when
    the simulation ended, s (needed for the throughput of unfinished flows, nan without it).

    Returns a dict: flows (int), finished (int), afct_s (mean FCT = finish - start of the finished
    flows, s; nan if none), throughput_pps ((F,) delivered / time the flow was in the system,
    packets/s), and with capacity_pps, load and rtpd_s, mean_slowdown (mean `slowdown` of the
    finished flows of finite size; nan if none).
    """
    start = _array("start_s", start_s, lambda x: np.isfinite(x) & (x >= 0), "finite start times >= 0 s")
    finish = _array("finish_s", finish_s, lambda x: ~np.isinf(x), "finish times in s (nan: unfinished)")
    size = _array("size_packets", size_packets, lambda x: x > 0, "sizes > 0 packets (inf: long-lived)")
    delivered = _array("delivered_packets", delivered_packets, lambda x: np.isfinite(x) & (x >= 0),
                       "delivered packets >= 0")
    _same_length(start_s=start, finish_s=finish, size_packets=size, delivered_packets=delivered)
    if start.ndim != 1:
        raise ShapeError("start_s", f"shape {start.shape}", "one value per flow, shape (F,)")
    finished = ~np.isnan(finish)
    if np.any(finish[finished] < start[finished]):
        i = int(np.argmax(finished & (finish < start)))
        raise ParameterError(f"finish_s[{i}]", finish[i], f"a finish time >= the flow's start ({start[i]} s)")
    if end_s is not None and not (np.isfinite(end_s) and end_s >= np.max(start, initial=0.0)):
        raise ParameterError("end_s", end_s, "a finite simulation end >= every flow's start (s)")
    fct = finish - start
    until = np.where(finished, finish, np.nan if end_s is None else end_s)
    with np.errstate(invalid="ignore", divide="ignore"):
        throughput = delivered / (until - start)
    result = {
        "flows": int(start.shape[0]),
        "finished": int(finished.sum()),
        "afct_s": float(np.mean(fct[finished])) if finished.any() else float("nan"),
        "throughput_pps": throughput,
    }
    if _ps_given(capacity_pps, load, rtpd_s):
        scored = finished & np.isfinite(size)
        values = slowdown(fct[scored], size[scored], capacity_pps, load, rtpd_s) if scored.any() else np.array([])
        result["mean_slowdown"] = float(np.mean(values)) if scored.any() else float("nan")
    return result


def link_capacity_packets(network, edges_s) -> np.ndarray:
    """Packets each link of `network` could send in each interval between consecutive `edges_s`
    (s, increasing, >= 0): its capacity integrated over the interval, following its capacity
    schedule (`Network.capacity_schedule`). Shape (len(edges_s) - 1, L); the utilization of an
    interval is what the link sent in it over this.
    """
    edges = _array("edges_s", edges_s, lambda x: np.isfinite(x) & (x >= 0), "finite times >= 0 s")
    if edges.ndim != 1 or edges.size < 2 or np.any(np.diff(edges) < 0):
        raise ParameterError("edges_s", edges_s, "at least two times (s), not decreasing")
    out = np.empty((edges.size - 1, network.n_links))
    for link in range(network.n_links):
        times, capacities = network.capacity_schedule(link)
        # packets the link could have sent from 0 to each change of capacity, then to each edge
        at_changes = np.concatenate([[0.0], np.cumsum(np.diff(times) * capacities[:-1])])
        k = np.searchsorted(times, edges, side="right") - 1
        out[:, link] = np.diff(at_changes[k] + (edges - times[k]) * capacities[k])
    return out


# ------------------------------------------------------------------------------- helpers
def _array(name: str, value, ok, allowed: str) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise ParameterError(name, value, allowed) from None
    bad = ~ok(array)
    if np.any(bad):
        flat = np.flatnonzero(bad)[0]
        where = name if array.ndim == 0 else f"{name}[{flat}]"
        raise ParameterError(where, array.reshape(-1)[flat].item(), allowed)
    return array


def _capacity(capacity_pps) -> np.ndarray:
    return _array("capacity_pps", capacity_pps, lambda x: np.isfinite(x) & (x > 0), "a finite capacity > 0 packets/s")


def _ps_load(load) -> np.ndarray:
    return _array("load", load, lambda x: np.isfinite(x) & (x >= 0) & (x < 1),
                  "a load in [0, 1): a load < 1 for a processor-sharing comparison "
                  "(processor sharing has no steady state at load >= 1)")


def _ps_given(capacity_pps, load, rtpd_s) -> bool:
    given = [x is not None for x in (capacity_pps, load, rtpd_s)]
    if any(given) and not all(given):
        raise ParameterError("capacity_pps, load, rtpd_s", (capacity_pps, load, rtpd_s),
                             "all three (for the processor-sharing comparison) or none")
    return all(given)


def _same_length(**arrays) -> None:
    lengths = {name: np.shape(a)[0] if np.ndim(a) else None for name, a in arrays.items()}
    first_name, first = next(iter(lengths.items()))
    for name, n in lengths.items():
        if n is None or n != first:
            raise ShapeError(name, f"shape {np.shape(arrays[name])}",
                             f"one value per flow, like {first_name} (shape {np.shape(arrays[first_name])})")


def _edges(bins, size: np.ndarray) -> np.ndarray:
    if bins is None or (isinstance(bins, str) and bins == "log"):
        if size.size == 0:
            return np.array([1.0, 2.0])
        # frexp: x = m 2**e with m in [0.5, 1), so floor(log2 x) = e - 1 exactly
        low = np.frexp(size.min())[1] - 1
        high = np.frexp(size.max())[1]
        return 2.0 ** np.arange(low, high + 1, dtype=np.float64)
    if isinstance(bins, str):
        raise ParameterError("bins", bins, "None or 'log' (powers of two), a number of bins, or bin edges")
    if isinstance(bins, (int, np.integer)) and not isinstance(bins, bool):
        if bins < 1:
            raise ParameterError("bins", bins, "a number of bins >= 1")
        if size.size == 0:
            raise ParameterError("bins", bins, "bin edges (a number of bins needs at least one flow)")
        low, high = size.min(), size.max()
        return np.geomspace(low, high, bins + 1) if high > low else np.array([low, high])
    edges = np.asarray(bins, dtype=np.float64)
    if edges.ndim != 1 or edges.size < 2 or not np.all(np.isfinite(edges)) or np.any(np.diff(edges) <= 0):
        raise ParameterError("bins", bins, "at least two finite, strictly increasing bin edges (packets)")
    return edges


def _out(array: np.ndarray):
    array = np.asarray(array, dtype=np.float64)
    return float(array) if array.ndim == 0 else array
