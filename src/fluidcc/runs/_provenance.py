"""The provenance every run's dataset carries: versions, date, command, parameters, solver."""

from __future__ import annotations

import json

from .._version import stamp


def provenance(model: str, values: dict, solution, rtol, command: str = "", solver: str = "rk4") -> dict:
    """Dataset attributes of one run of `model` with parameter `values` (SI) solved as `solution`
    (its first point's status), at tolerance `rtol` (None: fixed step), started by `command`."""
    return {
        "title": f"fluidcc simulation of {model}",
        "model": model,
        **stamp(),
        "command": command,
        "parameters_si": json.dumps(values, sort_keys=True),
        "status": int(solution.status[0]),
        "status_message": str(solution.messages[0]) or "ok",
        "solver": solver,
        "solver_steps_per_delay": int(solution.steps_per_delay[0]),
        "solver_rtol": rtol if rtol is not None else "none",
        "seed": "none (deterministic)",
    }
