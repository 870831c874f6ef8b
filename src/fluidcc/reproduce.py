"""Reproductions that are a notebook and a script at once: the convention of `notebooks/*.py`.

Every file in `notebooks/` is a jupytext percent-format script (``# %%`` starts a code cell,
``# %% [markdown]`` a text cell). JupyterLab with jupytext opens it as a notebook; Python runs it
as a script. Its parameters cell calls `options`:

* in a Jupyter kernel, `options` gives the quick settings and an output folder in the working
  directory, so the notebook runs in a minute or two (the test suite executes it so);
* run as ``python notebooks/NAME.py [--quick] [--out DIR]``, the command line decides: the full
  reproduction unless ``--quick``.

`Results` gathers what each section finds (numbers only, with provenance: fluidcc and JAX
versions, date, command, quick or full, wall time per section) and writes ``results.json``
after every section, so that a run stopped by a failing assert or an interruption keeps what its
earlier sections found (``"complete": false`` until `Results.write`); `write_csv` saves the
tables a section makes.
"""

from __future__ import annotations

import argparse
import csv
import json
import shlex
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np

from ._version import stamp

__all__ = ["Options", "Results", "in_notebook", "options", "write_csv"]


@dataclass(frozen=True)
class Options:
    """How a reproduction runs: `quick` (shorter horizons, smaller networks) and its output folder."""

    quick: bool
    out: Path
    command: str


def in_notebook() -> bool:
    """Whether this code runs in a Jupyter (IPython) kernel rather than as a script."""
    return "ipykernel" in sys.modules and sys.argv[0].endswith(("ipykernel_launcher.py", "ipykernel/__main__.py"))


def options(name: str, *, description: str, quick_help: str, argv: Sequence[str] | None = None) -> Options:
    """The options of reproduction `name`: from the command line when run as a script (``--quick``,
    ``--out``, default folder `name`), the quick run into folder `name` in a notebook kernel.

    The output folder is created. `argv` (without the program name) replaces ``sys.argv[1:]``.
    """
    if argv is None and in_notebook():
        out = Path(name)
        out.mkdir(parents=True, exist_ok=True)
        return Options(quick=True, out=out, command=f"notebook {name} (quick)")
    args_list = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog=f"python notebooks/{name}.py", description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", default=name, help=f"output folder for figures, CSV and JSON (default: {name})")
    args = parser.parse_args(args_list)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "python " + " ".join(shlex.quote(a) for a in [sys.argv[0], *args_list])
    return Options(quick=args.quick, out=out, command=command)


class Results:
    """What a reproduction finds, section by section, written to ``OUT/results.json``.

    ``with results.section("name") as found: found["x"] = ...`` records a section's numbers and
    its wall time and saves the file (``"complete": false``); `write` saves everything with the
    total wall time and ``"complete": true`` and returns the path.
    """

    def __init__(self, options: Options) -> None:
        self.options = options
        self._started = time.perf_counter()
        self.data: dict = {
            **stamp(),
            "command": options.command,
            "quick": options.quick,
            "complete": False,
            "wall_s": {},
        }

    def __getitem__(self, name: str):
        return self.data[name]

    @contextmanager
    def section(self, name: str) -> Iterator[dict]:
        """A dict for section `name`'s numbers, stored (with its wall time) when the block ends."""
        if name in self.data:
            raise ValueError(f"section {name!r} is already recorded; sections: {sorted(self._sections())}")
        found: dict = {}
        begin = time.perf_counter()
        yield found
        self.data[name] = found
        self.data["wall_s"][name] = time.perf_counter() - begin
        try:
            self._save()
        except (TypeError, ValueError):  # a value JSON cannot hold: the section is not recorded
            del self.data[name], self.data["wall_s"][name]
            raise

    def _sections(self) -> list[str]:
        return [name for name in self.data["wall_s"] if name != "total"]

    def write(self) -> Path:
        """Write ``results.json`` into the output folder, marked complete; returns its path."""
        self.data["wall_s"]["total"] = time.perf_counter() - self._started
        self.data["complete"] = True
        return self._save()

    def _save(self) -> Path:
        """The file as the run stands: written whole to a temporary name, then renamed over the
        last one, so that an interruption mid-write leaves the previous file."""
        path = self.options.out / "results.json"
        partial = path.with_name(path.name + ".partial")
        partial.write_text(json.dumps(self.data, indent=2, default=_json_default) + "\n")
        partial.replace(path)
        return path


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def write_csv(path: Path, rows: list[dict]) -> Path:
    """Write `rows` (dicts with the same keys, in order) as CSV with a header; returns `path`."""
    if not rows:
        raise ValueError(f"no rows to write to {path.name}")
    with Path(path).open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return Path(path)
