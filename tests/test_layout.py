"""The package's layering (DESIGN.md, "Layout"), read from the source: no module imports a private
module of another package, and the DDE engine knows nothing of fluidcc but errors and units."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[1] / "src" / "fluidcc"
MODULES = sorted(SOURCE.rglob("*.py"))


def _name(path: Path) -> tuple[str, ...]:
    parts = ("fluidcc",) + path.relative_to(SOURCE).with_suffix("").parts
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imports(path: Path) -> list[tuple[str, ...]]:
    """Every fluidcc module `path` imports (absolute dotted names, as tuples), at any depth."""
    here = _name(path)
    package = here if path.name == "__init__.py" else here[:-1]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else ()
            target = base + tuple((node.module or "").split(".")) if node.module else base
            target = tuple(p for p in target if p)
            for alias in node.names:  # `from . import x` imports the module x
                found.append(target + (alias.name,) if not node.module else target)
        elif isinstance(node, ast.Import):
            found.extend(tuple(alias.name.split(".")) for alias in node.names)
    return [t for t in found if t[:1] == ("fluidcc",)]


def _subpackage(name: tuple[str, ...]) -> str:
    return name[1] if len(name) > 1 else ""


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(SOURCE)))
def test_no_module_imports_a_private_module_of_another_package(path):
    mine = _subpackage(_name(path))
    for target in _imports(path):
        private = [i for i, part in enumerate(target) if part.startswith("_") and i >= 1]
        # the root's own private modules (_version, _jax_setup) serve every package
        if private and _subpackage(target) != mine and target[1:2] not in (("_version",), ("_jax_setup",)):
            pytest.fail(f"{path.relative_to(SOURCE)} imports {'.'.join(target)}, private to another package")


def test_the_dde_engine_uses_nothing_of_fluidcc_but_errors_and_units():
    allowed = {"dde", "errors", "units", "_jax_setup"}
    for path in (SOURCE / "dde").glob("*.py"):
        for target in _imports(path):
            assert _subpackage(target) in allowed, f"{path.name} imports {'.'.join(target)}"


BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
BENCHMARK_SCRIPTS = sorted(p for p in BENCHMARKS.glob("*.py") if not p.name.startswith("_"))


def test_there_are_benchmarks_and_a_shared_harness():
    assert len(BENCHMARK_SCRIPTS) >= 8 and (BENCHMARKS / "_harness.py").is_file()


@pytest.mark.parametrize("path", BENCHMARK_SCRIPTS, ids=lambda p: p.name)
def test_a_benchmark_imports_helpers_never_another_benchmark(path):
    """Modules whose names start with an underscore are the benchmarks' helpers; a benchmark
    imports them, never another benchmark (DESIGN.md)."""
    scripts = {p.stem for p in BENCHMARK_SCRIPTS}
    for node in ast.walk(ast.parse(path.read_text())):
        names = ([node.module or ""] if isinstance(node, ast.ImportFrom)
                 else [a.name for a in node.names] if isinstance(node, ast.Import) else [])
        for name in names:
            assert name.split(".")[0] not in scripts, f"{path.name} imports the benchmark {name}"


@pytest.mark.parametrize("folder", ["benchmarks", "notebooks"])
def test_scripts_pass_pyflakes(folder):
    """No unused import or undefined name in the benchmarks and their helpers (the tests do not run
    them, so this keeps a renamed helper from breaking them unseen) or in the notebooks' code cells."""
    pyflakes = pytest.importorskip("pyflakes.api")
    from io import StringIO

    from pyflakes.reporter import Reporter

    paths = sorted((BENCHMARKS.parent / folder).glob("*.py"))
    assert paths
    out, err = StringIO(), StringIO()
    warnings = sum(pyflakes.checkPath(str(path), Reporter(out, err)) for path in paths)
    assert warnings == 0, out.getvalue() + err.getvalue()
