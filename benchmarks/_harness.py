"""What the benchmarks share: a clock of JAX compilation, repeated timed calls, the machine's
description, JSON output and plain-text tables.

A helper module, not a benchmark: modules whose names start with an underscore are helpers, and a
benchmark imports helpers, never another benchmark. JAX and fluidcc are imported only inside the
functions that need them, so a script that sets fluidcc's environment variables (such as
FLUIDCC_JAX_CACHE) before it imports fluidcc may import this module first.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import time
from dataclasses import dataclass
from importlib import metadata

import numpy as np


# ------------------------------------------------------------------------------------------------
# time


class CompileClock:
    """Sums the durations JAX reports for tracing, lowering and compiling while it is active (in a
    `with` block), and counts the backend (XLA) compilations.

        clock = CompileClock()
        with clock:
            ...
        clock.seconds, clock.backend_compiles
    """

    EVENTS = (
        "/jax/core/compile/jaxpr_trace_duration",
        "/jax/core/compile/jaxpr_to_mlir_module_duration",
        "/jax/core/compile/backend_compile_duration",
    )

    def __init__(self):
        import jax

        self.seconds = 0.0
        self.backend_compiles = 0
        self._active = False
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event, duration, **kwargs):
        if self._active and event in self.EVENTS:
            self.seconds += float(duration)
            if event == self.EVENTS[-1]:
                self.backend_compiles += 1

    def __enter__(self):
        self.seconds, self.backend_compiles, self._active = 0.0, 0, True
        return self

    def __exit__(self, *exc):
        self._active = False


def timed(function):
    """Calls function() once: (its result, wall-clock seconds)."""
    started = time.perf_counter()
    result = function()
    return result, time.perf_counter() - started


@dataclass
class Repeats:
    """The calls of `repeat`: the last call's result, each call's wall-clock seconds, and whether
    every result equalled the one asked for."""

    result: object
    walls: list
    identical: bool = True

    @property
    def best(self) -> float:
        return min(self.walls)

    @property
    def median(self) -> float:
        return statistics.median(self.walls)


def repeat(function, times: int, *, warmup: int = 0, same_as=None) -> Repeats:
    """Calls function() `warmup` times untimed (compiling what it needs), then `times` times in a
    row, timing each call. With `same_as` (an array), `identical` says whether every timed call
    returned it bit for bit (NaN equal to NaN)."""
    for _ in range(warmup):
        function()
    result, walls, identical = None, [], True
    for _ in range(times):
        result, wall = timed(function)
        walls.append(wall)
        if same_as is not None:
            identical &= bool(np.array_equal(result, same_as, equal_nan=True))
    return Repeats(result, walls, identical)


def peak_rss_mib() -> float:
    """This process's peak resident memory (VmHWM), in MiB; run on a Dask worker with `client.run`."""
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    return float("nan")


def same_zarr(a, b) -> bool:
    """Whether two Zarr stores hold the same data variables, bit for bit (NaN equal to NaN)."""
    import numpy as np
    import xarray as xr

    x, y = (xr.open_zarr(p, consolidated=False) for p in (a, b))
    return set(x.data_vars) == set(y.data_vars) and all(
        np.array_equal(x[n].values, y[n].values, equal_nan=True) for n in x.data_vars)


def write_dask_result(path, checks: dict, **fields) -> None:
    """Write a Dask benchmark's result: the machine with Dask's, Zarr's and xarray's versions,
    `fields`, the bit-for-bit `checks` (printed too) and this process's peak memory."""
    print("bit for bit:", checks)
    write_json(path, {"machine": machine_info(extras=("dask", "distributed", "zarr", "xarray")), **fields,
                      "bit_for_bit": checks, "client_peak_rss_mib": peak_rss_mib()}, announce=True)


# ------------------------------------------------------------------------------------------------
# machine


def _version(package: str):
    """The installed version of `package`, or None when it is not installed."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def machine_info(extras=("jitcdde",)) -> dict:
    """The machine and the software measured: CPU, cores, Python, NumPy, SciPy, JAX (version,
    devices, persistent compilation cache) and fluidcc, and the version of each optional package in
    `extras` (None when it is not installed)."""
    import scipy

    import fluidcc  # before JAX: fluidcc configures JAX's devices
    import jax

    info = {
        "cpu_count": os.cpu_count(),
        "processor": platform.processor() or platform.machine(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "jax": jax.__version__,
        "jax_devices": [str(d) for d in jax.devices()],
        "numpy": np.__version__,
        "scipy": scipy.__version__,
        "fluidcc": fluidcc.__version__,
        "jax_compilation_cache_dir": jax.config.jax_compilation_cache_dir,
    }
    info.update({package: _version(package) for package in extras})
    try:
        with open("/proc/cpuinfo") as handle:
            names = [line.split(":", 1)[1].strip() for line in handle if line.startswith("model name")]
        if names:
            info["cpu_model"] = names[0]
    except OSError:
        pass
    return info


def cpus() -> str:
    """The cores and the processor, as in '2 CPUs (x86_64)'."""
    return f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()})"


# ------------------------------------------------------------------------------------------------
# output


def jsonable(value, nonfinite_as_text: bool = True):
    """`value` with NumPy arrays, integers and floats made Python lists, ints and floats, and tuples
    lists, for `json`. A non-finite float becomes the text 'inf', '-inf' or 'nan' (JSON has no such
    number), unless nonfinite_as_text is False (then `json` writes Infinity or NaN)."""
    if isinstance(value, dict):
        return {str(k): jsonable(v, nonfinite_as_text) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v, nonfinite_as_text) for v in value]
    if isinstance(value, np.ndarray):
        return [jsonable(v, nonfinite_as_text) for v in value.tolist()]
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        value = float(value)
        return value if np.isfinite(value) or not nonfinite_as_text else str(value)
    return value


def write_json(path, data, nonfinite_as_text: bool = True, announce: bool = False) -> None:
    """Writes jsonable(data) to the file `path`, indented by one space a level, and with `announce`
    prints 'wrote PATH'. Does nothing when path is None or empty (an --out not given)."""
    if not path:
        return
    with open(path, "w") as handle:
        json.dump(jsonable(data, nonfinite_as_text), handle, indent=1)
    if announce:
        print(f"wrote {path}")


def cell(value, spec: str = ".2e") -> str:
    """A table cell: format(value, spec); '-' for None, and a non-finite float as 'inf' or 'nan'."""
    if value is None:
        return "-"
    if isinstance(value, float) and not np.isfinite(value):
        return str(value)
    return format(value, spec)


class Table:
    """A plain-text table whose lines are one str.format template, e.g.

        table = Table("{:<20} {:>8} {:>8}", "name", "points", "wall s", rule="-")
        print(table.header())
        print(table.row("fixed", 100, cell(1.5, ".1f")))

    The template sets each column's alignment and width (and what stands between the columns); the
    header is the template filled with the titles, then the rule: with rule "-" (one character), a
    line of it as long as the header; with a longer text, that text; with None, none."""

    def __init__(self, template: str, *titles: str, rule: str | None = None):
        self.template, self.titles, self.rule = template, titles, rule

    @classmethod
    def markdown(cls, *columns: str) -> "Table":
        """A Markdown table; each column is its title, ending in ':' when the column is right-aligned
        (the ':' is not shown)."""
        titles = [c[:-1] if c.endswith(":") else c for c in columns]
        rule = "|" + "|".join("---:" if c.endswith(":") else "---" for c in columns) + "|"
        return cls("| " + " | ".join("{}" for _ in columns) + " |", *titles, rule=rule)

    def header(self) -> str:
        line = self.template.format(*self.titles)
        if self.rule is None:
            return line
        return line + "\n" + (self.rule * len(line) if len(self.rule) == 1 else self.rule)

    def row(self, *cells) -> str:
        return self.template.format(*cells)
