"""Writing solutions to CSV, JSON, Parquet and NPZ, and reading them back.

Every file carries the certificate: inside JSON and NPZ, in the Parquet schema
metadata, and beside a CSV as ``<path>.meta.json``. Files are written to a temporary
name in the target folder and renamed into place, so a failure leaves nothing
half-written. Reading re-measures the certificate on the matrix actually read and
refuses a file whose mechanism no longer passes it.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd

from dpopt.certificates import certify
from dpopt.validation import DPOptError, fail

__all__ = ["EXPORT_FORMATS", "check_export_path", "export_solution", "read_solution"]

EXPORT_FORMATS = (".csv", ".json", ".parquet", ".npz")
FORMAT_VERSION = 1


def check_export_path(path: str | os.PathLike[str]) -> Path:
    """Validate an export path before any work is done."""
    target = Path(path)
    if target.suffix.lower() not in EXPORT_FORMATS:
        raise fail("export", "dpopt", "a path ending in " + ", ".join(EXPORT_FORMATS), str(path))
    if not target.parent.exists() or not target.parent.is_dir():
        raise fail("export", "dpopt", "a path in an existing folder", str(path))
    return target


def _frame_dict(frame: pd.DataFrame) -> dict[str, Any]:
    return {"index": frame.index.tolist(), "columns": frame.columns.tolist(), "data": frame.to_numpy().tolist()}


def _frame_from_dict(data: dict[str, Any]) -> pd.DataFrame:
    from dpopt.solution import mechanism_frame

    return mechanism_frame(np.array(data["data"], dtype=float), data["index"], data["columns"])


def _metadata(solution: Any) -> dict[str, Any]:
    tables: dict[str, Any] = {}
    for key, value in solution.details.items():
        if isinstance(value, pd.DataFrame):
            tables[key] = _frame_dict(value)
        elif isinstance(value, list) and value and all(isinstance(v, pd.DataFrame) for v in value):
            tables[key] = [_frame_dict(v) for v in value]
    return {
        "format": "dpopt-solution",
        "format_version": FORMAT_VERSION,
        "problem": solution.problem.to_dict(),
        "summary": solution.summary(),
        "certificate": solution.certificate.to_dict(),
        "tables": tables,
    }


def _atomic_write(target: Path, write: Callable[[str], None]) -> str:
    handle, temp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=target.suffix)
    os.close(handle)
    try:
        write(temp)
    except BaseException:
        os.unlink(temp)
        raise
    return temp


def _remap_frame(factored: Any) -> pd.DataFrame:
    t = factored.remap.tocoo()
    order = np.lexsort((t.col, t.row))
    return pd.DataFrame({"from": t.row[order], "to": t.col[order], "probability": t.data[order]})


def _factored_from_frame(frame: pd.DataFrame, meta: dict[str, Any]) -> Any:
    from scipy import sparse

    from dpopt.mechanisms.factored import FactoredMechanism

    n = int(meta["factored"]["n"])
    remap = sparse.csr_array(
        (frame["probability"].to_numpy(float), (frame["from"].to_numpy(int), frame["to"].to_numpy(int))), shape=(n + 1, n + 1)
    )
    return FactoredMechanism(n=n, alpha=float(meta["factored"]["alpha"]), remap=remap)


def export_solution(solution: Any, path: str | os.PathLike[str], *, dense: bool = False) -> None:
    """Write ``solution`` to ``path`` in the format its suffix names.

    A factored solution (``x = G T``) is written as its sparse remap T in long form
    (columns ``from``, ``to``, ``probability``; NPZ: the same three arrays) with
    ``alpha`` and ``n`` in the metadata, unless ``dense`` asks for the matrix.

    Raises
    ------
    InvalidParameterError
        For an unsupported suffix, a missing folder, or an uncertified mechanism.
    """
    target = check_export_path(path)
    if not solution.certificate.ok:
        raise fail("certificate", "export", "a passing privacy certificate (ok = true)", solution.certificate.to_dict())
    meta = _metadata(solution)
    if solution.parameters is not None:
        _write_parameters(solution, target, meta)
        return
    factored = solution.factored is not None and not dense
    if factored:
        meta["factored"] = {"n": solution.factored.n, "alpha": solution.factored.alpha}
        frame = _remap_frame(solution.factored)
    else:
        frame = solution.mechanism
    suffix = target.suffix.lower()
    writes: list[tuple[Path, Callable[[str], None]]] = []
    if suffix == ".csv":
        writes.append((target, lambda p: frame.to_csv(p, index=not factored)))
        writes.append((Path(f"{target}.meta.json"), lambda p: Path(p).write_text(json.dumps(meta, indent=2))))
    elif suffix == ".json":
        body = {"remap": frame.to_dict(orient="list")} if factored else {"mechanism": _frame_dict(frame)}
        writes.append((target, lambda p: Path(p).write_text(json.dumps({**meta, **body}))))
    elif suffix == ".parquet":
        writes.append((target, lambda p: _write_parquet(frame, meta, p, index=not factored)))
    else:
        writes.append((target, lambda p: _write_npz(frame, meta, p, factored=factored)))
    _commit(writes)


def _write_parameters(solution: Any, target: Path, meta: dict[str, Any]) -> None:
    """A calibration's parameters: JSON (with the metadata) or CSV (parameter, value) + meta.json."""
    suffix = target.suffix.lower()
    if suffix not in (".json", ".csv"):
        raise fail("export", "export", "a .json or .csv path for a parameter solution (no matrix to write)", str(target))
    params = {k: v for k, v in solution.parameters.items()}
    transformed = solution.details.get("transformed")
    if isinstance(transformed, np.ndarray):  # d_X: the file must carry Q' so it can be re-certified on read
        params["transformed_query"] = transformed.tolist()
    if suffix == ".json":
        _commit([(target, lambda p: Path(p).write_text(json.dumps({**meta, "parameters": params})))])
        return
    frame = pd.DataFrame({"parameter": list(params), "value": [str(v) for v in params.values()]})
    _commit(
        [
            (target, lambda p: frame.to_csv(p, index=False)),
            (Path(f"{target}.meta.json"), lambda p: Path(p).write_text(json.dumps(meta, indent=2))),
        ]
    )


def _commit(writes: list[tuple[Path, Callable[[str], None]]]) -> None:
    """Write every file to a temporary name, then move them all into place (nothing half-written)."""
    temps = []
    try:
        for dest, write in writes:
            temps.append((_atomic_write(dest, write), dest))
    except BaseException:
        for temp, _ in temps:
            os.unlink(temp)
        raise
    for temp, dest in temps:
        os.replace(temp, dest)


def _write_parquet(frame: pd.DataFrame, meta: dict[str, Any], path: str, *, index: bool) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pa.Table.from_pandas(_string_columns(frame), preserve_index=index)
    table = table.replace_schema_metadata({**(table.schema.metadata or {}), b"dpopt": json.dumps(meta).encode()})
    pq.write_table(table, path)


def _string_columns(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame.copy()
    out.columns = [str(c) for c in frame.columns]
    return out


def _write_npz(frame: pd.DataFrame, meta: dict[str, Any], path: str, *, factored: bool) -> None:
    with open(path, "wb") as handle:
        if factored:
            arrays = {name: frame[name].to_numpy() for name in frame.columns}
            np.savez(handle, **arrays, metadata=np.array(json.dumps(meta)))
            return
        np.savez(
            handle,
            mechanism=frame.to_numpy(),
            index=np.asarray(frame.index),
            columns=np.asarray(frame.columns),
            metadata=np.array(json.dumps(meta)),
        )


def _read(path: Path) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Read a file once: its table and metadata.

    The table is the long remap (``from``, ``to``, ``probability``) when the metadata
    has a ``factored`` entry, else the labelled mechanism matrix.
    """
    suffix = path.suffix.lower()
    if suffix == ".csv":
        meta = json.loads(Path(f"{path}.meta.json").read_text())
        frame = pd.read_csv(path) if "factored" in meta else pd.read_csv(path, index_col=0)
    elif suffix == ".json":
        meta = json.loads(path.read_text())
        frame = pd.DataFrame(meta["remap"]) if "factored" in meta else _frame_from_dict(meta["mechanism"])
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[b"dpopt"])
        frame = table.to_pandas()
    else:
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["metadata"]))
            if "factored" in meta:
                frame = pd.DataFrame({name: data[name] for name in ("from", "to", "probability")})
            else:
                frame = pd.DataFrame(data["mechanism"], index=data["index"], columns=data["columns"])
    if "factored" in meta:
        return frame, meta
    from dpopt.solution import mechanism_frame

    columns = [int(c) if str(c).lstrip("-").isdigit() else c for c in frame.columns]
    return mechanism_frame(frame.to_numpy(dtype=float), list(frame.index), columns), meta


def read_solution(path: str | os.PathLike[str]) -> Any:
    """Read a file written by :func:`export_solution` back into a Solution.

    The certificate is measured again on the matrix read; a file whose mechanism
    fails it (corrupted or edited) is refused.
    """
    from dpopt.mechanisms.multilevel import sample_chain
    from dpopt.problem_files import problem_from_dict
    from dpopt.solution import Solution

    file = Path(path)
    if file.suffix.lower() not in EXPORT_FORMATS or not file.exists():
        raise fail("path", "read_solution", "an existing file ending in " + ", ".join(EXPORT_FORMATS), str(path))
    if file.suffix.lower() == ".json":
        meta = json.loads(file.read_text())
        if "parameters" in meta:
            return _read_parameters(meta, file)
    table, meta = _read(file)
    problem = problem_from_dict(meta["problem"], origin=file.name)
    if "factored" in meta:
        frame, factored = None, _factored_from_frame(table, meta)
        cert = factored.certificate(problem.epsilon)
    else:
        frame, factored = table, None
        cert = certify(frame.to_numpy(), problem.epsilon, method="measured on read")
    if not cert.ok:
        raise DPOptError(f"{file}: the mechanism read fails its privacy certificate ({cert.max_privacy_loss} > {cert.target}).")
    details: dict[str, Any] = {}
    for key, table in meta.get("tables", {}).items():
        details[key] = [_frame_from_dict(t) for t in table] if isinstance(table, list) else _frame_from_dict(table)
    sampler = None
    if "remaps" in details and frame is not None:
        first, remaps = frame.to_numpy(), [t.to_numpy() for t in details["remaps"]]
        sampler = lambda row, count, source: sample_chain(first, remaps, row, count, source)  # noqa: E731
    summary = meta["summary"]
    return Solution(
        problem=problem,
        method=summary["method"],
        exact=summary["exact"],
        solver=summary["solver"],
        status=summary["status"],
        seconds=summary["seconds"],
        objective=summary["objective"] if summary["objective"] is not None else float("inf"),
        certificate=cert,
        dense=frame,
        factored=factored,
        details=details,
        sampler=sampler,
    )


def _read_parameters(meta: dict[str, Any], file: Path) -> Any:
    """A parameter solution (calibration, d_X scales) read back and re-certified.

    A calibration is recomputed from its problem and must reproduce the exported
    scale; d_X scales are checked against every pair of the metric. Either failure
    refuses the file.
    """
    import dataclasses

    from dpopt.problem_files import problem_from_dict
    from dpopt.registry import solve

    problem = problem_from_dict(meta["problem"], origin=file.name)
    params = meta["parameters"]
    summary = meta["summary"]
    if problem.kind == "calibration":
        fresh = solve(problem, summary["method"])
        if not np.isclose(fresh.parameters["scale"], params["scale"], rtol=1e-9, atol=0.0):
            raise DPOptError(f"{file}: the scale read ({params['scale']}) is not the calibration of its problem ({fresh.parameters['scale']}).")
        return dataclasses.replace(fresh, seconds=summary["seconds"])
    from dpopt.methods.dx_linear_query import dx_solution

    transformed = np.asarray(params["transformed_query"], dtype=float)
    scales = np.asarray(params["scales"], dtype=float)
    solution = dx_solution(problem, transformed, scales, summary["method"], solver=summary["solver"])
    if not solution.certificate.ok:
        raise DPOptError(f"{file}: the scales read fail the d_X privacy check (worst ratio {solution.certificate.max_privacy_loss}).")
    return dataclasses.replace(solution, seconds=summary["seconds"], exact=summary["exact"], status=summary["status"])
