"""Every notebook in notebooks/ (a jupytext percent-format .py file) runs top to bottom as a notebook,
in its quick mode, and is a clean, canonical script.

The notebooks run in a Jupyter kernel on the interpreter running pytest (so they see this fluidcc),
in a temporary working directory (so nothing is written into the repository). Their cells assert
the claims they make, so a notebook fails here when one breaks; a reproduction's results.json is
then checked to hold every section it announced. (pyflakes checks them with the benchmarks in
test_layout.py.)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jupytext
import nbclient
import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(p for p in NOTEBOOKS_DIR.glob("*.py") if not p.name.startswith("_"))

KERNEL_NAME = "python3"
CELL_TIMEOUT_S = 900


@pytest.fixture(scope="session")
def jupyter_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Jupyter data dir whose python3 kernelspec launches sys.executable.

    An installed python3 kernelspec (user-level, or in another environment) may name another
    interpreter; $JUPYTER_PATH comes first in every kernelspec lookup, so this one wins.
    """
    root = tmp_path_factory.mktemp("jupyter")
    write_kernel_spec(root / "kernels" / KERNEL_NAME)  # argv[0] is sys.executable
    return root


@pytest.fixture
def notebook_client(jupyter_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Make a NotebookClient running in tmp_path on this interpreter's kernel."""
    monkeypatch.setenv("JUPYTER_PATH", os.pathsep.join(filter(None, [str(jupyter_path), os.environ.get("JUPYTER_PATH")])))
    monkeypatch.setenv("MPLBACKEND", "Agg")

    def make(notebook: nbformat.NotebookNode) -> nbclient.NotebookClient:
        return nbclient.NotebookClient(
            notebook,
            kernel_name=KERNEL_NAME,
            timeout=CELL_TIMEOUT_S,
            resources={"metadata": {"path": str(tmp_path)}},  # the kernel's working directory
        )

    return make


def test_there_are_notebooks() -> None:
    assert len(NOTEBOOKS) >= 6, [p.name for p in NOTEBOOKS]
    assert not list(NOTEBOOKS_DIR.glob("*.ipynb")), "a notebook is its .py file; do not commit .ipynb copies"


def test_kernel_runs_this_interpreter_and_in_notebook_mode(notebook_client) -> None:
    cell = nbformat.v4.new_code_cell(
        "import sys, os\nfrom fluidcc import reproduce\n"
        "print(sys.prefix); print(sys.executable); print(os.getcwd()); print(reproduce.in_notebook())"
    )
    notebook = nbformat.v4.new_notebook(cells=[cell])
    notebook_client(notebook).execute()
    prefix, executable, cwd, in_notebook = cell.outputs[0]["text"].splitlines()
    assert (prefix, executable) == (sys.prefix, sys.executable)
    assert not Path(cwd).resolve().is_relative_to(NOTEBOOKS_DIR.parent)
    assert in_notebook == "True"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_executes(path: Path, notebook_client, tmp_path: Path) -> None:
    notebook = jupytext.read(path)
    # Raises CellExecutionError, with the failing cell and its traceback, on any error.
    notebook_client(notebook).execute()
    for results_path in tmp_path.glob("*/results.json"):  # a reproduction: every section recorded
        results = json.loads(results_path.read_text())
        assert results["quick"] is True and results["complete"] is True, results_path
        sections = [name for name in results["wall_s"] if name != "total"]
        assert sections and all(results[name] for name in sections), results_path


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_is_a_canonical_jupytext_script(path: Path) -> None:
    text = path.read_text()
    notebook = jupytext.reads(text, fmt="py:percent")
    nbformat.validate(notebook)
    assert notebook.metadata.get("kernelspec", {}).get("name") == KERNEL_NAME
    assert notebook.cells[0].cell_type == "markdown", f"{path.name} starts with its title and what it shows"
    # Written back by jupytext, the file is unchanged: what is reviewed is what the notebook holds.
    assert jupytext.writes(notebook, fmt="py:percent") == text, f"{path.name}: run `jupytext --to py:percent` on it"
    compile(text, str(path), "exec")  # code cells are plain Python (no IPython magics)


def test_a_reproduction_runs_as_a_script_with_its_options(tmp_path: Path) -> None:
    """The same file is a command: --help names its options (the run itself is the notebook test)."""
    scripts = [p for p in NOTEBOOKS if "reproduce.options(" in p.read_text()]
    assert scripts
    for path in scripts:
        result = subprocess.run([sys.executable, str(path), "--help"], capture_output=True, text=True, timeout=300,
                                cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "--quick" in result.stdout and "--out" in result.stdout, result.stdout
