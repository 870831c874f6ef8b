"""The profile benchmark's reading of a JAX profiler trace (`benchmarks/packet_profile.py --trace`):
an operation's own time is its time less that of the operations it calls, on its own thread."""

from __future__ import annotations

import gzip
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def profile():
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("packet_profile", ROOT / "benchmarks" / "packet_profile.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return module


def event(name, ts, dur, tid=1):
    return {"ph": "X", "name": name, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


def test_own_time_is_time_less_the_operations_inside_on_the_same_thread(profile, tmp_path):
    events = [event("while.1", 0, 100), event("fusion.2", 10, 30), event("sort.3", 15, 10),
              event("fusion.2", 50, 20), event("copy.4", 120, 5),
              # another thread's event during the loop is not inside it
              event("fusion.9", 20, 40, tid=2),
              # the runtime's own markers ("$...") and instants are left out
              {"ph": "X", "name": "$python", "ts": 0, "dur": 500, "pid": 1, "tid": 1},
              {"ph": "i", "name": "marker", "ts": 5, "pid": 1, "tid": 1}]
    path = tmp_path / "perfetto_trace.json.gz"
    with gzip.open(path, "wt") as f:
        json.dump({"traceEvents": events}, f)
    own, calls = profile._own_times(path)
    assert own == {"while.1": 100 - 30 - 20, "fusion.2": 30 - 10 + 20, "sort.3": 10, "copy.4": 5, "fusion.9": 40}
    assert calls == {"while.1": 1, "fusion.2": 2, "sort.3": 1, "copy.4": 1, "fusion.9": 1}
