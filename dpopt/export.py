"""Writing solutions to CSV, JSON, Parquet and NPZ, and reading them back.

Every file carries the certificate: inside JSON and NPZ, in the Parquet schema
metadata, and beside a CSV as ``<path>.meta.json``. Files are written to a temporary
name in the target folder and renamed into place, so a failure leaves nothing
half-written. Reading re-measures the certificate on the matrix actually read and
refuses a file whose mechanism no longer passes it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from dpopt.lazy_modules import pandas as pd
from dpopt.validation import DPOptError, check_file_name, fail

__all__ = ["EXPORT_FORMATS", "ExportFileError", "StoredSolution", "check_export_path", "export_solution", "read_solution"]

EXPORT_FORMATS = (".csv", ".json", ".parquet", ".npz")
FORMAT_VERSION = 2


def check_export_path(path: str | os.PathLike[str]) -> Path:
    """Validate an export path before any work is done."""
    if not isinstance(path, (str, os.PathLike)) or not str(path):
        raise fail("export", "dpopt", "a path ending in " + ", ".join(EXPORT_FORMATS), path)
    target = Path(path)
    if target.suffix.lower() not in EXPORT_FORMATS:
        raise fail("export", "dpopt", "a path ending in " + ", ".join(EXPORT_FORMATS), str(path))
    check_file_name(target, "export", "dpopt", added=max(len(name) for name in _beside(target)) - len(target.name))
    if not target.parent.exists() or not target.parent.is_dir():
        raise fail("export", "dpopt", "a path in an existing folder", str(path))
    if target.is_dir():
        raise fail("export", "dpopt", "a file path (it is a folder)", str(path))
    _check_writable(target)
    return target


def _beside(target: Path) -> list[str]:
    """The names of the files an export to ``target`` writes beside it (mkstemp's 8 random
    characters as X): the probe, the temporary file, and a .csv export's metadata file and its
    temporary file."""
    names = [f".{target.name}.XXXXXXXX.probe", f".{target.name}.XXXXXXXX{target.suffix}"]
    if target.suffix.lower() == ".csv":
        names += [f"{target.name}.meta.json", f".{target.name}.meta.json.XXXXXXXX.json"]
    return names


def _check_writable(target: Path) -> None:
    """Refuse a folder where no file can be made (read-only, no permission) before the solve,
    not after it: until 2026-11-29 that was found only when the export was written, minutes
    later on a large problem. A full disk can still end the write itself (refused then too)."""
    try:
        handle, probe = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".probe")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise fail("export", "dpopt", f"a path in a folder where dpopt can write (writing failed: {exc.strerror or exc})", str(target)) from None
    if target.exists() and not os.access(target, os.W_OK):
        raise fail("export", "dpopt", "a path dpopt may replace (the file there is read-only)", str(target))


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
        os.chmod(temp, _new_file_mode(target))
    except BaseException:
        Path(temp).unlink(missing_ok=True)  # a writer may remove its own partial file (pyarrow on a full disk)
        raise
    return temp


def _new_file_mode(target: Path) -> int:
    """The permissions an ordinary ``open(target, "w")`` would leave: the file's own if it
    exists, else 0o666 less the umask. (``mkstemp`` makes 0o600, so until 2026-11-28 every
    export, meant to be published, was readable by its owner only.)"""
    try:
        return stat.S_IMODE(os.stat(target).st_mode)
    except OSError:
        return 0o666 & ~_umask()


def _umask() -> int:
    """The process's umask, read without changing it where Linux shows it (``os.umask`` sets
    it to read it, and commands run their work in a thread)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


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
    try:
        _export(solution, target, dense=dense)
    except OSError as exc:  # an unwritable folder, /proc, a full disk: nothing was left behind
        # the cause goes in the expectation: a long path is cut short in the 'Got' part
        raise fail("export", "export", f"a path in a folder where dpopt can write the file(s) (writing failed: {exc.strerror or exc})", path) from None


def _export(solution: Any, target: Path, *, dense: bool) -> None:
    if not solution.certificate.ok:
        raise fail("certificate", "export", "a passing privacy certificate (ok = true)", solution.certificate.to_dict())
    _check_description_memory(solution.problem)
    meta = _metadata(solution)
    if solution.parameters is not None:
        _write_parameters(solution, target, meta)
        return
    factored = solution.factored is not None and not dense
    if factored:
        meta["factored"] = {"n": solution.factored.n, "alpha": solution.factored.alpha}
        frame = _remap_frame(solution.factored)
    else:
        if solution.factored is not None:
            from dpopt.limits import check_memory

            size = solution.factored.n + 1
            check_memory(8.0 * 4 * size**2, "dense", "export", True, what=f"the dense {size} x {size} matrix")
        frame = solution.mechanism
        if solution.factored is not None:
            _check_dense_certifies(solution, frame)
    meta["digest"] = content_digest(meta, frame)
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


#: Memory per matrix entry of a problem's description in an export: a Python float in a list,
#: its JSON text and the writers' copies (measured: 2.2 GB for a 4,000-dataset metric universe).
DESCRIPTION_BYTES_PER_ENTRY = 120.0


def _check_description_memory(problem: Any) -> None:
    """Refuse before writing an export whose problem description holds a matrix too large to
    write: a finite universe given by its metric, or a d_X metric, is written out whole (m x m
    numbers). Until 2026-11-29 the largest universes ran out of memory while writing."""
    from dpopt.limits import check_memory

    universe = getattr(problem, "universe", None)
    if universe is not None and "metric" in universe.spec:
        size, what = universe.size, "dataset metric"
    elif getattr(problem, "metric", None) is not None and hasattr(problem.metric, "size"):
        size, what = problem.metric.size, "d_X metric"
    else:
        return
    check_memory(DESCRIPTION_BYTES_PER_ENTRY * size * size, "export", "export", f"{size:,} x {size:,}",
                 what=f"the problem's {size:,} x {size:,} {what}, which the export writes out")


def _check_dense_certifies(solution: Any, frame: pd.DataFrame) -> None:
    """Refuse the dense form of G T when its float64 entries fail the certificate that G T passes in
    log space (beyond n epsilon = 708 they underflow to zeros beside non-zeros): a reader re-measures
    the matrix written, and it would refuse it."""
    from dpopt.certificates import certify

    dense = certify(frame.to_numpy(), solution.certificate.target)
    if not dense.ok:
        raise fail("dense", "export", "omitted for this mechanism: its dense float64 matrix fails the privacy certificate "
                   f"(measured loss {dense.max_privacy_loss:.6g} > {dense.target:.6g}: entries underflow) although G T passes it "
                   "in log space; export the factored form", True)


def _write_parameters(solution: Any, target: Path, meta: dict[str, Any]) -> None:
    """A parameter solution (calibration, d_X scales): JSON only, with the metadata and digest."""
    if target.suffix.lower() != ".json":
        raise fail("export", "export", "a .json path for a parameter solution (no matrix to write; .json reads back)", str(target))
    params = {k: v for k, v in solution.parameters.items()}
    transformed = solution.details.get("transformed")
    if isinstance(transformed, np.ndarray):  # d_X: the file must carry Q' so it can be re-certified on read
        params["transformed_query"] = transformed.tolist()
    meta["parameters"] = params
    meta["digest"] = content_digest(meta, None)
    _commit([(target, lambda p: Path(p).write_text(json.dumps(meta)))])


def _commit(writes: list[tuple[Path, Callable[[str], None]]]) -> None:
    """Write every file to a temporary name, then move them all into place: all or nothing.

    A destination that cannot be replaced (a folder of that name, no write permission)
    is found before anything is moved; if a move still fails, the files already moved
    are removed again, so a several-file export never lands half.
    """
    temps: list[tuple[str, Path]] = []
    try:
        for dest, write in writes:
            temps.append((_atomic_write(dest, write), dest))
        for _, dest in temps:
            if dest.is_dir() or not os.access(dest.parent, os.W_OK) or (dest.exists() and not os.access(dest, os.W_OK)):
                raise OSError(f"cannot replace {dest}")
    except BaseException:
        for temp, _ in temps:
            Path(temp).unlink(missing_ok=True)
        raise
    moved: list[Path] = []
    try:
        for temp, dest in temps:
            os.replace(temp, dest)
            moved.append(dest)
    except BaseException:
        for dest in moved:
            dest.unlink(missing_ok=True)
        for temp, _ in temps[len(moved):]:
            Path(temp).unlink(missing_ok=True)
        raise


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
    # the metadata as UTF-8 bytes: a numpy string array stores 4 bytes a character, which made
    # a 1500-dataset metric universe's export 175 MB where its JSON is 44 MB
    metadata = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as handle:
        if factored:
            arrays = {name: frame[name].to_numpy() for name in frame.columns}
            np.savez(handle, **arrays, metadata=metadata)
            return
        np.savez(
            handle,
            mechanism=frame.to_numpy(),
            index=np.asarray(frame.index),
            columns=np.asarray(frame.columns),
            metadata=metadata,
        )


def _npz_metadata(stored: np.ndarray) -> Any:
    """The JSON an ``.npz`` export's ``metadata`` array holds: UTF-8 bytes, or (written before
    2026-11-29) a numpy string."""
    text = stored.tobytes().decode("utf-8") if stored.dtype == np.uint8 and stored.ndim == 1 else str(stored)
    return json.loads(text)


class ExportFileError(DPOptError, ValueError):
    """A file given to :func:`read_solution` is corrupt, modified, or not what it claims."""

    def __init__(self, path: Any, problem: str) -> None:
        super().__init__(f"{path}: {problem}")


@dataclass(frozen=True)
class StoredSolution:
    """What a file holds, before anything in it is trusted.

    ``table`` is the labelled mechanism matrix, or the long remap (``from``, ``to``,
    ``probability``) when ``meta`` has a ``factored`` entry, or None for parameters.
    """

    path: Path
    meta: dict[str, Any]
    table: pd.DataFrame | None

    @property
    def summary(self) -> dict[str, Any]:
        return self.meta["summary"]

    def fail(self, problem: str) -> ExportFileError:
        return ExportFileError(self.path, problem)


def _label(value: Any) -> Any:
    """A column label read back from text: the int or float it spells (CSV headers are text), else itself."""
    if not isinstance(value, str):
        return value.item() if isinstance(value, np.generic) else value
    for parse in (int, float):
        try:
            return parse(value)
        except ValueError:
            continue
    return value


def _plain(values: Any) -> list[Any]:
    return [v.item() if isinstance(v, np.generic) else v for v in values]


def content_digest(meta: dict[str, Any], table: pd.DataFrame | None) -> str:
    """SHA-256 over a file's canonical content: its metadata (but the digest) and its table.

    The same for every format (floats are hashed as float64 bytes, labels as JSON), so a
    file's digest can be recomputed from what is read and compared with the stored one.
    """
    body = {k: v for k, v in meta.items() if k != "digest"}
    h = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode())
    if table is not None:
        h.update(json.dumps([_plain(table.index), _plain(table.columns)], default=str).encode())
        for name in table.columns:
            column = table[name].to_numpy()
            h.update(np.ascontiguousarray(column, dtype=np.int64 if column.dtype.kind in "iu" else float).tobytes())
    return h.hexdigest()


def _read(path: Path) -> StoredSolution:
    """Parse a file once (any parser failure is the caller's to turn into one error)."""
    suffix = path.suffix.lower()
    table: pd.DataFrame | None
    if suffix == ".csv":
        companion = Path(f"{path}.meta.json")
        if not companion.exists():  # named, not a bare FileNotFoundError
            raise ExportFileError(path, f"its metadata file {companion.name} is missing (a .csv export is the two files together)")
        meta = json.loads(_bounded(companion).read_text())
        if "parameters" in meta:
            raise ExportFileError(path, "parameter solutions are exported as .json only")
        # cells as text, converted by numpy's correctly rounded parser: every float64
        # written by to_csv (shortest repr) reads back bit for bit, on any pandas
        text = pd.read_csv(path, dtype=str, keep_default_na=False)
        if "factored" in meta:
            table = pd.DataFrame({name: text[name].to_numpy(dtype=float if name == "probability" else np.int64) for name in ("from", "to", "probability")})
        else:
            values = text.iloc[:, 1:].to_numpy(dtype=float)
            table = pd.DataFrame(values, index=text.iloc[:, 0].to_numpy(dtype=np.int64), columns=list(text.columns[1:]))
    elif suffix == ".json":
        meta = json.loads(path.read_text())
        if "parameters" in meta:
            table = None
        elif "factored" in meta:
            table = pd.DataFrame(meta.pop("remap"))
        else:
            table = _frame_from_dict(meta.pop("mechanism"))
    elif suffix == ".parquet":
        import pyarrow.parquet as pq

        footer = pq.ParquetFile(path).metadata
        _check_expanded(path, 8 * footer.num_rows * footer.num_columns)
        arrow = pq.read_table(path)
        meta = json.loads(arrow.schema.metadata[b"dpopt"])
        table = arrow.to_pandas()
    else:
        _check_expanded(path, _npz_declared_bytes(path))
        with open(path, "rb") as handle, np.load(handle, allow_pickle=False) as data:
            meta = _npz_metadata(data["metadata"])
            if "factored" in meta:
                table = pd.DataFrame({name: data[name] for name in ("from", "to", "probability")})
            else:
                table = pd.DataFrame(data["mechanism"], index=data["index"], columns=data["columns"])
    if not isinstance(meta, dict) or meta.get("format") != "dpopt-solution":
        raise ExportFileError(path, "not a dpopt export (no 'format': 'dpopt-solution' metadata)")
    _check_structure(path, meta, table)
    if table is not None and "factored" not in meta:
        from dpopt.solution import mechanism_frame

        columns = [_label(c) for c in table.columns]
        table = mechanism_frame(table.to_numpy(dtype=float), _plain(table.index), columns)
    return StoredSolution(path=path, meta=meta, table=table)


#: Top-level metadata entries and the JSON type each must have.
_STRUCTURE = {"problem": dict, "summary": dict, "certificate": dict, "tables": dict, "factored": dict, "parameters": dict, "digest": str}


def _check_structure(path: Path, meta: dict[str, Any], table: pd.DataFrame | None) -> None:
    """Refuse metadata of the wrong shape, and a table that is not all numbers, before anything reads them."""
    for key, kind in _STRUCTURE.items():
        if key in meta and not isinstance(meta[key], kind):
            raise ExportFileError(path, f"its metadata entry {key!r} is not a {kind.__name__}")
    for key in ("problem", "summary"):
        if key not in meta:
            raise ExportFileError(path, f"its metadata has no {key!r}")
    if table is not None:
        for name in table.columns:
            if table[name].dtype.kind not in "iuf":
                raise ExportFileError(path, f"its table column {name!r} is not all numbers")


#: Exports larger than this are refused unread (a dense n = 10,000 matrix is ~1.6 GB as CSV).
MAX_EXPORT_BYTES = 4 << 30


def _check_expanded(path: Path, size: int) -> None:
    """Refuse a compressed export whose arrays would expand beyond :data:`MAX_EXPORT_BYTES`, from
    their declared sizes and before any is read (a few MB of zeros can declare a 30,000 x
    30,000 matrix: 7 GB allocated before its shape was checked against the problem)."""
    if size > MAX_EXPORT_BYTES:
        raise ExportFileError(path, f"its arrays would take {size:,} bytes, more than the {MAX_EXPORT_BYTES:,} an export may have")


def _npz_declared_bytes(path: Path) -> int:
    """The bytes the arrays of an ``.npz`` declare in their headers (read without the data)."""
    import zipfile

    total = 0
    with zipfile.ZipFile(path) as archive:
        for member in archive.infolist():
            with archive.open(member) as handle:
                version = np.lib.format.read_magic(handle)
                read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
                shape, _, dtype = read(handle)
                total += int(np.prod(shape, dtype=object)) * dtype.itemsize
    return total


def _bounded(path: Path) -> Path:
    info = path.stat()
    if not stat.S_ISREG(info.st_mode):
        raise ExportFileError(path, "not a regular file")
    if info.st_size > MAX_EXPORT_BYTES:
        raise ExportFileError(path, f"{info.st_size:,} bytes, more than the {MAX_EXPORT_BYTES:,} an export may have")
    return path


def read_solution(path: str | os.PathLike[str], *, recertify: bool = False) -> Any:
    """Read a file written by :func:`export_solution` back into a certified Solution.

    Nothing stored is trusted. The file must parse as a dpopt export (any parser
    failure, truncation or missing part raises one :class:`ExportFileError` naming the
    file); its content must match the digest written at export (an edited file is
    refused unless ``recertify=True``); and the Solution is rebuilt by its problem
    kind's reader, which checks shapes against the problem, re-measures the
    certificate, recomputes the objective and every derived figure, and re-checks
    chains and remaps. A mechanism that fails its certificate is refused either way.

    Parameters
    ----------
    path : str or path
        A ``.csv`` (with ``<path>.meta.json``), ``.json``, ``.parquet`` or ``.npz`` export.
    recertify : bool
        Accept a file whose digest does not match (edited by hand, or by another tool)
        if everything re-verified on it passes. Such a solution is private but never
        ``exact``, and its status is ``"recertified"``: nothing read proves it optimal.
    """
    from dpopt.problem_files import problem_from_dict
    from dpopt.registry import REGISTRY, reader_for

    file = Path(path) if isinstance(path, (str, os.PathLike)) else None
    if file is None or not str(path) or file.suffix.lower() not in EXPORT_FORMATS or not file.exists():
        raise fail("path", "read_solution", "an existing file ending in " + ", ".join(EXPORT_FORMATS), str(path))
    try:
        stored = _read(_bounded(file))
        digest = content_digest(stored.meta, stored.table)
    except DPOptError:
        raise
    except Exception as exc:  # any parser's failure on a corrupt or truncated file
        raise ExportFileError(file, f"not a readable dpopt export ({type(exc).__name__}); it may be truncated or corrupt") from None
    summary = stored.summary
    edited = stored.meta.get("digest") != digest
    if not recertify and edited:
        raise stored.fail("its content does not match the digest written at export (the file was modified); "
                          "read_solution(..., recertify=True) re-verifies it instead")
    problem = problem_from_dict(stored.meta["problem"], origin=str(file))
    try:
        solution = reader_for(problem.kind)(problem, stored)
    except DPOptError as exc:
        if isinstance(exc, ExportFileError):
            raise
        raise stored.fail(f"its content is not a valid {problem.kind} solution ({exc})") from None
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as exc:  # content of the wrong structure
        raise stored.fail(f"its content is not a valid {problem.kind} solution ({type(exc).__name__}: {exc})") from None
    if not solution.certificate.ok:
        raise stored.fail(
            f"the mechanism read fails its privacy certificate ({solution.certificate.max_privacy_loss} > {solution.certificate.target})"
        )
    seconds = summary.get("seconds")
    # optimal only if the reader, the file and the registered method all say so: a file never
    # makes a closed form exact, nor an edited "exact" flag an upper bound optimal. An edited
    # file is never optimal: re-certifying proves it private, but its matrix may be any private
    # one (the uniform mechanism read back as "exact" before 2026-11-29), and proving it optimal
    # would take the program again
    method = REGISTRY.get(problem.kind, {}).get(solution.method)
    exact = bool(not edited and solution.exact and summary.get("exact") is True and method is not None and method.is_exact(problem))
    status = "recertified" if edited else solution.status
    return dataclasses.replace(solution, exact=exact, status=status,
                               seconds=float(seconds) if isinstance(seconds, (int, float)) else float("nan"))


def stored_fields(stored: StoredSolution) -> dict[str, Any]:
    """The fields a reader takes from a file as informational: method, solver, status.

    (``seconds`` is set by :func:`read_solution` for every kind.)"""
    summary = stored.summary
    fields = {key: summary[key] for key in ("method", "solver", "status")}
    if not all(isinstance(v, str) for v in fields.values()):
        raise stored.fail("its summary's method, solver and status are not strings")
    return fields


def check_labels(stored: StoredSolution, rows: list[Any], columns: list[Any]) -> np.ndarray:
    """The stored matrix, refused unless its labels are exactly ``rows`` and ``columns``."""
    frame = stored.table
    if frame is None or list(frame.index) != list(rows) or list(frame.columns) != list(columns):
        shape = None if frame is None else frame.shape
        raise stored.fail(f"its matrix does not have the problem's shape ({len(rows)} x {len(columns)}; read {shape})")
    return frame.to_numpy(dtype=float)
