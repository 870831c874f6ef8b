"""The sweep layer's parsers speak the library's language: errors name `grid`, `setting`, `axes`
and `fixed` (the command line relabels them as --grid and --set, tests/test_cli.py)."""

from __future__ import annotations

import pytest

from fluidcc.errors import ParameterError
from fluidcc.sweep import SweepSpec, parse_grid, parse_set


@pytest.mark.parametrize(("text", "field"), [
    ("kappa", "grid"),
    ("kappa=0.1:2", "grid"),
    ("kappa=0.1:2:x", "grid kappa count"),
    ("rtt=10parsecs:1s:3", "grid rtt start"),
    ("rtt=0:1s:3:log", "grid rtt"),
])
def test_grid_errors_name_the_grid(text: str, field: str) -> None:
    with pytest.raises(ParameterError) as error:
        parse_grid("miaimd", text)
    assert error.value.field == field and "--" not in error.value.field


def test_setting_and_spec_errors_name_library_fields() -> None:
    with pytest.raises(ParameterError) as error:
        parse_set("miaimd", "kappa")
    assert error.value.field == "setting"
    axis = parse_grid("miaimd", "kappa=0.1:1:3")
    with pytest.raises(ParameterError) as error:
        SweepSpec("miaimd", (axis,), fixed={"kappa": 0.2})
    assert error.value.field == "fixed" and "kappa" in str(error.value)
    with pytest.raises(ParameterError) as error:
        SweepSpec("miaimd", ())
    assert error.value.field == "axes"
