"""fluidcc.reproduce: the options, results and tables of the notebooks that are also scripts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from fluidcc import reproduce


def test_script_options_come_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    options = reproduce.options("demo", description="d", quick_help="q", argv=["--quick", "--out", str(out)])
    assert options.quick is True and options.out == out and out.is_dir()
    assert "--quick" in options.command and str(out) in options.command
    full = reproduce.options("demo", description="d", quick_help="q", argv=["--out", str(out)])
    assert full.quick is False


def test_default_output_folder_is_the_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    options = reproduce.options("demo_name", description="d", quick_help="q", argv=[])
    assert options.out == Path("demo_name") and (tmp_path / "demo_name").is_dir()


def test_an_unknown_option_is_an_error_naming_it(capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as stop:
        reproduce.options("demo", description="d", quick_help="q", argv=["--fast"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "--fast" in err and "--quick" in err  # the usage line lists what is allowed


def test_results_record_sections_with_provenance(tmp_path: Path) -> None:
    options = reproduce.Options(quick=True, out=tmp_path, command="python x.py --quick")
    results = reproduce.Results(options)
    with results.section("first") as found:
        found["value"] = np.float64(1.5)
        found["array"] = np.arange(3)
        found["path"] = tmp_path / "f.csv"
    with pytest.raises(ValueError, match="'first' is already recorded"):
        with results.section("first"):
            pass
    written = json.loads(results.write().read_text())
    assert written["first"] == {"value": 1.5, "array": [0, 1, 2], "path": str(tmp_path / "f.csv")}
    assert written["quick"] is True and written["command"] == "python x.py --quick" and written["complete"] is True
    assert set(written["wall_s"]) == {"first", "total"} and "fluidcc_version" in written


def test_results_are_saved_after_every_section(tmp_path: Path) -> None:
    """A run stopped after its first section (a failing assert, an interruption) keeps it on disk."""
    results = reproduce.Results(reproduce.Options(quick=False, out=tmp_path, command=""))
    with results.section("first") as found:
        found["value"] = 1
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["first"] == {"value": 1} and saved["complete"] is False and "total" not in saved["wall_s"]
    with pytest.raises(AssertionError):
        with results.section("second") as found:
            found["value"] = 2
        assert found["value"] == 3  # a notebook's assert after its section
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["second"] == {"value": 2} and saved["complete"] is False
    results.write()
    saved = json.loads((tmp_path / "results.json").read_text())
    assert saved["complete"] is True and set(saved["wall_s"]) == {"first", "second", "total"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]  # no temporary file left


def test_a_section_json_cannot_hold_is_not_recorded(tmp_path: Path) -> None:
    results = reproduce.Results(reproduce.Options(quick=False, out=tmp_path, command=""))
    with results.section("first") as found:
        found["value"] = 1
    with pytest.raises(TypeError, match="cannot write object"):
        with results.section("odd") as found:
            found["value"] = object()
    assert "odd" not in results.data and "odd" not in results.data["wall_s"]
    saved = json.loads((tmp_path / "results.json").read_text())
    assert "odd" not in saved and saved["first"] == {"value": 1}
    results.write()  # later saves still work


def test_a_section_that_raises_is_not_recorded(tmp_path: Path) -> None:
    results = reproduce.Results(reproduce.Options(quick=False, out=tmp_path, command=""))
    with pytest.raises(RuntimeError):
        with results.section("broken"):
            raise RuntimeError("boom")
    assert "broken" not in results.data and "broken" not in results.data["wall_s"]
    assert not (tmp_path / "results.json").exists()  # nothing recorded, nothing saved


def test_csv(tmp_path: Path) -> None:
    path = reproduce.write_csv(tmp_path / "t.csv", [{"x": 1, "y": 2}, {"x": 3, "y": 4}])
    assert path.read_text().splitlines() == ["x,y", "1,2", "3,4"]
    with pytest.raises(ValueError, match="no rows to write to empty.csv"):
        reproduce.write_csv(tmp_path / "empty.csv", [])


def test_not_in_a_notebook_under_pytest() -> None:
    assert reproduce.in_notebook() is False
