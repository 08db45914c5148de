"""Reference tables of an experiment (``reference:``): measured or published figures in CSV files,
read, filtered and unpivoted into rows that name sweep axes and simulated metrics.

:func:`check_references` runs when the experiment is loaded, so a missing table, a missing column
or an axis that is not in the sweep is reported before anything is simulated.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.experiment.model import ReferenceSpec

__all__ = ["check_references", "norm", "project_root", "read_table", "reference_rows", "resolve_table"]

_UNPIVOT_COL = "__value"


def project_root() -> Path:
    return Path(__file__).resolve().parents[2]


def norm(v: Any) -> Any:
    """A label or table cell as compared with another: numbers as numbers, else case-folded text."""
    if isinstance(v, bool):
        return str(v).lower()
    try:
        f = float(v)
        return round(f, 9)
    except (TypeError, ValueError):
        return str(v).strip().lower()


def resolve_table(ref: ReferenceSpec, exp_path: Path, field: str = "reference.table") -> Path:
    p = Path(ref.table)
    for cand in ([p] if p.is_absolute() else [exp_path.parent / p, project_root() / p]):
        if cand.is_file():
            return cand
    raise ConfigError(f"reference table {ref.table!r} not found", source=str(exp_path), field=field)


def read_table(path: Path, source: str | None = None, field: str | None = None) -> list[dict[str, str]]:
    """A reference CSV; lines starting with '#' (provenance notes) are skipped."""
    try:
        with path.open(newline="", encoding="utf-8") as f:
            return list(csv.DictReader(line for line in f if not line.startswith("#")))
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise ConfigError(f"cannot read reference table {path.name}: {e.__class__.__name__}", source=source or str(path), field=field) from None


def reference_rows(ref: ReferenceSpec, exp_path: Path, field: str = "reference") -> tuple[list[dict[str, str]], dict[str, str], dict[str, str]]:
    """Rows of a reference table (filtered, unpivoted) with its column->axis and column->metric maps."""
    path = resolve_table(ref, exp_path, f"{field}.table")
    rows = read_table(path, str(exp_path), f"{field}.table")
    columns = list(rows[0]) if rows else []
    need = [*ref.match, *ref.filter, *ref.metrics, *(ref.unpivot.columns.values() if ref.unpivot else [])]
    for col in need:
        if col not in columns:
            raise ConfigError(
                f"column {col!r} not in {path.name} (columns: {', '.join(columns) or 'none: the table is empty'})",
                source=str(exp_path), field=field,
            )
    table = [r for r in rows if all(norm(r.get(c)) == norm(v) for c, v in ref.filter.items())]
    match, metrics = dict(ref.match), dict(ref.metrics)
    if ref.unpivot is not None:
        u = ref.unpivot
        long = []
        for r in table:
            for label, col in u.columns.items():
                long.append({**r, u.axis: str(label), _UNPIVOT_COL: r.get(col, "")})
        table = long
        match[u.axis] = u.axis
        metrics[_UNPIVOT_COL] = u.metric
    return table, match, metrics


def check_references(refs: list[ReferenceSpec], axes: list[str], exp_path: Path) -> None:
    """Every reference table exists, has the columns named, matches existing axes and has numbers
    where metrics are read."""
    for i, ref in enumerate(refs):
        field = f"reference.{i}"
        table, match, metrics = reference_rows(ref, exp_path, field)
        for col, axis in match.items():
            if axis not in axes:
                raise ConfigError(f"match maps column {col!r} to {axis!r}, which is not a sweep axis (axes: {', '.join(axes) or 'none'})",
                                  source=str(exp_path), field=f"{field}.match")
        if ref.unpivot is not None and ref.unpivot.axis not in axes:
            raise ConfigError(f"unpivot axis {ref.unpivot.axis!r} is not a sweep axis", source=str(exp_path), field=f"{field}.unpivot.axis")
        for r in table:
            for col in metrics:
                txt = (r.get(col) or "").strip()
                if not txt:
                    continue
                try:
                    float(txt)
                except ValueError:
                    raise ConfigError(f"column {col!r} holds {txt[:20]!r}, not a number", source=str(exp_path), field=f"{field}.metrics") from None
