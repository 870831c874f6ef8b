"""What the notebook generators (make_*.py) share: cell constructors and a reproducible writer.

A generator lists its cells with `md` and `code` and calls `build` / `write`: the notebook is
written with its outputs cleared and with fixed cell ids, so rerunning a generator on unchanged
source gives a byte-identical file.
"""

from __future__ import annotations

from pathlib import Path
from textwrap import dedent

import nbformat


def md(text: str) -> tuple[str, str]:
    return ("markdown", dedent(text).strip("\n"))


def code(text: str) -> tuple[str, str]:
    return ("code", dedent(text).strip("\n"))


def build(cells: list[tuple[str, str]]) -> nbformat.NotebookNode:
    """The notebook, outputs cleared, with fixed cell ids (so the file is reproducible)."""
    nodes = []
    for index, (kind, source) in enumerate(cells):
        cell_id = f"cell-{index:02d}"
        if kind == "markdown":
            nodes.append(nbformat.v4.new_markdown_cell(source, id=cell_id))
        else:
            nodes.append(nbformat.v4.new_code_cell(source, id=cell_id))
    notebook = nbformat.v4.new_notebook(
        cells=nodes,
        metadata={
            "kernelspec": {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"},
            "language_info": {"name": "python"},
        },
    )
    nbformat.validate(notebook)
    return notebook


def write(notebook: nbformat.NotebookNode, default_path: Path, argv: list[str]) -> int:
    """Write to argv[0] if given, else to default_path; returns the exit code."""
    path = Path(argv[0]) if argv else default_path
    nbformat.write(notebook, path)
    print(f"wrote {path}")
    return 0
