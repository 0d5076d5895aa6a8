"""Sweeps: many problems from one file, solved in-process or in worker processes, resumable, one tidy table.

The file format, and how a file becomes cells: :mod:`dpopt.sweep_files`.

Each (cell, method) becomes one row of a tidy table: the cell's varied fields,
``method``, ``solver``, ``status``, ``objective``, ``lower_bound`` / ``upper_bound`` when the
method reports them, the certificate's ``certificate_ok``, ``max_privacy_loss`` and
``target``, ``seconds``, and ``error`` (a failing cell is a row with its error, never the end
of the sweep). Rows are keyed by a hash of the cell's problem and the method.

With ``output``, rows are written to Parquet as they arrive, in part files under
``<output>.parts/`` (one per batch), and gathered into ``output`` at the end; a rerun skips
every key already in ``output`` or its parts, so an interrupted sweep resumes where it
stopped and ends with the table an uninterrupted run gives. While a sweep writes ``output`` it
holds ``<output>.lock`` (:func:`_sole_writer`), and a second sweep on the same output is refused.

Work is sent as problem descriptions (dicts), never as solver state: ``workers > 1`` runs
cells in local processes (:mod:`concurrent.futures`); ``timeout`` runs each cell in a fresh
process of its own, stopped when its time is up (a row with status ``timeout``), which also
lets ``memory`` measure the process's whole resident growth (solvers' C++ memory included); and ``scheduler`` (an address, or a
``dask.distributed.Client``) sends them to a Dask cluster when Dask is installed
(``pip install "dask[distributed]"``; not a dependency of dpopt).
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import os
import time
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import CancelledError, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from multiprocessing.connection import wait
from pathlib import Path
from typing import Any

try:
    import fcntl
except ImportError:  # Windows: sweeps then take no lock on their output
    fcntl = None  # type: ignore[assignment]

import numpy as np

from dpopt.lazy_modules import pandas as pd
from dpopt.limits import MAX_TIMEOUT
from dpopt.process_lifetime import die_with_parent, end_with
from dpopt.problem_files import problem_from_dict
from dpopt.sweep_files import MAX_CELLS, OWNER, RESULT_COLUMNS, Cell, Sweep, load_sweep, sweep_from_dict
from dpopt.validation import InvalidParameterError, check_file_name, check_int, check_real, fail

__all__ = ["MAX_CELLS", "Cell", "Sweep", "load_sweep", "run_sweep", "solve_cell", "isolation_context", "sweep", "sweep_from_dict"]

#: Rows per Parquet part file (and per progress update in worker mode) ...
BATCH = 64
#: ... or fewer when this many seconds have passed: slow cells are not lost to an interruption.
FLUSH_SECONDS = 10.0


# -- solving one cell (runs in the driver, a worker process or a Dask worker) -------------------

def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _input_losses(solution: Any) -> list[float]:
    """Expected loss of the certified mechanism on each input (row): sum_r P(r | x) L(x, r)."""
    from dpopt.metrics import expected_loss

    table = getattr(solution.problem, "loss_matrix", None)
    if table is None:
        raise fail("record", OWNER, "a quantity the problem has (input_losses needs a problem with a loss table)", "input_losses")
    return expected_loss(solution.mechanism, table).tolist()


#: Recordable quantities computed from a solution rather than stored in it.
DERIVED = {"input_losses": _input_losses}


def _recorded(solution: Any, name: str) -> Any:
    """A recorded column's value: a number, a list of numbers (e.g. :data:`DERIVED`), or None."""
    if name in DERIVED:
        try:
            return DERIVED[name](solution)
        except InvalidParameterError:
            return None
    value = (solution.parameters or {}).get(name, solution.details.get(name))
    if isinstance(value, (list, tuple, np.ndarray)):
        numbers = np.asarray(value, dtype=object).ravel()
        return [_number(v) for v in numbers]
    return _number(value)


def solve_cell(problem: dict[str, Any], method: str, key: str, memory: bool = False, record: tuple[str, ...] = ()) -> dict[str, Any]:
    """Solve one cell from its description; any failure becomes the row's ``error``.

    With ``memory``, ``peak_mib`` is tracemalloc's peak during the solve (Python and numpy
    allocations; a solver's own C++ memory is not seen) -- it slows the solve, so it is opt-in.
    """
    import tracemalloc

    from dpopt.registry import solve

    row: dict[str, Any] = {"key": key, "method": method}
    if memory:
        tracemalloc.start()
    start = time.perf_counter()
    try:
        solution = solve(problem_from_dict(problem, origin="sweep cell"), method)
    except Exception as exc:  # a failing cell never stops the sweep: it is recorded
        row.update(error=f"{type(exc).__name__}: {' '.join(str(exc).split())}", seconds=time.perf_counter() - start)
        return row
    finally:
        if memory:
            row["peak_mib"] = tracemalloc.get_traced_memory()[1] / 2**20
            tracemalloc.stop()
    details = solution.details
    row.update(
        method=solution.method, solver=solution.solver, status=solution.status, exact=bool(solution.exact),
        objective=_number(solution.objective),
        lower_bound=_number(details.get("lower_bound")), upper_bound=_number(details.get("upper_bound")),
        certificate_ok=bool(solution.certificate.ok), max_privacy_loss=_number(solution.certificate.max_privacy_loss),
        target=_number(solution.certificate.target), seconds=time.perf_counter() - start, error="",
    )
    for name in record:
        row[name] = _recorded(solution, name)
    return row


def _solve_batch(batch: list[tuple[dict[str, Any], str, str]], memory: bool = False, record: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """Solve a batch of cell descriptions (``memory`` and ``record`` are passed only when asked for)."""
    extra = (memory, tuple(record)) if memory or record else ()
    return [solve_cell(problem, method, key, *extra) for problem, method, key in batch]


# -- running a sweep ----------------------------------------------------------------------

def _parts_dir(output: Path) -> Path:
    return output.with_name(output.name + ".parts")


def _done_keys(output: Path | None) -> set[str]:
    """The keys already in ``output`` (checked by :func:`_earlier_keys`) and its part files."""
    if output is None:
        return set()
    keys = _earlier_keys(output)
    for part in sorted(_parts_dir(output).glob("part-*.parquet")):
        try:
            keys.update(pd.read_parquet(part, columns=["key"])["key"].tolist())
        except Exception:  # parts are written whole (renamed into place); one damaged on disk is solved again
            part.unlink(missing_ok=True)
    return keys


def _earlier_keys(output: Path) -> set[str]:
    """The keys of an earlier run's table at ``output``; refused if something else is there.

    Until 2026-11-28 a file that did not read as a sweep table (another Parquet table, any
    other bytes) was deleted as if it were a damaged part, and a folder in its place ended in
    an internal error. Whatever is not a sweep table is now left alone and refused.
    """
    parts = _parts_dir(output)
    if parts.exists() and not parts.is_dir():
        raise fail("output", OWNER, f"a path whose {parts.name} is free for the sweep's part files (it is a file)", str(output))
    if not output.exists():
        return set()
    if not output.is_file():
        raise fail("output", OWNER, "a new path or an earlier sweep's table (it is not a regular file)", str(output))
    try:
        keys = pd.read_parquet(output, columns=["key"])["key"]
    except Exception as error:  # pyarrow's errors for bytes that are not Parquet, or a table without 'key'
        raise fail("output", OWNER, "a new path or an earlier sweep's table, which a rerun resumes (this file is "
                   f"not one and is left as it is: {type(error).__name__})", str(output)) from None
    return set(keys.astype(str).tolist())


def _frame(rows: list[dict[str, Any]], cells: dict[str, Cell], varied: tuple[str, ...], record: tuple[str, ...] = ()) -> pd.DataFrame:
    records = []
    for row in rows:
        cell = cells[row["key"]]
        entry = {name: _plain(cell.parameters.get(name)) for name in varied}
        entry.update({column: row.get(column) for column in (*RESULT_COLUMNS, *record)})
        # the method asked for; "ran" is the one that gave the row (auto's choice), empty for a failed cell
        entry["method"], entry["ran"] = cell.method, (row.get("method") or "") if not row.get("error") else ""
        records.append(entry)
    frame = pd.DataFrame.from_records(records, columns=[*varied, *RESULT_COLUMNS, *record])
    for column in record:  # numbers as floats; lists (vector quantities) stay lists
        if not frame[column].map(lambda v: isinstance(v, list)).any():
            frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    for column in ("objective", "lower_bound", "upper_bound", "max_privacy_loss", "target", "seconds", "peak_mib"):
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype(float)
    for column in ("exact", "certificate_ok"):  # None for a failed cell
        frame[column] = frame[column].astype("boolean")
    for column in ("ran", "solver", "status", "error"):
        frame[column] = frame[column].fillna("").astype(str)
    for column in varied:  # a grid of lists or mixed types is stored as text
        if frame[column].map(lambda v: isinstance(v, (list, dict))).any():
            frame[column] = frame[column].map(json.dumps)
    return frame


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _write_whole(frame: pd.DataFrame, path: Path, output: Path) -> None:
    """Write ``frame`` to ``path`` through a temporary name, so that the file is whole or absent.
    A failed write (a full disk) is refused naming ``output``, its temporary file removed; until
    2026-11-29 it ended in an internal error and left the temporary file behind."""
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        frame.to_parquet(temporary, index=False)
        temporary.replace(path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise fail("output", OWNER, f"a path where dpopt can write the sweep's table (writing failed: {error.strerror or error}; "
                   "the rows written before are kept, and a rerun resumes)", str(output)) from None


class _Writer:
    """Parquet part files, one per batch of rows or per FLUSH_SECONDS, written as rows arrive."""

    def __init__(self, output: Path | None, cells: dict[str, Cell], varied: tuple[str, ...], record: tuple[str, ...] = ()) -> None:
        self.output, self.cells, self.varied, self.record = output, cells, varied, record
        self.last_flush = time.monotonic()
        self.pending: list[dict[str, Any]] = []
        self.rows: list[dict[str, Any]] = []
        if output is not None:
            _parts_dir(output).mkdir(parents=True, exist_ok=True)

    def add(self, rows: Iterable[dict[str, Any]]) -> None:
        rows = list(rows)
        self.rows.extend(rows)
        self.pending.extend(rows)
        if len(self.pending) >= BATCH or time.monotonic() - self.last_flush >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        self.last_flush = time.monotonic()
        if self.output is None or not self.pending:
            self.pending = []
            return
        parts = _parts_dir(self.output)
        name = f"part-{time.time_ns()}.parquet"
        _write_whole(_frame(self.pending, self.cells, self.varied, self.record), parts / name, self.output)
        self.pending = []

    def gather(self) -> pd.DataFrame:
        """Every row of this sweep (earlier runs' included), in the sweep's cell order."""
        self.flush()
        order = {key: i for i, key in enumerate(self.cells)}
        if self.output is None:
            frame = _frame(self.rows, self.cells, self.varied, self.record)
        else:
            files = ([self.output] if self.output.exists() else []) + sorted(_parts_dir(self.output).glob("part-*.parquet"))
            frame = pd.concat([pd.read_parquet(f) for f in files], ignore_index=True) if files else _frame([], self.cells, self.varied, self.record)
            frame = frame[frame["key"].isin(order)].drop_duplicates("key", keep="last")
        frame = frame.sort_values("key", key=lambda k: k.map(order)).reset_index(drop=True)
        if self.output is not None:
            _write_whole(frame, self.output, self.output)
            for part in _parts_dir(self.output).glob("part-*.parquet"):
                part.unlink()
            _parts_dir(self.output).rmdir()
        return frame


def run_sweep(
    sweep: Sweep,
    *,
    output: str | Path | None = None,
    workers: int = 1,
    scheduler: Any = None,
    progress: bool | None = True,
    memory: bool = False,
    timeout: float | None = None,
) -> pd.DataFrame:
    """Solve every cell not already in ``output``; return the whole table (see the module docstring).

    Parameters
    ----------
    sweep : Sweep
        From :func:`load_sweep` or :func:`sweep_from_dict`.
    output : path, optional
        Parquet file written incrementally (and read back to resume).
    workers : int
        Local worker processes (1: in this process).
    scheduler : str or dask.distributed.Client, optional
        Run on a Dask cluster instead.
    progress : bool or None
        A tqdm bar with completed / failed counts and an ETA (on stderr); None: only where
        stderr is a terminal (the command line's default, so a log file or a pipe gets no
        carriage-return updates).
    memory : bool
        Measure each cell's peak memory (``peak_mib``). In-process and in pooled workers it is
        tracemalloc's peak (Python and numpy allocations; slower); with ``timeout`` it is the
        growth of the cell's own process's resident memory, solvers' C++ allocations included.
        Otherwise the column is empty.
    timeout : float, optional
        Seconds a cell may take. Each cell then runs alone in a fresh process (``workers`` at
        a time) that is stopped when the time is up: the row's ``status`` is ``timeout`` and the
        sweep goes on. Costs a process start per cell (about 10-50 ms with ``forkserver``).
    """
    workers = check_int(workers, "workers", OWNER, low=1, high=256)
    if timeout is not None:
        timeout = check_real(timeout, "timeout", OWNER, low=0.0, low_open=True, high=MAX_TIMEOUT)
        if scheduler is not None:
            raise fail("timeout", OWNER, "absent with a Dask scheduler (Dask does not stop a running task)", timeout)
    target = Path(output) if output is not None else None
    if target is not None:
        check_file_name(target, "output", OWNER, added=len(".parts"))  # and ".lock", and ".<name>.tmp"
        if target.suffix != ".parquet" or not target.parent.is_dir():
            raise fail("output", OWNER, "a path ending in .parquet in an existing folder", str(target))
    with _sole_writer(target):
        cells = {cell.key: cell for cell in sweep.cells}
        done = _done_keys(target)
        todo = [cell for cell in sweep.cells if cell.key not in done]
        writer = _Writer(target, cells, sweep.varied, sweep.record)
        bar = _progress_bar(len(sweep.cells), len(sweep.cells) - len(todo), progress)
        try:
            for rows in _execute(todo, workers, scheduler, memory, sweep.record, timeout):
                writer.add(rows)
                bar.update(len(rows))
                failed = sum(1 for r in writer.rows if r.get("error"))
                bar.set_postfix(failed=failed, remaining=len(todo) - len(writer.rows))
        finally:
            bar.close()
            writer.flush()
        return writer.gather()


@contextlib.contextmanager
def _sole_writer(output: Path | None) -> Iterator[None]:
    """Hold ``<output>.lock`` while a sweep writes ``output``; refuse if another sweep holds it.

    Two sweeps writing one output used to race: the first one's :meth:`_Writer.gather` removed
    the parts folder under the second, which ended in an internal error. The lock is an
    ``flock`` on the file, so the kernel releases it when its process ends, however it ends (a
    killed sweep leaves no stale lock, and a rerun resumes). Where ``fcntl`` is missing
    (Windows) no lock is taken.
    """
    if output is None or fcntl is None:
        yield
        return
    path = output.with_name(output.name + ".lock")
    while True:
        try:
            handle = open(path, "a+")
        except OSError as error:
            raise fail("output", OWNER, f"in a folder this user can write ({path.name}: {error.strerror})", str(output)) from None
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.close()
            raise fail("output", OWNER, f"an output no other sweep is writing (one holds {path.name}; "
                       "wait for it to finish, or pick another output)", str(output)) from None
        try:  # the holder before us may have removed the file after we opened it: lock the file now there
            if os.stat(path).st_ino == os.fstat(handle.fileno()).st_ino:
                break
        except FileNotFoundError:
            pass
        handle.close()
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # before unlocking, so a waiting opener sees a new file
        handle.close()


def _progress_bar(total: int, initial: int, enabled: bool | None) -> Any:
    from tqdm import tqdm  # not tqdm.auto: in a notebook it warns when ipywidgets is absent

    disable = None if enabled is None else not enabled  # tqdm's None: on a terminal only
    return tqdm(total=total, initial=initial, disable=disable, desc="sweep", unit="cell")


def _batches(cells: list[Cell], size: int) -> Iterator[list[tuple[dict[str, Any], str, str]]]:
    for start in range(0, len(cells), size):
        yield _described(cells[start:start + size])


def _described(cells: list[Cell]) -> list[tuple[dict[str, Any], str, str]]:
    """Cells as the descriptions a worker solves (:func:`_solve_batch`)."""
    return [(c.problem, c.method, c.key) for c in cells]


def _execute(cells: list[Cell], workers: int, scheduler: Any, memory: bool, record: tuple[str, ...],
             timeout: float | None = None) -> Iterator[list[dict[str, Any]]]:
    if timeout is not None:
        yield from _execute_isolated(cells, workers, timeout, memory, record)
    elif scheduler is not None:
        yield from _execute_dask(cells, scheduler, memory, record)
    elif workers == 1:
        for batch in _batches(cells, 1):
            yield _solve_batch(batch, memory, record)
    else:
        yield from _execute_pool(cells, workers, memory, record)


def _execute_pool(cells: list[Cell], workers: int, memory: bool, record: tuple[str, ...]) -> Iterator[list[dict[str, Any]]]:
    """The cells in batches on a pool of ``workers`` processes.

    A worker killed while it solves (out of memory, a signal) breaks the whole pool, and which
    batch killed it is not known: the cells not yet returned are then run each in a process of
    its own (:func:`_execute_isolated`), where a cell that kills its process again is a row with
    that error. Until 2026-11-29 the sweep ended there, "internal error", and a rerun met the
    same cell and ended again.
    """
    size = max(1, min(BATCH // 4, math.ceil(len(cells) / (4 * workers))))
    chunks = [cells[start:start + size] for start in range(0, len(cells), size)]
    broken: list[int] = []  # chunks whose rows never came back
    with ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent) as pool:
        try:
            futures = {pool.submit(_solve_batch, _described(chunk), memory, record): index for index, chunk in enumerate(chunks)}
            for future in as_completed(futures):
                try:
                    rows = future.result()
                except BrokenProcessPool:
                    broken.append(futures[future])
                    continue
                yield rows
        except BaseException:  # Ctrl-C, or the caller stopped reading: the cells running are not waited for
            _stop_pool(pool)
            raise
    if broken:
        undelivered = [cell for index in sorted(broken) for cell in chunks[index]]
        yield from _execute_isolated(undelivered, workers, MAX_TIMEOUT, memory, record)


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Kill a process pool's workers and drop its queued cells (leaving the ``with`` then waits for nothing).

    Python 3.14 has ``kill_workers()`` for this; before it only the private ``_processes``
    reaches the workers (where that is absent too, only the queue is dropped).
    """
    if hasattr(pool, "kill_workers"):
        pool.kill_workers()
    else:
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


# -- one process per cell: timeouts and whole-process memory ---------------------------------

def _resident_bytes() -> tuple[int, int] | None:
    """(current, peak) resident memory of this process from /proc (Linux), or None elsewhere."""
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
    try:
        return int(fields["VmRSS"].split()[0]) * 1024, int(fields["VmHWM"].split()[0]) * 1024
    except (KeyError, ValueError):
        return None


def _reset_peak_resident() -> int | None:
    """Reset the kernel's high-water mark to the current resident size (Linux >= 4.0); return that size."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return None
    sizes = _resident_bytes()
    return sizes[0] if sizes else None


def _isolated_cell(problem: dict[str, Any], method: str, key: str, memory: bool, record: tuple[str, ...], connection: Any,
                   driver: int | None = None) -> None:
    """A cell's own process: solve, measure the resident-memory growth, send the row back."""
    if driver is not None:
        end_with(driver)
    baseline = _reset_peak_resident() if memory else None
    row = solve_cell(problem, method, key, memory and baseline is None, record)  # tracemalloc only without /proc
    if baseline is not None:
        sizes = _resident_bytes()
        row["peak_mib"] = max(0, sizes[1] - baseline) / 2**20 if sizes else None
    connection.send(row)
    connection.close()


def isolation_context() -> Any:
    """forkserver (children forked from a server that has imported dpopt: fast, no inherited threads), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        # the solvers too, so a cell's memory is its own work, not first-call imports (missing ones are skipped);
        # pandas too: solutions carry their row losses as a Series, and where the driver's main module
        # has not imported it (the server preloads that too), its first import was counted in every
        # cell's seconds (a count query at n = 1000, alpha = 0.1: 0.53-0.59 s against 0.04-0.06 s)
        context.set_forkserver_preload(["dpopt.sweeps", "dpopt.registry", "dpopt.methods", "dpopt.solvers", "cvxpy", "highspy",
                                        "scipy.optimize", "pandas"])
        return context
    return multiprocessing.get_context("spawn")


def _execute_isolated(cells: list[Cell], workers: int, timeout: float, memory: bool, record: tuple[str, ...]) -> Iterator[list[dict[str, Any]]]:
    """Each cell in a fresh process, ``workers`` at a time; a cell past ``timeout`` is stopped and recorded."""
    context = isolation_context()
    driver = os.getpid()
    pending = list(reversed(cells))
    running: dict[Any, tuple[Any, Cell, float]] = {}  # connection -> (process, cell, start)
    try:
        while pending or running:
            while pending and len(running) < workers:
                cell = pending.pop()
                receive, send = context.Pipe(duplex=False)
                process = context.Process(target=_isolated_cell, args=(cell.problem, cell.method, cell.key, memory, record, send, driver),
                                          daemon=True)
                process.start()
                send.close()
                running[receive] = (process, cell, time.monotonic())
            first_deadline = min(start for _, _, start in running.values()) + timeout
            for connection in wait(list(running), timeout=max(0.0, first_deadline - time.monotonic())):
                process, cell, start = running.pop(connection)
                try:
                    row = connection.recv()
                except (EOFError, OSError):  # the process died without a result (killed, out of memory)
                    row = None
                connection.close()
                process.join()
                if row is None:
                    row = {"key": cell.key, "method": cell.method, "seconds": time.monotonic() - start,
                           "error": f"ProcessError: the cell's process ended without a result (exit code {process.exitcode})"}
                yield [row]
            now = time.monotonic()
            for connection, (process, cell, start) in list(running.items()):
                if now - start >= timeout:
                    process.kill()
                    process.join()
                    connection.close()
                    del running[connection]
                    yield [{"key": cell.key, "method": cell.method, "status": "timeout", "seconds": now - start,
                            "error": f"TimeoutError: no result within {timeout:g} s (the cell's process was stopped)"}]
    finally:  # an interrupted sweep leaves no cell running
        for connection, (process, _, _) in running.items():
            process.kill()
            process.join()
            connection.close()


#: Seconds a Dask scheduler's address has to answer as Dask (:func:`_check_scheduler`).
SCHEDULER_SECONDS = 20.0


def _check_scheduler(address: Any, client_class: Any) -> None:
    """Refuse, before any cell runs, an address that does not answer as a Dask scheduler within
    :data:`SCHEDULER_SECONDS`.

    A client connected to it once, without a deadline of our own, and then waited for ever on
    an HTTP server (the Dask dashboard, whose port 8787 is easily taken for the scheduler's
    8786: Dask's ``timeout`` does not cover the handshake), and on a server that did answer read
    its "HTTP/1.1" as a frame length and raised a MemoryError (3 EiB). So an asynchronous client
    connects first under ``asyncio.wait_for``, which cancels a stalled handshake, and closes.
    It runs on an event loop of its own in a thread of its own: in Jupyter the main thread's
    loop is already running, and ``asyncio.run`` refuses to start there.
    """
    import asyncio
    import threading

    async def connect() -> None:
        client = client_class(address, asynchronous=True, timeout=SCHEDULER_SECONDS)
        try:
            await asyncio.wait_for(client, SCHEDULER_SECONDS)
        finally:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(client.close(), 5.0)

    errors: list[BaseException] = []

    def probe() -> None:
        try:
            asyncio.run(connect())
        except BaseException as exc:  # noqa: BLE001 - whatever a peer that is not Dask makes Dask raise
            errors.append(exc)

    thread = threading.Thread(target=probe, name="dpopt-scheduler-check", daemon=True)
    thread.start()
    thread.join(SCHEDULER_SECONDS + 10.0)
    if thread.is_alive() or errors:
        why = type(errors[0]).__name__ if errors else "no answer"
        raise fail("scheduler", OWNER, f"the address of a Dask scheduler that answers within {SCHEDULER_SECONDS:g} s (the "
                   "dashboard's, 8787 by default, is not the scheduler's, 8786)", f"{address} ({why})")


def _warn_without_workers(client: Any) -> None:
    """Say so when the scheduler has no workers: its cells wait until one joins, which looked
    like a sweep hung for ever (0 of N on the progress bar, nothing else). Not refused: an
    adaptive cluster starts workers only once there is work."""
    if not client.scheduler_info().get("workers"):
        warnings.warn(f"the Dask scheduler at {client.scheduler.address} has no workers yet: the sweep's cells wait until "
                      "one joins", RuntimeWarning, stacklevel=4)


def _execute_dask(cells: list[Cell], scheduler: Any, memory: bool, record: tuple[str, ...]) -> Iterator[list[dict[str, Any]]]:
    try:
        from dask.distributed import Client
        from dask.distributed import as_completed as dask_completed
    except ImportError:
        raise fail("scheduler", OWNER, 'usable: Dask is not installed (pip install "dask[distributed]")', str(scheduler)) from None
    if isinstance(scheduler, Client):
        client = scheduler
    else:
        _check_scheduler(scheduler, Client)
        client = Client(scheduler, timeout=SCHEDULER_SECONDS)
    try:
        _warn_without_workers(client)
        futures = client.map(_solve_batch, list(_batches(cells, 8)), memory=memory, record=record, pure=False)
        for future in dask_completed(futures):
            yield future.result()
    except (CancelledError, OSError) as exc:  # the scheduler lost (Dask's CommClosedError is an OSError): one line, not "internal"
        raise fail("scheduler", OWNER, "a Dask scheduler that stays up until the sweep ends (the rows finished before it was "
                   "lost are kept: a rerun resumes)", f"{client.scheduler.address} ({type(exc).__name__})") from None
    finally:
        if client is not scheduler:
            client.close()


def sweep(spec: Any, **options: Any) -> pd.DataFrame:
    """``dpopt.sweep``: run a sweep given as a path, a dict or a :class:`Sweep` (options of :func:`run_sweep`)."""
    if isinstance(spec, Sweep):
        parsed = spec
    elif isinstance(spec, dict):
        parsed = sweep_from_dict(spec)
    elif isinstance(spec, (str, Path)):
        parsed = load_sweep(spec)
    else:
        raise fail("spec", OWNER, "a sweep file path, a dict or a Sweep", type(spec).__name__)
    return run_sweep(parsed, **options)
