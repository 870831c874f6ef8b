"""Matplotlib helpers: sweep heat maps, stability maps, time series of fluid runs and packet runs (files, no screen needed)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import xarray as xr  # noqa: E402
from matplotlib.colors import BoundaryNorm, ListedColormap  # noqa: E402

from .stability.classify import BEHAVIOUR_NAMES, Behaviour  # noqa: E402

_BEHAVIOUR_COLOURS = ["#2b8a3e", "#a9e34b", "#f59f00", "#c92a2a", "#495057", "#74c0fc"]


def finish_figure(fig, legends, title: str, path: str | Path) -> None:
    """A notebook figure's last touches: legends on the axes `legends`, the title, a tight layout,
    saved at `path` (120 dpi)."""
    for axis in legends:
        axis.legend(fontsize=8)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def sweep_heatmap(dataset: xr.Dataset, path: str | Path | None = None):
    """Behaviour map and oscillation amplitude of a sweep (first two grid axes; others at index 0)."""
    behaviour = dataset["behaviour"]
    amplitude = dataset["amplitude"]
    dims = list(behaviour.dims)
    extra = {d: 0 for d in dims[2:]}
    behaviour, amplitude = behaviour.isel(extra), amplitude.isel(extra)
    note = ", ".join(f"{d} = {float(dataset[d][0]):.4g}" for d in extra)
    cmap = ListedColormap(_BEHAVIOUR_COLOURS)
    norm = BoundaryNorm(np.arange(len(_BEHAVIOUR_COLOURS) + 1) - 0.5, cmap.N)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), constrained_layout=True)
    if len(dims) == 1:
        x = dataset[dims[0]].values
        axes[0].scatter(x, behaviour.values, c=behaviour.values, cmap=cmap, norm=norm)
        axes[0].set_yticks(range(len(BEHAVIOUR_NAMES)), BEHAVIOUR_NAMES)
        axes[0].set_xlabel(_label(dataset, dims[0]))
        axes[1].semilogy(x, np.where(amplitude.values > 0, amplitude.values, np.nan), ".-")
        axes[1].set_xlabel(_label(dataset, dims[0]))
        axes[1].set_ylabel("relative amplitude")
    else:
        xdim, ydim = dims[1], dims[0]
        x, y = dataset[xdim].values, dataset[ydim].values
        mesh = axes[0].pcolormesh(x, y, behaviour.values, cmap=cmap, norm=norm, shading="nearest")
        bar = fig.colorbar(mesh, ax=axes[0], ticks=range(len(BEHAVIOUR_NAMES)))
        bar.ax.set_yticklabels(BEHAVIOUR_NAMES)
        oscillating = behaviour.values == int(Behaviour.OSCILLATING)
        amp = np.where(oscillating & (amplitude.values > 0), amplitude.values, np.nan)
        with np.errstate(divide="ignore", invalid="ignore"):
            mesh2 = axes[1].pcolormesh(x, y, np.log10(amp), shading="nearest", cmap="viridis")
        fig.colorbar(mesh2, ax=axes[1], label="log10 relative amplitude")
        for ax in axes:
            ax.set_xlabel(_label(dataset, xdim))
            ax.set_ylabel(_label(dataset, ydim))
            for dim, setter in ((xdim, ax.set_xscale), (ydim, ax.set_yscale)):
                if dataset[dim].attrs.get("grid", "").endswith(":log"):
                    setter("log")
            if "kappa" in (xdim, ydim):
                # Theorem 1 (VCP paper): kappa <= 1/2 is sufficient for global stability.
                (ax.axvline if xdim == "kappa" else ax.axhline)(0.5, color="white", ls="--", lw=1.2)
    axes[0].set_title("behaviour" + (f" ({note})" if note else ""))
    axes[1].set_title("amplitude of sustained oscillation")
    fig.suptitle(dataset.attrs.get("title", "sweep"))
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def _label(dataset: xr.Dataset, dim: str) -> str:
    unit = dataset[dim].attrs.get("units", "")
    return f"{dim} [{unit}]" if unit else dim


def timeseries_figure(dataset: xr.Dataset, path: str | Path | None = None):
    """Windows, rates and load factor of a `fluidcc simulate` dataset over time (per-flow models),
    or every state with its equilibrium (aggregate models)."""
    if "window" not in dataset:
        return _aggregate_timeseries(dataset, path)
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True, constrained_layout=True)
    t = dataset["time"].values
    for name, ax, label in (("window", axes[0], "window [packets]"), ("rate", axes[1], "rate [packets/s]")):
        values = dataset[name].values
        for i in range(values.shape[1]):
            ax.plot(t, values[:, i], lw=0.8)
        if "equilibrium_" + name in dataset:
            for value in np.unique(np.round(dataset["equilibrium_" + name].values, 9)):
                ax.axhline(value, color="k", ls=":", lw=0.8)
        ax.set_yscale("log")
        ax.set_ylabel(label)
    axes[2].plot(t, dataset["load_factor"].values, color="C3")
    axes[2].axhline(1.0, color="k", ls=":", lw=0.8)
    axes[2].set_ylabel("load factor rho")
    axes[2].set_xlabel("time [s]")
    axes[0].set_title(dataset.attrs.get("title", "simulation"))
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def _aggregate_timeseries(dataset: xr.Dataset, path):
    names = [n for n in dataset.data_vars if not n.startswith("equilibrium_")]
    fig, axes = plt.subplots(len(names), 1, figsize=(9, 2.8 * len(names)), sharex=True, constrained_layout=True,
                             squeeze=False)
    t = dataset["time"].values
    for ax, name in zip(axes[:, 0], names):
        ax.plot(t, dataset[name].values, lw=0.9)
        if "equilibrium_" + name in dataset:
            ax.axhline(float(dataset["equilibrium_" + name]), color="k", ls=":", lw=0.8, label="equilibrium")
            ax.legend(loc="best", fontsize=8)
        unit = dataset[name].attrs.get("units", "")
        ax.set_ylabel(f"{name} [{unit}]" if unit else name)
    axes[-1, 0].set_xlabel("time [s]")
    axes[0, 0].set_title(dataset.attrs.get("title", "simulation"))
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def stability_figure(dataset: xr.Dataset, path: str | Path | None = None, curves: dict | None = None):
    """Linear and simulated stability maps of a 2-D grid, with the linear boundary on both.

    curves: optional {label: (x, y)} drawn on every panel, e.g. an analytic D-subdivision curve
    (x along the second grid axis, y along the first, as in the maps).
    """
    dims = [d for d in dataset.dims]
    if len(dims) != 2:
        raise ValueError(f"stability_figure needs a 2-D grid, got axes {dims}")
    ydim, xdim = dims
    x, y = dataset[xdim].values, dataset[ydim].values
    panels = [name for name in ("linear_stable", "behaviour", "behaviour_smooth") if name in dataset]
    fig, axes = plt.subplots(1, len(panels), figsize=(5.6 * len(panels), 4.6), constrained_layout=True, squeeze=False)
    for ax, name in zip(axes[0], panels):
        if name == "linear_stable":
            cmap = ListedColormap(["#868e96", "#c92a2a", "#2b8a3e"])
            norm = BoundaryNorm([-1.5, -0.5, 0.5, 1.5], cmap.N)
            mesh = ax.pcolormesh(x, y, dataset[name].values, cmap=cmap, norm=norm, shading="nearest")
            bar = fig.colorbar(mesh, ax=ax, ticks=[-1, 0, 1])
            bar.ax.set_yticklabels(["not resolved", "unstable", "stable"])
            ax.set_title("linear (characteristic roots)")
        else:
            cmap = ListedColormap(_BEHAVIOUR_COLOURS)
            norm = BoundaryNorm(np.arange(len(_BEHAVIOUR_COLOURS) + 1) - 0.5, cmap.N)
            mesh = ax.pcolormesh(x, y, dataset[name].values, cmap=cmap, norm=norm, shading="nearest")
            bar = fig.colorbar(mesh, ax=ax, ticks=range(len(BEHAVIOUR_NAMES)))
            bar.ax.set_yticklabels(BEHAVIOUR_NAMES)
            ax.set_title("simulated, smooth form (no projection at q = 0)" if name.endswith("_smooth")
                         else "simulated (nonlinear model)")
            if name == "behaviour" and "projection_changes" in dataset and dataset["projection_changes"].values.any():
                ax.contourf(x, y, dataset["projection_changes"].values, levels=[0.5, 1.5], colors="none",
                            hatches=["///"])
                ax.contour(x, y, dataset["projection_changes"].values, levels=[0.5], colors="#1c7ed6",
                           linewidths=0.8, linestyles=":")
        if "abscissa" in dataset and np.nanmin(dataset["abscissa"].values) < 0 < np.nanmax(dataset["abscissa"].values):
            ax.contour(x, y, dataset["abscissa"].values, levels=[0.0], colors="k", linewidths=1.4)
        for label, (cx, cy) in (curves or {}).items():
            ax.plot(cx, cy, "--", color="#1c7ed6", lw=1.6, label=label)
        if curves:
            ax.legend(loc="best", fontsize=8)
        ax.set_xlim(x.min(), x.max())
        ax.set_ylim(y.min(), y.max())
        ax.set_xlabel(_label(dataset, xdim))
        ax.set_ylabel(_label(dataset, ydim))
        for dim, setter in ((xdim, ax.set_xscale), (ydim, ax.set_yscale)):
            if dataset[dim].attrs.get("grid", "").endswith(":log"):
                setter("log")
    title = dataset.attrs.get("title", "stability map")
    if "agreement_away_from_boundary" in dataset.attrs:
        title += (f" — agreement {dataset.attrs['agreement_away_from_boundary']:.2%} on "
                  f"{dataset.attrs['points_away_from_boundary']} points away from the boundary")
    note = " (black: linear boundary" + ("; hatched: the projection at q = 0 decides)" if "projection_changes" in dataset
                                         else ")")
    fig.suptitle(title + note)
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


#: Flows drawn with a legend entry each; larger networks get a note instead of a legend.
_LEGEND_FLOWS = 12
#: Overshoot (relative to the largest max-min rate, or to full utilization) beyond which
#: `network_rates_figure` draws a panel on a logarithmic axis.
_LOG_OVERSHOOT = 5.0


def network_rates_figure(dataset: xr.Dataset, path: str | Path | None = None, *, title: str | None = None):
    """Per-flow rates (Mb/s) over time with each flow's max-min fair rate dashed in the same
    colour, and each link's utilization (load / capacity) over time, of a
    `fluidcc.sweep.simulate_network` dataset.

    Rates are converted with the dataset's ``packet_bytes`` attribute (default 1000 bytes per
    packet). A flow's rate is drawn only while it sends (its max-min rate is then > 0). A panel
    whose values overshoot more than `_LOG_OVERSHOOT` times the largest max-min rate (or a
    utilization of 1), as MIAIMD's multiplicative start-up does, gets a logarithmic axis so that
    the equilibrium stays readable.
    """
    from .units import DEFAULT_PACKET_BYTES, pps_to_mbps

    packet_bytes = int(dataset.attrs.get("packet_bytes", DEFAULT_PACKET_BYTES))
    t = dataset["time"].values
    rates = pps_to_mbps(dataset["rate"].values, packet_bytes)
    fair = pps_to_mbps(dataset["maxmin_rate"].values, packet_bytes)
    utilization = dataset["utilization"].values
    flows = [str(name) for name in dataset["flow"].values]
    links = [str(name) for name in dataset["link"].values]
    fig, axes = plt.subplots(2, 1, figsize=(9, 7), sharex=True, constrained_layout=True,
                             gridspec_kw={"height_ratios": [2, 1]})
    sending = fair > 0
    for i, name in enumerate(flows):
        colour = f"C{i % 10}"
        axes[0].plot(t, np.where(sending[:, i], rates[:, i], np.nan), color=colour, lw=1.0, label=name)
        axes[0].plot(t, np.where(sending[:, i], fair[:, i], np.nan), color=colour, lw=1.0, ls="--")
    axes[0].plot([], [], color="k", ls="--", lw=1.0, label="max-min fair rate")
    if len(flows) <= _LEGEND_FLOWS:
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    else:
        axes[0].text(0.99, 0.98, f"{len(flows)} flows; dashed: max-min fair rates", transform=axes[0].transAxes,
                     ha="right", va="top", fontsize=8)
    axes[0].set_ylabel("rate [Mb/s]")
    with np.errstate(invalid="ignore"):
        if np.nanmax(np.where(sending, rates, np.nan), initial=0.0) > _LOG_OVERSHOOT * np.max(fair, initial=0.0) > 0:
            axes[0].set_yscale("log")
        if np.nanmax(utilization, initial=0.0) > _LOG_OVERSHOOT:
            axes[1].set_yscale("log")
    for l, name in enumerate(links):
        axes[1].plot(t, utilization[:, l], lw=1.0, label=name)
    axes[1].axhline(1.0, color="k", ls=":", lw=0.8)
    axes[1].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    axes[1].set_ylabel("link utilization")
    axes[1].set_xlabel("time [s]")
    axes[0].set_title(title or dataset.attrs.get("title", "simulation on a network"))
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def packet_afct_figure(dataset: xr.Dataset, bins: list[dict], reference: tuple[float, float, float] | None,
                       path: str | Path | None = None):
    """AFCT against flow size on log axes of a packet run (`fluidcc.packet.simulate_exact`; the runs'
    flows pooled): each finished flow, the mean per size bin (`bins`: rows with
    ``mean_size_packets``, ``afct_s`` and optionally ``sample_ps_afct_s``, the processor sharing
    of the same arrivals), and with `reference` = (capacity packets/s, load, RTPD s) the M/G/1
    processor-sharing curve 1.5 RTPD + L / (C (1 - rho)) (RCP paper, eq. 3)."""
    from .packet import metrics

    size, fct = dataset["size"].values, dataset["fct"].values
    done = np.isfinite(size) & np.isfinite(fct)
    fig, ax = plt.subplots(figsize=(8, 5.5), constrained_layout=True)
    shown = np.flatnonzero(done.reshape(-1))
    if shown.size > 20_000:  # keep the file small: a fixed subsample of the flows
        shown = np.random.default_rng(0).choice(shown, 20_000, replace=False)
    ax.scatter(size.reshape(-1)[shown], fct.reshape(-1)[shown], s=3, color="0.6", alpha=0.35, lw=0,
               label="flows (finished)")
    if bins:
        x = [row["mean_size_packets"] for row in bins]
        ax.plot(x, [row["afct_s"] for row in bins], "o-", color="C0", label=f"AFCT ({dataset.attrs['protocol']})")
        if all(row.get("sample_ps_afct_s") is not None for row in bins):
            ax.plot(x, [row["sample_ps_afct_s"] for row in bins], "s:", color="C2",
                    label="processor sharing of these arrivals")
    if reference is not None and done.any():
        capacity, load, rtpd = reference
        grid = np.geomspace(1.0, max(2.0, float(np.nanmax(size[done]))), 200)
        ax.plot(grid, metrics.ps_fct(grid, capacity, load, rtpd), "--", color="k",
                label=f"processor sharing, M/G/1 (eq. 3): rho = {load:g}")
        ax.set_title(f"{dataset.attrs['protocol']}: load {load:g}, C = {capacity:g} packets/s, "
                     f"RTPD {1e3 * rtpd:g} ms, {dataset.sizes['run']} run(s)")
    if done.any():
        ax.set_xscale("log")
        ax.set_yscale("log")
    else:  # log axes of nothing cannot be drawn
        ax.text(0.5, 0.5, "no flow finished", transform=ax.transAxes, ha="center", va="center")
    ax.set_xlabel("flow size [packets]")
    ax.set_ylabel("flow completion time [s]")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig


def packet_links_figure(dataset: xr.Dataset, path: str | Path | None = None):
    """Utilization and mean queue of every link over time of a packet run, one line per run and link.

    The utilization of a sample is the dataset's ``served`` (what the link began to send in the
    sample, in data packets) over what its capacity (schedule included) could send in the sample
    (`fluidcc.packet.metrics.link_capacity_packets`).
    """
    from .network import Network
    from .packet import metrics

    t = dataset["sample_time"].values
    interval = float(t[0])
    network = Network.from_dict(json.loads(dataset.attrs["network"]))
    could_send = metrics.link_capacity_packets(network, np.concatenate([[0.0], t]))
    served, queue = dataset["served"].values, dataset["queue"].values
    links = [str(name) for name in dataset["link"].values]
    n_runs = dataset.sizes["run"]
    fig, axes = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True, constrained_layout=True)
    alpha = 1.0 if n_runs == 1 else max(0.25, 1.0 / math.sqrt(n_runs))
    for l, name in enumerate(links):
        colour = f"C{l % 10}"
        for r in range(n_runs):
            label = name if r == 0 else None
            axes[0].plot(t, served[r, :, l] / could_send[:, l], color=colour, lw=0.8, alpha=alpha, label=label)
            axes[1].plot(t, queue[r, :, l], color=colour, lw=0.8, alpha=alpha, label=label)
    axes[0].axhline(1.0, color="k", ls=":", lw=0.8)
    axes[0].set_ylabel("utilization\n[served / what the capacity could send]")
    axes[1].set_ylabel("queue [packets]")
    axes[1].set_xlabel("time [s]")
    if len(links) <= 12:
        axes[0].legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, title="link")
    runs = f", {n_runs} runs" if n_runs > 1 else ""
    axes[0].set_title(f"{dataset.attrs.get('protocol', '')}: links over time (samples of {1e3 * interval:g} ms{runs})")
    if path is not None:
        fig.savefig(path, dpi=120)
        plt.close(fig)
    return fig
