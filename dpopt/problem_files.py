"""Problem files: TOML, one problem per file, ``kind`` first.

Besides the problem's own fields a file may carry reference metadata, used by tests,
notebooks and benchmarks: ``title``, ``source`` (paper, table, equation) and
``expected_objective`` (the verified optimum, when known).
"""

from __future__ import annotations

import dataclasses
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from dpopt.problems.calibration import Calibration
from dpopt.problems.count_query import CountQuery
from dpopt.problems.dx_linear_query import DXLinearQuery
from dpopt.problems.finite_query import FiniteQuery
from dpopt.problems.multi_level import MultiLevelRelease
from dpopt.problems.noise_adding import NeighbouringSetNoise, NoiseAdding
from dpopt.problems.statistical_query import StatisticalQuery
from dpopt.limits import MAX_PROBLEM_FILE_BYTES
from dpopt.validation import check_real, fail, read_text_file

__all__ = ["ProblemFile", "load_problem", "read_problem_file", "problem_from_dict", "csv_paths", "resolve_csv_paths", "PROBLEM_KINDS"]

METADATA_KEYS = ("title", "source", "expected_objective")

#: kind -> (constructor, fields it accepts)
PROBLEM_KINDS: dict[str, tuple[Callable[..., Any], tuple[str, ...]]] = {
    "count_query": (CountQuery, ("n", "alpha", "epsilon", "loss", "side_information")),
    "multi_level_release": (MultiLevelRelease, ("n", "alphas", "epsilons")),
    "noise_adding": (NoiseAdding, ("sensitivity", "epsilon", "alpha", "cost", "window")),
    "dx_linear_query": (DXLinearQuery, ("n", "query", "metric", "histogram", "synthetic_size", "beta", "release_grid")),
    "statistical_query": (StatisticalQuery, ("n", "values", "epsilons", "budget", "matrices", "rows", "release_grid")),
    "calibration": (Calibration, ("mechanism", "epsilon", "alpha", "delta", "sensitivity", "p", "lower", "upper", "grid")),
    "finite_query": (FiniteQuery, ("universe", "epsilon", "alpha", "loss", "outputs", "objective", "prior", "side_information",
                                   "privacy", "calibrate_shortcuts", "delta", "gamma", "important", "penalty")),
}

#: kind -> (field, constructor, fields it accepts): a file of that kind holding the field
#: is that variant (``noise_adding`` with ``neighbouring_set``: Wu-Xia-He's sum queries).
PROBLEM_VARIANTS: dict[str, tuple[str, Callable[..., Any], tuple[str, ...]]] = {
    "noise_adding": ("neighbouring_set", NeighbouringSetNoise, ("neighbouring_set", "epsilon", "alpha", "cost", "delta", "grid", "window", "release_grid")),
}


@dataclass(frozen=True)
class ProblemFile:
    """A problem read from a file, with its reference metadata."""

    problem: Any
    path: Path
    metadata: dict[str, Any] = field(default_factory=dict)


def required_fields(constructor: Callable[..., Any]) -> tuple[str, ...]:
    """The fields a problem kind cannot do without (dataclass fields with no default)."""
    return tuple(
        f.name
        for f in dataclasses.fields(constructor)
        if f.init and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    )


def check_metadata(data: dict[str, Any], origin: str) -> None:
    """``title`` and ``source`` are text and ``expected_objective`` a finite number, when given
    (notebooks and tests read them; a file is refused rather than trusted with another type)."""
    for key in ("title", "source"):
        if key in data and not isinstance(data[key], str):
            raise fail(key, origin, "text (a string)", data[key])
    if "expected_objective" in data:
        check_real(data["expected_objective"], "expected_objective", origin)


def problem_from_dict(data: dict[str, Any], origin: str = "problem file") -> Any:
    """Build a problem from a dict with ``kind`` and the kind's fields (metadata keys ignored)."""
    if not isinstance(data, dict):
        raise fail("problem", origin, "a table of fields with 'kind' first", type(data).__name__)
    if "kind" not in data:
        raise fail("kind", origin, "present, one of " + ", ".join(repr(k) for k in PROBLEM_KINDS), None)
    kind = data["kind"]
    if not isinstance(kind, str) or kind not in PROBLEM_KINDS:
        raise fail("kind", origin, "one of " + ", ".join(repr(k) for k in PROBLEM_KINDS), kind)
    constructor, allowed = PROBLEM_KINDS[kind]
    if kind in PROBLEM_VARIANTS and PROBLEM_VARIANTS[kind][0] in data:
        _, constructor, allowed = PROBLEM_VARIANTS[kind]
    unknown = sorted(set(data) - set(allowed) - {"kind", *METADATA_KEYS})
    if unknown:
        raise fail(unknown[0], origin, f"absent: {kind} accepts " + ", ".join(allowed), data[unknown[0]])
    check_metadata(data, origin)
    missing = [name for name in required_fields(constructor) if name not in data]
    if missing:
        raise fail(missing[0], kind, "given (required field of a " + kind + " problem)", None)
    return constructor(**{key: data[key] for key in allowed if key in data})


def read_problem_file(path: str | Path) -> ProblemFile:
    """Read and validate a TOML problem file.

    Raises
    ------
    InvalidParameterError
        For a missing or unreadable file, invalid TOML, or any invalid field.
    """
    text = read_text_file(path, "PROBLEM", "dpopt", max_bytes=MAX_PROBLEM_FILE_BYTES, what="a TOML problem file")
    file = Path(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # its message gives line and column, not content
        raise fail("PROBLEM", "dpopt", "valid TOML", f"{path}: {exc}") from None
    problem = problem_from_dict(resolve_csv_paths(data, file.parent), origin=file.name)
    return ProblemFile(problem=problem, path=file, metadata={k: data[k] for k in METADATA_KEYS if k in data})


def csv_paths(data: dict[str, Any]) -> dict[str, str]:
    """The CSV files a problem dict reads: ``{table: path}`` for its ``metric`` and ``universe``
    tables of ``type = "csv"``."""
    return {table: spec["path"] for table in ("metric", "universe")
            if isinstance(spec := data.get(table), dict) and spec.get("type") == "csv" and isinstance(spec.get("path"), str)}


def resolve_csv_paths(data: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``data`` with the paths of :func:`csv_paths` made absolute, read relative to ``folder``
    (the file that names them); absolute paths stay as they are. The tables are replaced, not
    edited, so a dict shared with others is left alone."""
    for table, path in csv_paths(data).items():
        data[table] = {**data[table], "path": str((folder / path).resolve())}
    return data


def load_problem(path: str | Path) -> Any:
    """The problem in a TOML file (see :func:`read_problem_file`)."""
    return read_problem_file(path).problem
