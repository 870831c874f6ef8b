"""Every notebook in notebooks/ runs top to bottom with its small defaults, and is committed clean.

The notebooks run in a Jupyter kernel on the interpreter running pytest (so they see this fluidcc),
in a temporary working directory (so nothing is written into the repository). A notebook that
comes from a generator script (notebooks/make_*.py, exposing NOTEBOOK_PATH and build_notebook())
must be exactly what the script writes.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import nbclient
import nbformat
import pytest
from ipykernel.kernelspec import write_kernel_spec

NOTEBOOKS_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOKS_DIR.glob("*.ipynb"))
GENERATORS = sorted(NOTEBOOKS_DIR.glob("make_*.py"))

KERNEL_NAME = "python3"
CELL_TIMEOUT_S = 600


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

    def make(notebook: nbformat.NotebookNode) -> nbclient.NotebookClient:
        return nbclient.NotebookClient(
            notebook,
            kernel_name=KERNEL_NAME,
            timeout=CELL_TIMEOUT_S,
            resources={"metadata": {"path": str(tmp_path)}},  # the kernel's working directory
        )

    return make


def _load_generator(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"notebook_generator_{path.stem}", path)
    assert spec is not None and spec.loader is not None, f"cannot load {path}"
    module = importlib.util.module_from_spec(spec)
    dont_write_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True  # no __pycache__ in notebooks/
    try:
        spec.loader.exec_module(module)
    finally:
        sys.dont_write_bytecode = dont_write_bytecode
    return module


def test_kernel_runs_this_interpreter(notebook_client) -> None:
    cell = nbformat.v4.new_code_cell("import sys, os; print(sys.prefix); print(sys.executable); print(os.getcwd())")
    notebook = nbformat.v4.new_notebook(cells=[cell])
    notebook_client(notebook).execute()
    prefix, executable, cwd = cell.outputs[0]["text"].splitlines()
    assert (prefix, executable) == (sys.prefix, sys.executable)
    assert not Path(cwd).resolve().is_relative_to(NOTEBOOKS_DIR.parent)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_executes(path: Path, notebook_client) -> None:
    notebook = nbformat.read(path, as_version=4)
    # Raises CellExecutionError, with the failing cell and its traceback, on any error.
    notebook_client(notebook).execute()


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_is_committed_clean(path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    nbformat.validate(notebook)
    assert notebook.metadata.get("kernelspec", {}).get("name") == KERNEL_NAME
    for index, cell in enumerate(notebook.cells):
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, (
                f"{path.name}: cell {index} has outputs; clear them (or rerun its generator) before committing"
            )


@pytest.mark.parametrize("generator", GENERATORS, ids=[p.name for p in GENERATORS])
def test_notebook_matches_its_generator(generator: Path) -> None:
    module = _load_generator(generator)
    target = Path(module.NOTEBOOK_PATH)
    assert target.exists(), f"{generator.name} writes {target.name}, which is missing: run the generator"
    assert nbformat.read(target, as_version=4) == module.build_notebook(), (
        f"{target.name} differs from what {generator.name} builds: edit the generator, then rerun it"
    )
