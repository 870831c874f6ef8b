"""What the reproduction scripts in examples/ share: running their sections and writing results.

Each script defines sections (functions of the output folder and the --quick flag returning a
dict) and calls `run`, which times them and writes everything to results.json with provenance.
"""

from __future__ import annotations

import argparse
import csv
import datetime as _dt
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np


def run(description: str, sections: tuple[tuple[str, Callable[[Path, bool], dict]], ...], quick_help: str,
        argv: list[str] | None = None) -> int:
    """Parse --quick/--out, run the sections in order and write results.json."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--out", required=True, help="output folder for figures, CSV and JSON")
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    started = time.perf_counter()
    import matplotlib

    matplotlib.use("Agg")  # figures go to files only
    from fluidcc import __version__

    results = {
        "fluidcc_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "command": "python " + " ".join(shlex.quote(a) for a in
                                        [sys.argv[0], *(argv if argv is not None else sys.argv[1:])]),
        "quick": args.quick,
        "wall_s": {},
    }
    for name, section in sections:
        begin = time.perf_counter()
        results[name] = section(out, args.quick)
        results["wall_s"][name] = time.perf_counter() - begin
        print(f"  [{name}: {results['wall_s'][name]:.1f} s]\n")
    results["wall_s"]["total"] = time.perf_counter() - started
    (out / "results.json").write_text(json.dumps(results, indent=2, default=_json_default) + "\n")
    print(f"total wall time {results['wall_s']['total']:.1f} s; wrote {out}/results.json and the files above")
    return 0


def _json_default(value):
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to JSON")


def write_csv(path: Path, rows: list[dict]) -> None:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def table(headers: list[str], rows: list[list]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(headers, *rows)]
    return "\n".join("  ".join(str(x).rjust(w) for x, w in zip(line, widths)) for line in [headers, *rows])
