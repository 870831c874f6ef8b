"""The `fluidcc` command: simulate one point, sweep a parameter grid, map stability, list models,
run a packet-level scenario.

Quantities take unit suffixes: rates in bps, kbps, Mbps, Gbps or pps (plain numbers: packets/s,
1 packet = 1000 bytes); times in s, ms or us (plain numbers: seconds).
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import click

from . import protocols
from .errors import FluidccError, ParameterError

#: Tolerance of the settling times `fluidcc simulate --network` prints (relative to max-min).
SETTLING_TOLERANCE = 0.02

DEFAULT_SWEEP_GRID = ("kappa=0.05:2:64", "rtt=10ms:1s:64:log")

_UNITS_HELP = (
    "Units: rates accept bps, kbps, Mbps, Gbps, pps (bare numbers are packets/s of 1000 bytes); "
    "times accept s, ms, us (bare numbers are seconds)."
)


#: The library's parameter names, as this command's flags.
_FLAGS = {"duration_s": "--duration", "rtts": "--rtts", "saves_per_rtt": "--saves-per-rtt",
          "save_step_s": "--saves-per-rtt", "steps_per_delay": "--steps-per-delay", "rtol": "--rtol",
          "fmt": "--format", "solver": "--solver", "horizon_rtts": "--horizon-rtts",
          "max_horizon_rtts": "--max-horizon-rtts", "max_steps_per_delay": "--max-steps-per-delay",
          "grid": "--grid", "axes": "--grid", "setting": "--set", "fixed": "--set", "workers": "--workers",
          "scheduler": "--scheduler", "chunk_points": "--chunk-points", "store": "--out"}


def _fail(error: FluidccError):
    """Stop with a usage error; a library error's parameter name becomes the flag that sets it
    (also as the first word of a field: ``grid kappa start`` is ``--grid kappa start``)."""
    if isinstance(error, ParameterError):
        head, space, rest = error.field.partition(" ")
        if head in _FLAGS:
            error = ParameterError(_FLAGS[head] + space + rest, error.value, error.allowed)
    raise click.UsageError(str(error))


def _grid_spec(model, grid_texts, sets, horizon_rtts, saves_per_rtt, steps_per_delay, rtol, max_steps_per_delay,
               max_horizon_rtts=None, solver="auto"):
    """The SweepSpec of a command's --grid and --set options (raises FluidccError on bad input)."""
    from .sweep import SweepSpec, parse_grid, parse_set

    entry = protocols.single_link_model(model)
    axes = tuple(parse_grid(model, text) for text in grid_texts)
    fixed = {}
    for text in sets:
        name, value = parse_set(model, text)
        fixed[name] = entry.parameter(name).parse(value, f"--set {name}")
    return SweepSpec(model=model, axes=axes, fixed=fixed, horizon_rtts=horizon_rtts, saves_per_rtt=saves_per_rtt,
                     steps_per_delay=steps_per_delay, rtol=rtol if rtol > 0 else None,
                     max_steps_per_delay=max_steps_per_delay, max_horizon_rtts=max_horizon_rtts, solver=solver)


def _command_line() -> str:
    return "fluidcc " + " ".join(shlex.quote(a) for a in sys.argv[1:])


def _cluster_options(chunk_flag: str = "--chunk-points", chunk_default: int = 2048,
                     chunk_help: str = "Points per chunk at most: the unit of work, of storage and of resumption."):
    """--workers, --scheduler, the chunk size and --jax-cache: where a batch's chunks run."""
    options = [
        click.option("--workers", default=None, type=int, metavar="N",
                     help="Run the chunks on a local Dask cluster of N worker processes (needs "
                          "pip install 'fluidcc[distributed]'). Without --workers or --scheduler: in this process."),
        click.option("--scheduler", default=None, metavar="ADDRESS",
                     help="Run the chunks on the running Dask scheduler at ADDRESS (e.g. tcp://10.0.0.5:8786); its "
                          "workers write into the output folder, so it must be a path they see."),
        click.option(chunk_flag, "chunk_size", default=chunk_default, show_default=True, type=int, metavar="N",
                     help=chunk_help),
        click.option("--jax-cache", default=None, type=click.Path(file_okay=False), metavar="DIR",
                     help="A JAX compilation cache folder shared by the workers, so each kernel compiles once."),
    ]

    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command
    return decorate


def _progress_bar(unit: str = "points"):
    from rich.progress import BarColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn
    from rich.text import Text

    class Rate(ProgressColumn):
        """Units done in this run (not those found done in a store) per second since it started."""

        def render(self, task):
            done = task.completed - task.fields.get("first", 0)
            speed = done / task.elapsed if task.elapsed and done > 0 else None
            if not speed:
                return Text("")
            return Text(f"{speed:,.0f} {unit}/s" if speed >= 10 else f"{speed:.2g} {unit}/s")

    columns = (TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total} " + unit),
               Rate(), TimeElapsedColumn(), TimeRemainingColumn())
    return Progress(*columns, transient=False)


def _progress_of(bar, task):
    """A progress callback: the first call sets what was already done (found in the store), so
    that the rate counts only the points computed now."""
    started = []

    def progress(done, total):
        if not started:
            started.append(done)
            bar.reset(task, total=total, completed=done, first=done)
        else:
            bar.update(task, completed=done)
    return progress


def _report_failed_chunks(dataset) -> None:
    import json

    failed = json.loads(dataset.attrs.get("chunks_failed", "[]"))
    if failed:
        errors = json.loads(dataset.attrs.get("chunk_errors", "{}"))
        click.echo(f"{len(failed)} chunk(s) failed and hold no results (behaviour -1); run the same command again "
                   f"to retry them:", err=True)
        for k in failed:
            last = errors.get(str(k), "").strip().splitlines()
            click.echo(f"  chunk {k}: {last[-1] if last else 'unknown error'}", err=True)


@click.group(help=__doc__)
@click.version_option(package_name="fluidcc")
def main() -> None:
    pass


@main.command("models")
def models_command() -> None:
    """List the protocols and their models: parameters with units and defaults, in every layer."""
    for name in protocols.names("single_link"):
        entry = protocols.single_link_model(name)
        click.echo(f"{entry.name}: {entry.description}")
        for p in entry.parameters:
            unit = f" [{p.unit}]" if p.unit else ""
            allowed = f" (range {p.range})" if p.range else ""
            click.echo(f"  {p.name:<15} default {p.default:<12.6g}{unit}  {p.help}{allowed}")
    click.echo("per-flow models on a network (fluidcc simulate MODEL --network FILE; link capacities, delays "
               "and flows come from the file):")
    for name in protocols.names("network"):
        entry = protocols.network_model(name)
        click.echo(f"{name} --network: {entry.description}")
        for parameter, default in entry.defaults().items():
            shown = f"{default:<12.6g}" if default is not None else f"{'(per link)':<12}"
            note = f"  [{entry.notes[parameter]}]" if parameter in entry.notes else ""
            click.echo(f"  {parameter:<21} default {shown}{note}")
    from .packet.settings import setting_fields

    click.echo("packet-level senders and routers on the exact engine (fluidcc packet SCENARIO.toml, "
               "[protocol] name = NAME):")
    for name in protocols.names("packet"):
        protocol = protocols.get_protocol(name)
        click.echo(f"{name} [protocol]: {protocol.description} ({protocol.paper})")
        for setting in setting_fields(protocol.packet_class()):
            shown = f"({setting.none})" if setting.default is None else str(setting.default)
            if isinstance(setting.default, bool):
                shown = str(setting.default).lower()  # as TOML writes it
            unit = setting.unit + (", or one per flow" if setting.per_flow else "")
            click.echo(f"  {setting.key:<21} default {shown:<12}{f'  [{unit}]' if unit else ''}".rstrip())


@main.command("simulate")
@click.argument("model", default="miaimd")
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE",
              help="Set a parameter, e.g. --set kappa=0.25 --set capacity=150Mbps --set rtt=80ms. " + _UNITS_HELP)
@click.option("--rtts", default=None, metavar="T1,T2,...",
              help="Per-flow round-trip times (heterogeneous RTTs), e.g. 40ms,80ms,160ms; overrides rtt and flows.")
@click.option("--duration", default=None, metavar="TIME",
              help="Simulated time, e.g. 20s (default: 200 times the largest RTT).")
@click.option("--saves-per-rtt", default=20, show_default=True, type=int, help="Saved points per (smallest) RTT.")
@click.option("--steps-per-delay", default=32, show_default=True, type=int, help="RK4 steps per smallest RTT.")
@click.option("--rtol", default=1e-6, show_default=True, type=float, help="Solver tolerance (relative).")
@click.option("--format", "fmt", type=click.Choice(["netcdf", "csv"]), default="netcdf", show_default=True,
              help="Format of the time series.")
@click.option("--out", default="fluidcc-out/simulate", show_default=True, type=click.Path(file_okay=False),
              help="Output folder (time series and figure).")
@click.option("--network", "network_file", default=None, metavar="NETWORK.toml|.json", type=click.Path(dir_okay=False),
              help="Simulate MODEL per flow on this network (a .toml or .json file, as for `fluidcc maxmin`) "
                   "beside the max-min fair rates; MODEL is then one of " + ", ".join(protocols.names("network"))
                   + ". --set takes the network model's parameters (`fluidcc models` lists them); --duration "
                   "defaults to the model's settling horizon after the last start or stop; one save per smallest "
                   "RTT (a quarter of it for rcp and qcp; at most 2000 saves) unless --saves-per-rtt is given; "
                   "--rtts and --rtol do not apply (the network gives the RTTs; fixed-step RK4).")
def simulate_command(model, sets, rtts, duration, saves_per_rtt, steps_per_delay, rtol, fmt, out,
                     network_file) -> None:
    """Integrate one point of MODEL's single-link fluid model (per flow for miaimd, aggregate for xcp,
    rcp, qcp); write its time series and a figure. With --network: MODEL per flow on a network,
    with each flow's rate against its max-min fair rate and the settling time of every phase."""
    from . import units
    from .plotting import timeseries_figure
    from .runs import simulate, write_timeseries
    from .sweep import parse_set

    if network_file is not None:
        _simulate_on_network(model, network_file, sets, rtts, duration, saves_per_rtt, steps_per_delay, fmt, out)
        return
    try:
        entry = _single_link(model)
        values = {}
        for text in sets:
            name, value = parse_set(model, text)
            values[name] = entry.parameter(name).parse(value, f"--set {name}")
        rtt_list = None
        if rtts is not None:
            rtt_list = [units.parse_time("--rtts", item.strip()) for item in rtts.split(",") if item.strip()]
            if not rtt_list:
                raise FluidccError("--rtts is empty: give one or more times, e.g. 40ms,80ms")
        duration_s = units.parse_time("--duration", duration) if duration is not None else None
        dataset = simulate(model, values, rtt_list, duration_s=duration_s, saves_per_rtt=saves_per_rtt,
                           steps_per_delay=steps_per_delay, rtol=rtol, command=_command_line())
        data_path = write_timeseries(dataset, out, fmt)
    except FluidccError as error:
        _fail(error)
    figure_path = Path(out) / "timeseries.png"
    timeseries_figure(dataset, figure_path)
    click.echo(f"status: {dataset.attrs['status_message']}")
    if "window" in dataset:
        eq = dataset["equilibrium_window"].values
        click.echo(f"final total window {float(dataset['window'].values[-1].sum()):.6g} packets; "
                   f"closed-form equilibrium {float(eq.sum()):.6g} packets")
    else:
        name = dataset.attrs["observed_state"]
        click.echo(f"final {name} {float(dataset[name].values[-1]):.6g} {dataset[name].attrs.get('units', '')}; "
                   f"equilibrium {float(dataset['equilibrium_' + name]):.6g}")
    click.echo(f"wrote {data_path} and {figure_path}")


def _single_link(model):
    """The single-link model of MODEL; for a protocol with a network model only, say to give --network."""
    try:
        return protocols.single_link_model(model)
    except ParameterError as error:
        if model in protocols.names("network"):
            raise ParameterError("model", model, f"{model} has a per-flow model on a network only: give --network "
                                 "NETWORK.toml (e.g. examples/networks/ixcp_fig6.toml)") from None
        raise error


def _simulate_on_network(model, network_file, sets, rtts, duration, saves_per_rtt, steps_per_delay, fmt, out):
    """`fluidcc simulate MODEL --network FILE`: one run of a per-flow network model, written as a
    dataset (NetCDF or CSV) and a figure, with a table of final and max-min rates and settling times."""
    from . import units
    from .network import Network
    from .plotting import network_rates_figure
    from .runs import final_links, final_rates, settling_rows, simulate_network, write_timeseries

    source = click.get_current_context().get_parameter_source
    try:
        protocols.network_model(model, field="model")
        if rtts is not None:
            raise ParameterError("--rtts", rtts, "no --rtts with --network: the network file gives each flow's "
                                 "RTT (its links' delays and access_delay)")
        if source("rtol") == click.core.ParameterSource.COMMANDLINE:
            raise ParameterError("--rtol", "given", "no --rtol with --network: network models are integrated with "
                                 "fixed-step RK4 (set --steps-per-delay)")
        values = {}
        for text in sets:
            if "=" not in text:
                raise ParameterError("--set", text, "NAME=VALUE, e.g. alpha=0.4 or kappa=0.25")
            name, _, value = (part.strip() for part in text.partition("="))
            if not value:
                raise ParameterError(f"--set {name}", value, "a value")
            values[name] = units.parse_number(f"--set {name}", value)
        network = Network.load(network_file)
        scheduled = [link.name for link in network.links if link.schedule]
        if scheduled:
            raise ParameterError("--network", str(network_file),
                                 f"a network without capacity schedules (link {scheduled[0]!r} has one): the fluid "
                                 "models take one capacity per link (`fluidcc packet` follows schedules)")
        duration_s = units.parse_time("--duration", duration) if duration is not None else None
        save_step_s = None
        if source("saves_per_rtt") == click.core.ParameterSource.COMMANDLINE:
            if saves_per_rtt < 1:
                raise ParameterError("--saves-per-rtt", saves_per_rtt, "a whole number >= 1")
            save_step_s = float(network.rtt_s.min()) / saves_per_rtt
        dataset = simulate_network(model, network, values, duration_s=duration_s, save_step_s=save_step_s,
                                   steps_per_delay=steps_per_delay, command=_command_line())
        dataset.attrs["network_file"] = str(network_file)
        data_path = write_timeseries(dataset, out, fmt)
    except FluidccError as error:
        _fail(error)
    figure_path = Path(out) / "timeseries.png"
    network_rates_figure(dataset, figure_path, title=f"{model} on {Path(network_file).name}: rates and max-min "
                                                     f"fair rates (dashed)")
    end = float(dataset["time"].values[-1])
    click.echo(f"status: {dataset.attrs['status_message']}")
    click.echo(f"rates at t = {end:g} s ({model}; packets of {network.packet_bytes} bytes)")
    click.echo(_text_table(["flow", "rate Mb/s", "max-min Mb/s", "rate / max-min"],
                           [[row["flow"], f"{row['rate_mbps']:.6g}", f"{row['maxmin_mbps']:.6g}",
                             f"{row['ratio']:.4f}" if row["ratio"] is not None else "(not sending)"]
                            for row in final_rates(dataset)]))
    links = final_links(dataset, network)
    if links:
        click.echo("")
        header = ["link", "offered Mb/s", "flow estimate", "flows sending", "utilization", "queue packets"]
        click.echo(_text_table(header, [[row["link"], f"{row['offered_mbps']:.6g}", f"{row['flow_estimate']:.4g}",
                                         f"{row['flows_sending']:g}", f"{row['utilization']:.4f}",
                                         f"{row['queue_packets']:.4g}"] for row in links]))
    click.echo("")
    click.echo(f"settling: time after each start or stop until every sending flow stays within "
               f"{SETTLING_TOLERANCE:.0%} of its max-min rate")
    click.echo(_text_table(["phase", "settling", "max |rate/max-min - 1| at end"],
                           [[f"[{row['start_s']:g}, {row['stop_s']:g}] s",
                             f"{row['settling_s']:.3g} s" if row["settling_s"] is not None else "not settled",
                             f"{row['final_deviation']:.3g}"] for row in settling_rows(dataset, SETTLING_TOLERANCE)]))
    click.echo(f"wrote {data_path} and {figure_path}")


@main.command("sweep")
@click.argument("model", default="miaimd")
@click.option("--grid", "grids", multiple=True, metavar="NAME=START:STOP:COUNT[:log]",
              help="A swept parameter: NAME=START:STOP:COUNT (linear), add :log for a geometric grid, "
                   "or NAME=V1,V2,...; e.g. --grid kappa=0.05:2:64 --grid rtt=10ms:1s:64:log. "
                   f"Default with no --grid: {' '.join(DEFAULT_SWEEP_GRID)}. " + _UNITS_HELP)
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="Fix a parameter that is not swept.")
@click.option("--horizon-rtts", default=250.0, show_default=True, type=float, help="Integration horizon, in RTTs.")
@click.option("--saves-per-rtt", default=4, show_default=True, type=int, help="Saved points per RTT.")
@click.option("--steps-per-delay", default=32, show_default=True, type=int, help="RK4 steps per RTT (starting resolution).")
@click.option("--rtol", default=1e-5, show_default=True, type=float,
              help="Per-point tolerance: points are refined until the error estimate is below it (0 turns refinement off).")
@click.option("--max-steps-per-delay", default=256, show_default=True, type=int, help="Finest resolution allowed.")
@click.option("--max-horizon-rtts", default=None, type=float,
              help="Points still in their start-up transient, or converging, are integrated again over 4x the horizon, up to "
                   "this many RTTs [default: 8 x --horizon-rtts].")
@click.option("--solver", default="auto", show_default=True, type=click.Choice(["auto", "rk4", "chebyshev"]),
              help="rk4, or chebyshev (exponential Chebyshev method of steps, for miaimd: faster at tight "
                   "tolerances, --steps-per-delay does not apply); auto: chebyshev where the model allows it.")
@click.option("--out", default="fluidcc-out/sweep", show_default=True, type=click.Path(file_okay=False),
              help="Output folder: sweep.zarr (the store of record, written chunk by chunk), sweep.nc (NetCDF, for "
                   "sweeps of up to 262 144 points) and sweep.png. A sweep that is interrupted keeps its finished "
                   "chunks there; the same command resumes it. A folder holding another sweep's store is refused.")
@_cluster_options()
def sweep_command(model, grids, sets, horizon_rtts, saves_per_rtt, steps_per_delay, rtol, max_steps_per_delay,
                  max_horizon_rtts, solver, out, workers, scheduler, chunk_size, jax_cache) -> None:
    """Simulate MODEL over a parameter grid and classify each point (converged, oscillating, ...)."""
    from .plotting import sweep_heatmap
    from .stability import BEHAVIOUR_NAMES
    from .sweep import cluster, run_sweep

    try:
        spec = _grid_spec(model, grids or DEFAULT_SWEEP_GRID, sets, horizon_rtts, saves_per_rtt, steps_per_delay,
                          rtol, max_steps_per_delay, max_horizon_rtts, solver)
        out_dir = Path(out)
        with cluster(workers, scheduler, jax_cache=jax_cache) as client, _progress_bar() as bar:
            task = bar.add_task("sweep", total=spec.size)
            dataset = run_sweep(spec, out_dir, command=_command_line(), chunk_points=chunk_size, client=client,
                                progress=_progress_of(bar, task))
    except FluidccError as error:
        _fail(error)
    figure_path = out_dir / "sweep.png"
    behaviour = dataset["behaviour"].values
    sweep_heatmap(dataset, figure_path)
    counts = {name: int((behaviour == code).sum()) for code, name in enumerate(BEHAVIOUR_NAMES)}
    click.echo(", ".join(f"{name}: {count}" for name, count in counts.items()))
    click.echo(f"{dataset.attrs['points_integrated_longer']} points were integrated again over a longer horizon "
               f"(transient or converging at {spec.horizon_rtts:g} RTTs; up to {spec.horizon_limit_rtts:g})")
    _report_failed_chunks(dataset)
    written = [out_dir / "sweep.zarr"] + ([out_dir / "sweep.nc"] if (out_dir / "sweep.nc").exists() else []) + \
        [figure_path]
    click.echo("wrote " + ", ".join(str(p) for p in written))


@main.command("stability")
@click.argument("model", default="miaimd")
@click.option("--grid", "grids", multiple=True, metavar="NAME=START:STOP:COUNT[:log]",
              help="A parameter of the plane, as for `sweep`; e.g. --grid alpha=0:1.6:200 --grid beta=0:1.2:200. "
                   "Default: the model's gain plane (" + "; ".join(
                       f"{p.name}: {' '.join(p.stability_plane)}" for p in protocols.PROTOCOLS.values()
                       if p.stability_plane) + "). " + _UNITS_HELP)
@click.option("--set", "sets", multiple=True, metavar="NAME=VALUE", help="Fix a parameter that is not on the grid.")
@click.option("--method", type=click.Choice(["linear", "simulate", "both"]), default="both", show_default=True,
              help="linear: characteristic roots of the linearization at the equilibrium; simulate: integrate "
                   "the nonlinear model and classify; both: the two maps and where they agree.")
@click.option("--horizon-rtts", default=250.0, show_default=True, type=float, help="Simulation horizon, in RTTs.")
@click.option("--saves-per-rtt", default=4, show_default=True, type=int, help="Saved points per RTT (simulation).")
@click.option("--steps-per-delay", default=32, show_default=True, type=int, help="RK4 steps per RTT (simulation).")
@click.option("--rtol", default=1e-5, show_default=True, type=float,
              help="Per-point simulation tolerance (0 turns refinement off).")
@click.option("--max-steps-per-delay", default=256, show_default=True, type=int, help="Finest simulation resolution.")
@click.option("--max-horizon-rtts", default=None, type=float,
              help="Points still in their start-up transient are integrated again over 4x the horizon, up to "
                   "this many RTTs [default: 8 x --horizon-rtts].")
@click.option("--out", default="fluidcc-out/stability", show_default=True, type=click.Path(file_okay=False),
              help="Output folder: stability.nc (NetCDF dataset) and stability.png; the simulations' stores "
                   "(simulation/sweep.zarr) resume an interrupted map.")
@_cluster_options()
def stability_command(model, grids, sets, method, horizon_rtts, saves_per_rtt, steps_per_delay, rtol,
                      max_steps_per_delay, max_horizon_rtts, out, workers, scheduler, chunk_size, jax_cache) -> None:
    """Map the stability of MODEL over a parameter plane, linearly, by simulation, or both."""
    from .errors import ParameterError
    from .plotting import stability_figure
    from .sweep import analytic_boundary, cluster, run_stability

    try:
        texts = grids or protocols.get_protocol(model, "single_link", field="model").stability_plane
        if not texts:
            raise ParameterError("--grid", "none", f"at least one --grid for {model}, which has no default plane")
        spec = _grid_spec(model, texts, sets, horizon_rtts, saves_per_rtt, steps_per_delay, rtol, max_steps_per_delay,
                          max_horizon_rtts)
        out_dir = Path(out)
        with cluster(workers, scheduler, jax_cache=jax_cache) as client, _progress_bar() as bar:
            tasks = {}

            def progress(stage, done, total):
                if stage not in tasks:
                    tasks[stage] = (bar.add_task(stage, total=total), )
                    tasks[stage] += (_progress_of(bar, tasks[stage][0]),)
                tasks[stage][1](done, total)

            dataset = run_stability(spec, method, out_dir, progress=progress, command=_command_line(), client=client,
                                    chunk_points=chunk_size)
    except FluidccError as error:
        _fail(error)
    _report_failed_chunks(dataset)
    figure_path = out_dir / "stability.png"
    if len(spec.axes) == 2:
        stability_figure(dataset, figure_path, curves=analytic_boundary(spec))
    if "linear_stable" in dataset:
        verdict = dataset["linear_stable"].values
        click.echo(f"linear: stable {int((verdict == 1).sum())}, unstable {int((verdict == 0).sum())}, "
                   f"not resolved {int((verdict == -1).sum())}")
    if "projection_changes_fraction" in dataset.attrs:
        click.echo(f"the projection of the queue at 0 changes the simulated verdict on "
                   f"{dataset.attrs['projection_changes_fraction']:.2%} of the points")
    if "agreement_away_from_boundary" in dataset.attrs:
        where = " and where the projection does not decide" if "projection_changes" in dataset else ""
        click.echo(f"linear vs simulated agreement away from the boundary{where}: "
                   f"{dataset.attrs['agreement_away_from_boundary']:.2%} of {dataset.attrs['points_away_from_boundary']} points")
    if "agreement_smooth_away_from_boundary" in dataset.attrs:
        click.echo(f"linear vs simulated smooth form (no projection) away from the boundary: "
                   f"{dataset.attrs['agreement_smooth_away_from_boundary']:.2%}; linear vs the projected model there: "
                   f"{dataset.attrs['agreement_everywhere_away_from_boundary']:.2%}")
    written = [str(out_dir / "stability.nc")] + ([str(figure_path)] if len(spec.axes) == 2 else [])
    click.echo("wrote " + " and ".join(written))


@main.command("maxmin")
@click.argument("network_file", metavar="NETWORK", type=click.Path(dir_okay=False))
@click.option("--at", "at", default=None, metavar="TIME",
              help="Share the links among the flows active at this time (start <= t < stop), e.g. 30s, on the "
                   "links' capacities then (capacity schedules are followed); the others get 0. Default: every "
                   "flow, start and stop times ignored (not allowed when a link has a schedule). Times accept "
                   "s, ms, us (bare numbers are seconds).")
@click.option("--exact", is_flag=True,
              help="Compute in exact rationals; the table also shows each rate as a fraction of packets/s.")
@click.option("--out", default=None, type=click.Path(dir_okay=False), metavar="FILE",
              help="Also write the results: FILE.csv (one row per flow, then one per link) or FILE.json "
                   "(flows, links and provenance). Rates in packets/s and Mb/s.")
def maxmin_command(network_file, at, exact, out) -> None:
    """Weighted max-min fair rates of the flows of NETWORK (a .toml or .json network file): each
    flow's rate in Mb/s and packets/s and its bottleneck link(s), and each link's utilization."""
    from . import units
    from .errors import ParameterError
    from .maxmin import ALLOCATION_SUFFIXES, allocation_rows, maxmin, maxmin_at, write_allocation
    from .network import Network

    try:
        out_path = Path(out) if out is not None else None
        if out_path is not None and out_path.suffix.lower() not in ALLOCATION_SUFFIXES:
            raise ParameterError("--out", out, "a file name ending in " + " or ".join(ALLOCATION_SUFFIXES))
        network = Network.load(network_file)
        at_s = units.parse_time("--at", at) if at is not None else None
        if at_s is not None and not (at_s >= 0 and at_s < float("inf")):
            raise ParameterError("--at", at, "a finite time >= 0, e.g. 30s")
        scheduled = [link.name for link in network.links if link.schedule]
        if at_s is None and scheduled:
            raise ParameterError("--at", None, f"a time, e.g. --at 30s: link {scheduled[0]!r} has a capacity "
                                 "schedule, so the allocation depends on the time")
        result = maxmin(network, exact=exact) if at_s is None else maxmin_at(network, at_s, exact=exact)
    except FluidccError as error:
        _fail(error)
    packet_bytes = network.packet_bytes
    flows, links = allocation_rows(network, result)
    scope = "every flow" if at_s is None else f"flows active at t = {at_s:g} s"
    click.echo(f"max-min fair rates ({scope}; {'exact' if exact else 'float64'}; packets of {packet_bytes} bytes)")
    headers = ["flow", "rate Mb/s", "rate pkt/s"] + (["exact pkt/s"] if exact else []) + ["bottleneck"]
    table = [[row["name"], f"{row['rate_mbps']:.6g}", f"{row['rate_pps']:.6g}"]
             + ([row["rate_pps_exact"]] if exact else []) + [row["bottleneck_text"]] for row in flows]
    click.echo(_text_table(headers, table))
    click.echo("")
    click.echo(_text_table(["link", "capacity Mb/s", "load Mb/s", "utilization"],
                           [[row["name"], f"{row['capacity_mbps']:.6g}", f"{row['load_mbps']:.6g}",
                             f"{100 * row['utilization']:.2f} %"] for row in links]))
    if out_path is not None:
        write_allocation(out_path, network, result, at_s=at_s,
                         provenance={"command": _command_line(), "network_file": str(network_file)})
        click.echo(f"wrote {out_path}")


@main.command("packet")
@click.argument("scenario_file", metavar="SCENARIO.toml", type=click.Path(dir_okay=False))
@click.option("--out", default="fluidcc-out/packet", show_default=True, type=click.Path(file_okay=False),
              help="Output folder: run.nc (the dataset, NetCDF), flows.csv (one row per flow and run), "
                   "summary.json (per run and mean, with each run's status), afct.png (AFCT vs flow size with "
                   "processor sharing) and link.png (utilization and queue over time).")
@click.option("--trace", "trace", is_flag=True,
              help="Also write each seed's flows as a trace, trace_seed<SEED>.csv in the output folder (columns "
                   "start_s [s], size_packets [packets, inf: long-lived], route [the network flow's name], "
                   "stop_s [s, inf: never]), which [workload] kind = \"trace\" replays (in fluidcc, or ns-3).")
@click.option("--grid", "grids", multiple=True, metavar="KEY=V1,V2,...",
              help="Run a study: the scenario over a grid of its keys, each named by its dotted path in the file "
                   "(protocol.alpha=0.1,0.2; workload.load=0.5,0.9; duration=10s,20s), and seeds=FIRST:LAST (or "
                   "S1,S2,...) for the seeds (default: the file's). Writes study.zarr (the store of record, chunk by "
                   "chunk, resumed by the same command) and study.nc: each run's headline numbers.")
@_cluster_options("--chunk-runs", 10, "Study: runs per chunk at most (one grid point's seeds, one batch).")
def packet_command(scenario_file, out, trace, grids, workers, scheduler, chunk_size, jax_cache) -> None:
    """Packet-level simulation of SCENARIO.toml on the exact engine (every packet, ACK and timer at
    its own time; no result depends on its step): a network (file or inline), a workload (Poisson
    arrivals at a load, long-lived flows, or a trace: a CSV flow table, kind = "trace", the same
    flows for every seed), a protocol (any with a packet-level model: `fluidcc models` lists them
    and their settings), a duration and seeds (one run per seed, simulated as one batch). The file
    format is documented in `fluidcc.packet.scenario`. Times accept s, ms, us (bare numbers are
    seconds); sizes are packets. A run that did not complete (its status is not 0: the engine's
    packet pool or its receivers' store was too small) is printed with its message and the exit
    status is 1; its files are written all the same."""
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from .packet.scenario import Scenario, run_scenario, write_outputs

    if grids or workers is not None or scheduler is not None:
        if trace:
            _fail(ParameterError("--trace", True, "a single scenario run (without --grid, --workers or --scheduler)"))
        _packet_study(scenario_file, grids, Path(out), workers, scheduler, chunk_size, jax_cache)
        return
    phases = {"workload": "building the workload", "simulate": "simulating (one batched JAX call)",
              "outputs": "writing outputs"}
    out_dir = Path(out)
    try:
        scenario = Scenario.load(scenario_file)
        columns = (SpinnerColumn(finished_text="[green]done"), TextColumn("{task.description}"), TimeElapsedColumn())
        with Progress(*columns, transient=False) as bar:
            current = []

            def phase(name):
                if current:
                    bar.update(current[-1], total=1, completed=1)
                current.append(bar.add_task(phases.get(name, name), total=None))

            dataset = run_scenario(scenario, progress=phase)
            dataset.attrs["command"] = _command_line()
            phase("outputs")
            paths, summary = write_outputs(dataset, scenario, out_dir)
            if trace:
                paths = paths + scenario.write_traces(out_dir)
            bar.update(current[-1], total=1, completed=1)
    except FluidccError as error:
        _fail(error)

    def number(value, form):
        return "-" if value is None else format(value, form)

    link = summary["bottleneck_link"]
    poisson = summary["workload_kind"] == "poisson"
    load = f", load {summary['offered_load']:g}" if poisson else ""
    sized = poisson or (summary["workload_kind"] == "trace" and (summary["mean"].get("flows") or 0) > 0)
    click.echo(f"{summary['protocol']}, {summary['workload_kind']} workload on route {summary['workload_route']!r}"
               f"{load}; bottleneck {link!r} {summary['bottleneck_capacity_pps']:g} packets/s, RTPD "
               f"{1e3 * summary['rtpd_s']:g} ms; {summary['duration_s']:g} s, {len(summary['runs'])} run(s)")
    headers = ["run", "seed", "finished/flows", "AFCT s", "mean slowdown"] if sized else \
        ["run", "seed", "flows", "throughput pkt/s", "Jain"]
    headers += [f"utilization {link}", f"queue {link}", "drop rate", "status"]
    rows = []
    for row in summary["runs"] + [dict(summary["mean"], run="mean", seed="")]:
        if sized:
            finished = (f"{row['finished']}/{row['flows']}" if row["run"] != "mean"
                        else f"{row['finished']:.1f}/{row['flows']:.1f}")
            cells = [finished, number(row.get("afct_s"), ".4g"), number(row.get("mean_slowdown"), ".3g")]
        else:
            cells = [number(row.get("long_lived"), "g"), number(row.get("mean_throughput_pps"), ".4g"),
                     number(row.get("jain_fairness"), ".4f")]
        rows.append([str(row["run"]), str(row["seed"])] + cells
                    + [number(row["utilization"].get(link), ".4f"), number(row["mean_queue_packets"].get(link), ".4g"),
                       number(row.get("drop_rate"), ".3g"),
                       "" if row["run"] == "mean" else ("ok" if row["status"] == 0 else f"{row['status']} (failed)")])
    click.echo(_text_table(headers, rows))
    click.echo("wrote " + ", ".join(str(p) for p in paths))
    for failed in summary["failed_runs"]:
        click.echo(f"run {failed['run']} (seed {failed['seed']}) failed: status {failed['status']}, "
                   f"{failed['message']} (summary.json lists it under failed_runs)", err=True)
    if summary["failed_runs"]:
        sys.exit(1)


def _packet_study(scenario_file, grids, out_dir, workers, scheduler, chunk_runs, jax_cache) -> None:
    """`fluidcc packet --grid ...`: the study, and a table of its means over the seeds."""
    import json

    import numpy as np

    from .sweep import PacketStudy, cluster, run_packet_study

    try:
        study = PacketStudy.from_file(scenario_file, grids)
        with cluster(workers, scheduler, jax_cache=jax_cache) as client, _progress_bar("runs") as bar:
            task = bar.add_task("study", total=int(np.prod(study.shape)))
            dataset = run_packet_study(study, out_dir, chunk_runs=chunk_runs, client=client, command=_command_line(),
                                       progress=_progress_of(bar, task))
    except FluidccError as error:
        _fail(error)
    keys = [axis.key for axis in study.axes]
    headers = keys + ["runs ok", "utilization", "mean queue", "drop rate", "AFCT s", "throughput pkt/s"]
    rows = []
    for index in np.ndindex(*study.shape[:-1]):
        at = dataset.isel(dict(zip(keys, index)))
        ok = at["status"].values == 0
        busiest = at["utilization"].mean("seed").argmax("link")

        def mean(values):
            values = np.asarray(values, dtype=float)[ok]
            return "-" if not np.isfinite(values).any() else f"{np.nanmean(values):.4g}"
        rows.append([str(axis.values[i]) for axis, i in zip(study.axes, index)]
                    + [f"{int(ok.sum())}/{ok.size}", mean(at["utilization"].isel(link=busiest)),
                       mean(at["mean_queue_packets"].isel(link=busiest)), mean(at["drop_rate"]), mean(at["afct_s"]),
                       mean(at["mean_throughput_pps"])])
    click.echo(f"means over {len(study.seeds)} seed(s); utilization and queue of the busiest link")
    click.echo(_text_table(headers, rows))
    _report_failed_chunks(dataset)
    failed_runs = int(((dataset["status"].values != 0) & (dataset["status"].values != -1)).sum())
    if failed_runs:
        click.echo(f"{failed_runs} run(s) did not complete (status not 0: a pool or store too small); study.nc "
                   f"keeps each run's status", err=True)
    click.echo(f"wrote {out_dir / 'study.zarr'}, {out_dir / 'study.nc'}")
    if failed_runs or json.loads(dataset.attrs["chunks_failed"]):
        sys.exit(1)


def _text_table(headers, rows) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]
    lines = ["  ".join(str(x).ljust(w) if k == 0 else str(x).rjust(w) for k, (x, w) in enumerate(zip(line, widths)))
             for line in [headers, *rows]]
    return "\n".join(line.rstrip() for line in lines)


if __name__ == "__main__":
    main()
