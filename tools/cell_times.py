"""Where a lesson's time went: the slowest cells of notebooks that recorded their timing.

The browser test (tests/test_browser.py) runs every lesson in JupyterLab with recordTiming on,
and saves each run to artifacts/browser/runs/ for nbval. This prints, per notebook, its cells'
total and the slowest cells, with each one's first source line:

    python -m tools.cell_times [artifacts/browser/runs] [--top 5]
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from pathlib import Path

import nbformat

START, END = "iopub.execute_input", "shell.execute_reply"


def _when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def first_code_line(source: str) -> str:
    """A cell's first line that is neither blank nor a comment: what names it in a list."""
    lines = (line for line in source.splitlines() if line.strip() and not line.startswith("#"))
    return next(lines, "")


def cell_seconds(path: Path) -> list[tuple[float, int, str]]:
    """(seconds, cell index, first source line) of each code cell with recorded timing."""
    rows = []
    for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
        timing = cell.get("metadata", {}).get("execution", {})
        if cell.cell_type == "code" and START in timing and END in timing:
            seconds = (_when(timing[END]) - _when(timing[START])).total_seconds()
            rows.append((seconds, i, first_code_line(cell.source)[:80]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default="artifacts/browser/runs", type=Path)
    parser.add_argument("--top", type=int, default=5, help="slowest cells shown per notebook")
    args = parser.parse_args(argv)
    paths = sorted(args.folder.glob("*.ipynb"))
    if not paths:
        print(
            f"no notebooks in {args.folder}: run the browser test first "
            "(pytest tests/test_browser.py)",
            file=sys.stderr,
        )
        return 2
    for path in paths:
        rows = cell_seconds(path)
        if not rows:
            print(f"{path.name}: no cell timing recorded")
            continue
        print(f"{path.name}: {sum(r[0] for r in rows):.1f} s in {len(rows)} cells")
        for seconds, i, first in sorted(rows, reverse=True)[: args.top]:
            print(f"  {seconds:6.1f} s  cell {i:3d}  {first}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
