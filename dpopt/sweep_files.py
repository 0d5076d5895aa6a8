"""Sweep files: a base problem, a grid of field values and random fields, read into the cells to solve.

A sweep file (TOML, ``kind = "sweep"``) holds a base problem (the ``[base]`` table, or
``base = "path/to/problem.toml"``), a ``[grid]`` of field values crossed with each other
(a quoted dotted key such as ``"metric.threshold"`` varies a field of one of the base's tables),
an optional ``[zip]`` of equally long lists varied together (crossed with the grid), and
``methods`` (default: every method that applies to each cell)::

    kind = "sweep"
    methods = ["lp", "factored"]
    [base]
    kind = "count_query"
    loss = "absolute"
    n = 10
    [grid]
    alpha = [0.3, 0.5, 0.7]
    n = [5, 10]

``record`` lists solution parameters or details (e.g. ``improvement_factor``) kept as extra
columns, and derived quantities of :data:`dpopt.sweeps.DERIVED` (``input_losses``: the expected loss of
the certified mechanism on every input, a list per row, e.g. for Wu-Xia-He's per-graph Fig. 6).
Random instances: ``seeds`` (a count or a list) and a ``[random]`` table of fields generated
from each cell's seed by :data:`GENERATORS` (a grid key ``random.<field>.<parameter>`` varies
a generator's parameter); each (seed, field) has its own stream, so a cell's instance never
depends on the others.

Every cell's problem is built (and so validated, naming the field and the cell) before any
solve, and each (cell, method) gets a key: a hash of the cell's problem and the method.

Solving the cells into one table: :mod:`dpopt.sweeps`.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import os
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from dpopt.limits import MAX_PROBLEM_FILE_BYTES
from dpopt.problem_files import check_metadata, csv_paths, problem_from_dict, read_problem_file, resolve_csv_paths
from dpopt.validation import InvalidParameterError, check_int, fail, read_text_file

__all__ = ["GENERATORS", "MAX_CELLS", "OWNER", "RESULT_COLUMNS", "Cell", "Sweep", "load_sweep", "sweep_from_dict"]

OWNER = "sweep"
#: Largest number of (cell, method) rows one sweep file may ask for.
MAX_CELLS = 100_000
SWEEP_KEYS = ("kind", "base", "grid", "zip", "methods", "seeds", "random", "record", "title", "source")
#: Table columns every row has, in this order (the cell's varied fields come first).
RESULT_COLUMNS = ("key", "method", "ran", "solver", "status", "exact", "objective", "lower_bound", "upper_bound",
                  "certificate_ok", "max_privacy_loss", "target", "seconds", "peak_mib", "error")


@dataclass(frozen=True)
class Cell:
    """One (problem, method) to solve: the varied fields, the full problem description, its key."""

    parameters: dict[str, Any]
    problem: dict[str, Any]
    method: str
    key: str


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep: the cells to solve, in order."""

    cells: tuple[Cell, ...]
    varied: tuple[str, ...]
    record: tuple[str, ...] = ()
    """Solution parameters or details recorded as extra columns (numbers; empty when a method lacks them)."""


def _cell_key(problem: dict[str, Any], method: str) -> str:
    """The cell's identity in an output table: its problem, its method, and the bytes of any CSV
    file the problem reads (until 2026-11-29 an edited CSV universe resumed the old rows)."""
    files = {table: _file_digest(path) for table, path in csv_paths(problem).items()}
    text = json.dumps({"problem": problem, "method": method, **({"files": files} if files else {})}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _file_digest(path: str) -> str:
    try:
        status = os.stat(path)
    except OSError:  # the cell's own build reports the file
        return "unreadable"
    return _digest_of(path, status.st_mtime_ns, status.st_size)


@functools.lru_cache(maxsize=32)
def _digest_of(path: str, modified: int, size: int) -> str:
    """A file's SHA-256, read once for all the cells that name it (while it stays unchanged)."""
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return "unreadable"


def _values(table: Any, name: str) -> dict[str, list[Any]]:
    if table is None:
        return {}
    if not isinstance(table, dict):
        raise fail(name, OWNER, "a table of field = [values]", type(table).__name__)
    out = {}
    for field, values in table.items():
        if field == "kind":
            raise fail(f"{name}.kind", OWNER, "fixed in [base] (a sweep varies fields of one kind)", values)
        if not isinstance(values, list) or not values:
            raise fail(f"{name}.{field}", OWNER, "a non-empty list of values", values)
        if name == "grid":
            _check_distinct(values, f"grid.{field}")
        out[field] = values
    return out


def _check_distinct(values: list[Any], field: str) -> None:
    """Refuse a list that names one value twice: its cells would be one cell, and the table one row."""
    seen: set[str] = set()
    for value in values:
        text = json.dumps(value, sort_keys=True, default=str)
        if text in seen:
            raise fail(field, OWNER, f"a list of distinct values ({text} appears twice: one cell, one row)", values)
        seen.add(text)


def sweep_from_dict(data: dict[str, Any], *, origin: str = "sweep file", base_dir: Path | None = None) -> Sweep:
    """Parse and validate a sweep description; every cell's problem is built before returning."""
    if not isinstance(data, dict) or data.get("kind") != "sweep":
        raise fail("kind", origin, '"sweep"', data.get("kind") if isinstance(data, dict) else type(data).__name__)
    unknown = sorted(set(data) - set(SWEEP_KEYS))
    if unknown:
        raise fail(unknown[0], origin, "absent: a sweep takes " + ", ".join(SWEEP_KEYS), data[unknown[0]])
    check_metadata(data, origin)
    base = data.get("base")
    if isinstance(base, str):
        path = Path(base) if base_dir is None or Path(base).is_absolute() else base_dir / base
        base = _problem_dict(path)
    if not isinstance(base, dict) or "kind" not in base:
        raise fail("base", origin, "a [base] problem table with its kind, or the path of a problem file", base)
    grid, zipped = _values(data.get("grid"), "grid"), _values(data.get("zip"), "zip")
    if set(grid) & set(zipped):
        field = sorted(set(grid) & set(zipped))[0]
        raise fail(f"zip.{field}", origin, "varied in [grid] or [zip], not both", zipped[field])
    lengths = {len(v) for v in zipped.values()}
    if len(lengths) > 1:
        raise fail("zip", origin, "lists of one common length (they vary together)", {k: len(v) for k, v in zipped.items()})
    record = data.get("record", [])
    if not isinstance(record, list) or not all(isinstance(r, str) and r and r not in RESULT_COLUMNS for r in record):
        raise fail("record", origin, "a list of solution parameter names (e.g. improvement_factor), none a table column", record)
    methods = data.get("methods")
    if methods is not None and (not isinstance(methods, list) or not methods or not all(isinstance(m, str) for m in methods)):
        raise fail("methods", origin, "a non-empty list of method names (omit it for every applicable method)", methods)
    if methods is not None:
        _check_distinct(methods, "methods")
    if zipped:
        _check_distinct([list(row) for row in zip(*zipped.values())], "zip")
    random_fields = _random_fields(data.get("random"))
    seeds = _seeds(data.get("seeds"), random_fields)
    for name in [*grid, *zipped]:
        if name.startswith("random."):
            _generator_parameter(random_fields, name)
    combos = [{**combo, **({"seed": seed} if seed is not None else {})} for combo in _combinations(grid, zipped) for seed in seeds]
    count = len(combos) * (len(methods) if methods else 1)
    if count > MAX_CELLS:
        raise fail("grid", origin, f"at most {MAX_CELLS:,} (cell, method) rows", count)
    cells: list[Cell] = []
    first_of: dict[str, int] = {}  # key -> the cell that has it (two cells, one problem: one row)
    for index, parameters in enumerate(combos):
        problem = _with_random_fields(base, parameters, random_fields)
        if base_dir is not None:  # CSV paths in the sweep file are relative to it, as in a problem file
            problem = resolve_csv_paths(problem, base_dir)
        built = _build(problem, index, parameters)
        names = methods if methods else [m.name for m in _applicable(built)]
        for method in names:
            _check_method(built, method, index, parameters)
            key = _cell_key(problem, method)
            if key in first_of:
                earlier = cells[first_of[key]].parameters
                raise fail("grid", origin, f"values that give distinct problems ({earlier} and {parameters} are the same "
                           f"{built.kind} problem: one row)", parameters)
            first_of[key] = len(cells)
            cells.append(Cell(parameters, problem, method, key))
    varied = tuple(grid) + tuple(zipped) + (("seed",) if seeds != [None] else ())
    if set(record) & set(varied):
        raise fail("record", origin, "names other than the varied fields", sorted(set(record) & set(varied)))
    return Sweep(tuple(cells), varied, tuple(record))


# -- random instances: fields generated from each cell's seed ---------------------------------

def _uniform_matrix(rng: np.random.Generator, rows: int, columns: int, low: float = 0.0, high: float = 1.0) -> list[list[float]]:
    return rng.uniform(low, high, size=(rows, columns)).tolist()


def _binary_matrix(rng: np.random.Generator, rows: int, columns: int) -> list[list[float]]:
    return rng.integers(0, 2, size=(rows, columns)).astype(float).tolist()


def _random_universe(rng: np.random.Generator, datasets: int, degree: float = 3.0, values: int = 10) -> dict[str, Any]:
    """A connected neighbour relation (a random spanning tree plus random edges up to the average
    degree) and integer query values in [0, values], as an explicit universe."""
    order = rng.permutation(datasets)
    edges = {tuple(sorted((int(order[k]), int(order[rng.integers(k)])))) for k in range(1, datasets)}
    wanted = int(round(degree * datasets / 2))
    while len(edges) < min(wanted, datasets * (datasets - 1) // 2):
        a, b = (int(v) for v in rng.choice(datasets, size=2, replace=False))
        edges.add((min(a, b), max(a, b)))
    return {"type": "explicit", "values": rng.integers(0, values + 1, size=datasets).tolist(), "neighbours": sorted(map(list, edges))}


#: generator name -> (function(rng, **parameters), required parameters, optional parameters)
GENERATORS: dict[str, tuple[Any, tuple[str, ...], tuple[str, ...]]] = {
    "uniform_matrix": (_uniform_matrix, ("rows", "columns"), ("low", "high")),
    "binary_matrix": (_binary_matrix, ("rows", "columns"), ()),
    "random_universe": (_random_universe, ("datasets",), ("degree", "values")),
}


def _random_fields(table: Any) -> dict[str, dict[str, Any]]:
    """``[random]``: problem field -> {generator = name, parameters...}, checked against :data:`GENERATORS`."""
    if table is None:
        return {}
    if not isinstance(table, dict) or not table:
        raise fail("random", OWNER, "a table of field = {generator = ..., parameters}", table)
    for field, spec in table.items():
        if not isinstance(spec, dict) or spec.get("generator") not in GENERATORS:
            raise fail(f"random.{field}", OWNER, "a table with generator = " + " | ".join(repr(g) for g in GENERATORS), spec)
        _, required, optional = GENERATORS[spec["generator"]]
        unknown = sorted(set(spec) - {"generator", *required, *optional})
        if unknown:
            raise fail(f"random.{field}.{unknown[0]}", OWNER, f"absent: {spec['generator']} takes " + ", ".join((*required, *optional)), spec[unknown[0]])
    return table


def _generator_parameter(random_fields: dict[str, dict[str, Any]], name: str) -> None:
    """A grid key ``random.<field>.<parameter>`` must name a generator parameter."""
    parts = name.split(".")
    if len(parts) != 3 or parts[1] not in random_fields:
        raise fail(f"grid.{name}", OWNER, "random.<field>.<parameter> for a field of [random]", name)
    _, required, optional = GENERATORS[random_fields[parts[1]]["generator"]]
    if parts[2] not in (*required, *optional):
        raise fail(f"grid.{name}", OWNER, f"a parameter of {random_fields[parts[1]]['generator']} (" + ", ".join((*required, *optional)) + ")", parts[2])


def _seeds(value: Any, random_fields: dict[str, dict[str, Any]]) -> list[int | None]:
    if value is None:
        if random_fields:
            raise fail("seeds", OWNER, "given with [random] (a count, or a list of seeds)", None)
        return [None]
    if not random_fields:
        raise fail("seeds", OWNER, "given only with [random] fields to generate", value)
    if isinstance(value, int) and not isinstance(value, bool):
        return list(range(check_int(value, "seeds", OWNER, low=1, high=MAX_CELLS)))
    if not isinstance(value, list) or not value:
        raise fail("seeds", OWNER, "a count, or a non-empty list of seeds", value)
    seeds = [check_int(v, "seeds", OWNER, low=0) for v in value]
    _check_distinct(seeds, "seeds")
    return seeds


def _with_random_fields(base: dict[str, Any], parameters: dict[str, Any], random_fields: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The cell's problem: base, its varied fields, and each random field generated from the cell's seed."""
    problem = dict(base)
    for name, value in parameters.items():
        if not name.startswith("random.") and name != "seed":
            _set_field(problem, name, value)
    for number, (field, spec) in enumerate(sorted(random_fields.items())):
        function, required, optional = GENERATORS[spec["generator"]]
        arguments = {k: v for k, v in spec.items() if k != "generator"}
        arguments.update({k.split(".")[2]: v for k, v in parameters.items() if k.startswith(f"random.{field}.")})
        missing = [k for k in required if k not in arguments]
        if missing:
            raise fail(f"random.{field}.{missing[0]}", OWNER, "given (in [random] or as a grid key random.<field>.<parameter>)", None)
        rng = np.random.default_rng([int(parameters["seed"]), number])  # one stream per seed and field
        try:
            problem[field] = function(rng, **arguments)
        except (TypeError, ValueError) as exc:
            raise fail(f"random.{field}", OWNER, f"parameters {spec['generator']} accepts", f"{arguments} ({exc})") from None
    return problem


def _set_field(problem: dict[str, Any], name: str, value: Any) -> None:
    """Set a field, or with a dotted name (``metric.threshold``) a field of one of its tables (copied, never shared)."""
    *path, last = name.split(".")
    table = problem
    for depth, part in enumerate(path):
        inner = table.get(part)
        if not isinstance(inner, dict):
            raise fail(f"grid.{name}", OWNER, f"a field of a table the base problem has ({'.'.join(path[: depth + 1])} is not a table)", inner)
        table[part] = table = dict(inner)
    table[last] = value


def _combinations(grid: dict[str, list[Any]], zipped: dict[str, list[Any]]) -> list[dict[str, Any]]:
    crossed = [dict(zip(grid, values)) for values in itertools.product(*grid.values())] if grid else [{}]
    together = [dict(zip(zipped, values)) for values in zip(*zipped.values())] if zipped else [{}]
    return [{**a, **b} for a in crossed for b in together]


def _problem_dict(path: Path) -> dict[str, Any]:
    text = read_text_file(path, "base", OWNER, max_bytes=MAX_PROBLEM_FILE_BYTES, what="a TOML problem file")
    read_problem_file(path)  # validated as a problem file on its own first
    data = {k: v for k, v in tomllib.loads(text).items() if k not in ("title", "source", "expected_objective")}
    return resolve_csv_paths(data, path.parent)  # relative to the base file, as when it is solved alone


def _build(problem: dict[str, Any], index: int, parameters: dict[str, Any]) -> Any:
    try:
        return problem_from_dict(problem, origin=f"sweep cell {index}")
    except InvalidParameterError as exc:  # the same refusal, saying which cell
        raise InvalidParameterError(exc.parameter, f"{exc.owner} (sweep cell {index}: {_describe(parameters)})", exc.allowed, exc.got) from None


def _applicable(problem: Any) -> list[Any]:
    from dpopt.registry import methods_for

    return methods_for(problem)


def _check_method(problem: Any, method: str, index: int, parameters: dict[str, Any]) -> None:
    from dpopt.registry import REGISTRY, _load_methods

    _load_methods()
    if method != "auto" and method not in REGISTRY.get(problem.kind, {}):
        raise fail("methods", OWNER, f"methods of {problem.kind} (" + ", ".join(sorted(REGISTRY.get(problem.kind, {}))) + ")", method)


def _describe(parameters: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in parameters.items()) or "the base problem"


def load_sweep(path: str | Path) -> Sweep:
    """Read and validate a sweep file (every cell built before any work)."""
    text = read_text_file(path, "SWEEP", "dpopt", max_bytes=MAX_PROBLEM_FILE_BYTES, what="a TOML sweep file")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise fail("SWEEP", "dpopt", "valid TOML", f"{path}: {exc}") from None
    return sweep_from_dict(data, origin=Path(path).name, base_dir=Path(path).parent)
