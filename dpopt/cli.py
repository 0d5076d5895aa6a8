"""The ``dpopt`` command line (see DESIGN.md: a contract that users and checks rely on).

    dpopt solve PROBLEM.toml [--method auto|lp|NAME] [--solver NAME] [--export PATH] [--timeout S]
    dpopt compare PROBLEM.toml [--solver NAME] [--timeout S]
    dpopt sample PROBLEM.toml|EXPORT --true-value V [--count K] [--seed S | --secure]
    dpopt audit PROBLEM.toml|EXPORT [--method NAME] [--samples N] [--seed S] [--confidence C] [--pairs K]
    dpopt sweep SWEEP.toml --output RESULTS.parquet [--workers K] [--scheduler ADDRESS] [--timeout S] [--memory] [--no-progress]

``sample`` and ``audit`` read a problem file and solve it, or read back a mechanism that
``solve --export`` wrote (``.csv``, ``.json``, ``.parquet``, ``.npz``): verified as
:func:`dpopt.export.read_solution` verifies it (digest, certificate re-measured), so the
releases come from exactly the mechanism that was exported, not from a new solve.

Output is JSON on stdout (``compare``: one object per line, for every method that gave a
certified mechanism; each that did not is one line on stderr; on a terminal, stderr also shows
which method is running, erased when done). Bad input: one line on
stderr, exit 2. Solver failure: one line naming the solver and its status, exit 3.
Nothing is written to ``--export`` unless the run succeeded, and nothing uncertified
leaves with exit 0 (exit 4: the mechanism found does not meet its privacy target).
A result that cannot be written (a full disk, a reader gone) is one line on stderr and
exit 1; a closed stdout is refused before any work (exit 2). Ctrl-C: one line, exit 130
(:func:`_run_interruptibly`).
``audit`` prints its report and exits 5 when the sampled releases give a lower bound on
epsilon above the certified one (:mod:`dpopt.privacy_audit`).

While a command works, file descriptor 1 points at stderr (and ``sys.stdout`` at
``sys.stderr``), so whatever a solver or library prints, at the Python or the C level,
never reaches stdout; the JSON is written after the work, to the real stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import sys
import threading
import warnings
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Iterator, NoReturn, Sequence

from dpopt.export import EXPORT_FORMATS, check_export_path
from dpopt.problem_files import load_problem
from dpopt.registry import compare_plan, float_only, iter_compare_outcomes, parameters_only, solve
from dpopt.solution import DATA_KINDS
from dpopt.problems.calibration import ROUNDED_MECHANISMS
from dpopt.limits import MAX_RELEASES, MAX_TIMEOUT, check_memory
from dpopt.validation import (MAX_DECIMAL_PLACES, DPOptError, InvalidParameterError, SolverError, check_int, check_real,
                              fraction_text)

__all__ = ["main"]

EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_SOLVER = 3
EXIT_UNCERTIFIED = 4
EXIT_AUDIT_FAILED = 5
EXIT_INTERRUPTED = 130  # 128 + SIGINT, what a shell reports for a command stopped by Ctrl-C


class UncertifiedError(DPOptError):
    """The method's mechanism does not meet its privacy target (CLI exit status 4)."""


Failure = tuple[int, str, object]
"""A compare method that gave no row: (exit status it sets, 0 for none; label; message)."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage block
        self.exit(EXIT_BAD_INPUT, f"dpopt: error: {message}\n")


def _version() -> str:
    """The installed distribution's version (the package's own where it runs uninstalled)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dpopt")
    except PackageNotFoundError:
        from dpopt import __version__

        return __version__


_SOURCE_HELP = ("a problem file (solved first), or a mechanism exported by `dpopt solve --export` "
                f"({', '.join(EXPORT_FORMATS)}; verified on reading, then used as it is)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dpopt", description="Design differentially private mechanisms by optimization.")
    parser.add_argument("--version", action="version", version=f"dpopt {_version()}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    solve_cmd = commands.add_parser("solve", help="solve a problem file and print the solution as JSON")
    solve_cmd.add_argument("problem", metavar="PROBLEM.toml")
    solve_cmd.add_argument("--method", default="auto", help="auto (default), lp, or a registered method name")
    solve_cmd.add_argument("--solver", default=None, help="cvxpy solver for program methods (default HiGHS for LPs)")
    solve_cmd.add_argument("--export", default=None, metavar="PATH", help="write the mechanism (.csv, .json, .parquet, .npz)")
    solve_cmd.add_argument("--dense", action="store_true", help="export a factored solution as its dense matrix")
    solve_cmd.add_argument("--no-repair", action="store_true", help="return the solver's matrix unrepaired")
    solve_cmd.add_argument("--timeout", type=_finite_float, default=None, metavar="S",
                           help="stop the solve after S seconds (it runs in a process of its own; nothing is written)")

    compare_cmd = commands.add_parser("compare", help="every applicable method side by side, one JSON per line")
    compare_cmd.add_argument("problem", metavar="PROBLEM.toml")
    compare_cmd.add_argument("--solver", default=None)
    compare_cmd.add_argument("--timeout", type=_finite_float, default=None, metavar="S",
                             help="stop a method after S seconds (each method runs in its own process) and skip it")

    sample_cmd = commands.add_parser("sample", help="draw releases from the solved, certified mechanism (or an exported one)")
    sample_cmd.add_argument("problem", metavar="PROBLEM.toml|EXPORT", help=_SOURCE_HELP)
    truth = sample_cmd.add_mutually_exclusive_group()
    truth.add_argument("--true-value", type=_exact_number, default=None, dest="true_value",
                       help="the true answer (for finite_query: the dataset's index in the universe; "
                            "required except for dx_linear_query and statistical_query, which use the file's histogram or rows)")
    truth.add_argument("--true-graph", type=_edge_list, default=None, dest="true_graph", metavar="EDGES",
                       help='for a graph_atlas universe: the data\'s graph as edges "0-1 1-2 0-2" (its class is the true value)')
    sample_cmd.add_argument("--count", type=int, default=1, help=f"number of releases, 1..{MAX_RELEASES:,}")
    source = sample_cmd.add_mutually_exclusive_group()
    source.add_argument("--seed", type=int, default=None, help="a seed for reproducible draws (tests, simulation studies); "
                                                               "without it, and with --secure, releases come from the OS secure source")
    source.add_argument("--secure", action="store_true", help="draw from the OS secure source (secrets), as without --seed")
    sample_cmd.add_argument("--method", default="auto", help="for a problem file only")
    sample_cmd.add_argument("--solver", default=None, help="for a problem file only")
    sample_cmd.add_argument("--float", action="store_true", dest="float_path",
                            help="allow a floating-point sampler (simulation studies only, not releases)")

    audit_cmd = commands.add_parser("audit", help="a statistical lower bound on epsilon from the solution's own releases")
    audit_cmd.add_argument("problem", metavar="PROBLEM.toml|EXPORT", help=_SOURCE_HELP)
    audit_cmd.add_argument("--method", default="auto", help="for a problem file only")
    audit_cmd.add_argument("--solver", default=None, help="for a problem file only")
    # --samples is the name DESIGN.md's contract gives; --draws is the name the audit's own API uses
    audit_cmd.add_argument("--samples", "--draws", type=int, default=100_000, dest="samples",
                           help="releases per input and half (default 100,000; --draws is the same option)")
    audit_cmd.add_argument("--seed", type=int, default=0)
    audit_cmd.add_argument("--confidence", type=_finite_float, default=0.95)
    audit_cmd.add_argument("--pairs", type=int, default=2, help="random neighbouring pairs besides the certificate's worst (default 2)")

    sweep_cmd = commands.add_parser("sweep", help="solve every cell of a sweep file into one Parquet table (resumable)")
    sweep_cmd.add_argument("problem", metavar="SWEEP.toml")
    sweep_cmd.add_argument("--output", required=True, metavar="RESULTS.parquet", help="written as cells finish; a rerun resumes")
    sweep_cmd.add_argument("--workers", type=int, default=1, help="local worker processes (default 1: this process)")
    sweep_cmd.add_argument("--scheduler", default=None, metavar="ADDRESS", help="a Dask scheduler to run the cells on")
    sweep_cmd.add_argument("--no-progress", action="store_true", help="no progress bar (shown only where stderr is a terminal)")
    sweep_cmd.add_argument("--memory", action="store_true", help="measure each cell's peak memory (peak_mib; slower)")
    sweep_cmd.add_argument("--timeout", type=_finite_float, default=None, metavar="S",
                           help="stop a cell after S seconds (each cell runs in its own process; status 'timeout')")
    return parser


def _finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid float value: {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"a finite number is required, got {text!r}")  # argparse names the option
    return value


#: Largest magnitude of ``--true-value``: about a double's range (an integer beyond it would print
#: hundreds of digits in every release, and no real-valued mechanism takes it).
MAX_TRUE_VALUE = 2**1023


def _exact_number(text: str) -> int | Fraction:
    """``--true-value`` exactly as written: an integer as an int, anything else as the Fraction it spells.

    Read as a double, 123456789012345678 became ...680, and the neighbours 2**60 + 128 and
    2**60 + 129 became true values 256 apart, which noise for sensitivity 1 does not hide;
    until 2026-11-29 a non-integer was still read as a double, so 2**60 + 127.9 and 2**60 + 128.9
    were 256 apart, and 0.05 on a grid of 0.1 was released as 0.05000000000000000277 (rounded
    to the cell of 0.1, not of 0). The real-valued samplers place a Fraction exactly.
    """
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not value.is_finite() or value.copy_abs() > MAX_TRUE_VALUE:
        raise argparse.ArgumentTypeError(f"a finite number of magnitude at most 2**1023 is required, got {text!r}")
    if value == value.to_integral_value():
        return int(value)
    if value.as_tuple().exponent < -MAX_DECIMAL_PLACES:  # type: ignore[operator]  # finite: an int
        raise argparse.ArgumentTypeError(f"at most {MAX_DECIMAL_PLACES:,} decimal places are allowed, got {text!r}")
    return Fraction(value)


def _json_line(data: dict[str, Any]) -> str:
    """One JSON object; a top-level Fraction (an exact ``--true-value``) is written as the JSON
    number it is, digit for digit (0.05, not 0.05000000000000000277 or the string "0.05")."""
    exact = {key: fraction_text(value) for key, value in data.items() if isinstance(value, Fraction)}
    placeholders = {key: f"@dpopt-exact-{index}@" for index, key in enumerate(exact)}
    text = json.dumps({key: placeholders.get(key, value) for key, value in data.items()}, allow_nan=False)
    for key, placeholder in placeholders.items():
        text = text.replace(json.dumps(placeholder), exact[key], 1)
    return text + "\n"


@contextlib.contextmanager
def _stdout_reserved_for_json() -> Iterator[None]:
    """Point fd 1 and ``sys.stdout`` at stderr while the command works (see module docstring)."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _certified(solution: Any) -> Any:
    if not solution.certificate.ok:
        cert = solution.certificate
        raise UncertifiedError(_uncertified_message(solution.method, cert.max_privacy_loss, cert.target))
    return solution


def _uncertified_message(method: str, loss: float | None, target: float) -> str:
    """``loss`` None: infinite (a summary's JSON holds no inf)."""
    shown = "inf" if loss is None else f"{loss:.6g}"
    return (f"method {method!r} returned a mechanism that fails its privacy certificate "
            f"(measured loss {shown} > target {target:.6g}); nothing was released")


def _summary_uncertified_message(summary: dict[str, Any]) -> str:
    cert = summary["certificate"]
    return _uncertified_message(summary["method"], cert["max_privacy_loss"], cert["target"])


def _run(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[Failure]]:
    """Do the command's work; return the JSON objects to print and what failed beside them."""
    if args.command == "compare":
        return _compare_rows(_problem_file(args), args.solver, args.timeout)
    return _rows(args), []


def _is_export(path: str) -> bool:
    """Whether ``path`` names an export (by its suffix, as ``--export`` chooses the format)."""
    return os.path.splitext(path)[1].lower() in EXPORT_FORMATS


def _problem_file(args: argparse.Namespace) -> Any:
    """The problem ``args.problem`` names; an export is refused naming the commands that read one."""
    if _is_export(args.problem):
        raise InvalidParameterError("PROBLEM", f"dpopt {args.command}", "a TOML problem file (an export, as this is, "
                                    "is read by `dpopt sample` and `dpopt audit`)", args.problem)
    return load_problem(args.problem)


def _exported_solution(args: argparse.Namespace) -> Any:
    """The certified solution an export holds (:func:`dpopt.export.read_solution`: nothing stored is
    trusted); ``--method`` and ``--solver``, which choose a solve, are refused beside it."""
    from dpopt.export import read_solution

    for option, default in (("method", "auto"), ("solver", None)):
        if getattr(args, option) != default:
            raise InvalidParameterError(option, f"dpopt {args.command}", "left out when reading an export "
                                        "(it holds its mechanism, solved by the method it names)", getattr(args, option))
    if not os.path.isfile(args.problem):
        raise InvalidParameterError("PROBLEM", f"dpopt {args.command}", "an existing problem file or export", args.problem)
    return _certified(read_solution(args.problem))


def _run_interruptibly(args: argparse.Namespace) -> tuple[list[dict[str, Any]], list[Failure]]:
    """:func:`_run` in a worker thread, so that Ctrl-C stops the command at once.

    Python handles a signal only in the main thread between bytecodes, so a solve inside
    HiGHS's or Clarabel's C++ code ignored Ctrl-C until it returned (a count query's ``lp`` at
    n = 400: still running 60 s after it). Here the main thread only waits; on Ctrl-C it
    says so in one line and ends the process at once (``os._exit``: the worker cannot be
    stopped any other way, and nothing has been printed; a ``--export`` caught half-way may
    leave its temporary files, never the export itself), after killing its child processes
    (:func:`_stop_children`). A sweep is left in the
    main thread, where Ctrl-C reaches its clean-up (its finished rows are written to disk).
    """
    if args.command == "sweep" or threading.current_thread() is not threading.main_thread():
        return _run(args)
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = _run(args)
        except BaseException as error:  # re-raised in the main thread, where main() reports it
            outcome["error"] = error

    worker = threading.Thread(target=work, name="dpopt-command", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.25)
    except KeyboardInterrupt:
        if sys.stderr.isatty():  # past a progress bar's line (compare's), not on it
            sys.stderr.write("\n")
        _fail(EXIT_INTERRUPTED, "interrupted", "stopped by the user; nothing was printed or exported")
        sys.stderr.flush()
        _stop_children()
        os._exit(EXIT_INTERRUPTED)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def _stop_children() -> None:
    """Kill this process's children before it ends without clean-up: a ``--timeout`` solve's
    process (forked by multiprocessing's server, so not a direct child) and the HiGHS children.
    Their own watch for a vanished parent is a Python thread, which does not run while HiGHS
    holds the interpreter: they would solve on for minutes, holding the caller's pipes open."""
    import multiprocessing
    import signal

    with contextlib.suppress(Exception):
        for child in multiprocessing.active_children():
            child.kill()
    with contextlib.suppress(OSError):
        for task in os.listdir("/proc/self/task"):  # Linux; elsewhere only the above
            with open(f"/proc/self/task/{task}/children") as handle:
                for pid in handle.read().split():
                    with contextlib.suppress(OSError):
                        os.kill(int(pid), signal.SIGKILL)


@contextlib.contextmanager
def _dask_logs_muted(active: bool) -> Iterator[None]:
    """Dask logs its own tracebacks (a lost scheduler: 30 lines from ``distributed.client``);
    the command's stderr has one line per error, so only critical records pass the handlers
    Dask's import puts on its loggers (a record reaches its ancestors' handlers whatever their
    loggers' levels, so the handlers' levels are raised)."""
    import logging

    if not active:
        yield
        return
    with contextlib.suppress(ImportError):  # without Dask the sweep refuses the scheduler itself
        import distributed  # noqa: F401 - attaches the handlers
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict) if name.split(".")[0] == "distributed"]
    handlers = [(handler, handler.level) for logger in loggers for handler in logger.handlers]
    for handler, _ in handlers:
        handler.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for handler, level in handlers:
            handler.setLevel(level)


def _rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The JSON objects a command other than ``compare`` prints."""
    if args.command == "sweep":
        from dpopt.sweeps import load_sweep, run_sweep

        check_int(args.workers, "workers", "dpopt sweep", low=1, high=256)
        output = args.output
        with _dask_logs_muted(args.scheduler is not None):
            table = run_sweep(load_sweep(args.problem), output=output, workers=args.workers, scheduler=args.scheduler,
                              progress=False if args.no_progress else None, memory=args.memory, timeout=args.timeout)
        failed = int((table["error"].fillna("") != "").sum())
        return [{"kind": "sweep", "rows": len(table), "failed": failed, "output": str(output)}]
    _check_draw_options(args)  # before an export is read: it may be large
    exported = _exported_solution(args) if args.command in ("sample", "audit") and _is_export(args.problem) else None
    problem = exported.problem if exported is not None else _problem_file(args)
    if args.command == "solve":
        export = check_export_path(args.export) if args.export is not None else None
        if args.dense and export is None:  # it would change nothing: say so rather than ignore it
            raise InvalidParameterError("dense", "dpopt solve", "given with --export PATH (it chooses what the export writes)", True)
        if export is not None and export.suffix.lower() != ".json" and parameters_only(problem, args.method):
            # refused before the solve: until 2026-11-29 only calibrations were, and as ".json or .csv",
            # although a calibration's .csv was refused after its solve like every parameter solution's
            whose = f"a {problem.kind} problem" + ("" if args.method == "auto" else f" by {args.method}")
            raise InvalidParameterError("export", "dpopt solve", f"a .json path for {whose} (its result is parameters, "
                                        "not a matrix)", str(export))
        if export is not None and hasattr(problem, "matrix_bytes"):  # a matrix built only for the export: sized first
            check_memory(problem.matrix_bytes, "export", "dpopt solve", str(export),
                         what="the mechanism matrix it writes (integer noise: Delta + 1 rows; `dpopt sample` needs no matrix)")
        if args.timeout is not None:
            summary = _solve_with_timeout(problem, args, None if export is None else str(export))
        else:
            solution = _certified(solve(problem, args.method, solver=args.solver, repair=not args.no_repair))
            if export is not None:
                solution.export(str(export), dense=args.dense)
            summary = solution.summary()
        return [{**summary, **({"export": str(export)} if export else {})}]
    if args.command == "audit":
        from dpopt.privacy_audit import audit_solution

        if problem.kind in DATA_KINDS and getattr(problem, DATA_KINDS[problem.kind]) is None:  # refused before any work
            raise InvalidParameterError(DATA_KINDS[problem.kind], "dpopt audit", "given in the problem file (the dataset whose neighbours are audited)", None)
        solution = exported if exported is not None else _certified(solve(problem, args.method, solver=args.solver))
        report = audit_solution(solution, draws=args.samples, confidence=args.confidence, seed=args.seed, random_pairs=args.pairs)
        source = {"export": args.problem} if exported is not None else {}
        return [{"kind": solution.kind, "method": solution.method, **source, **report.to_dict()}]
    true_value = _true_value(problem, args.true_value if args.true_graph is None else _atlas_index_of(problem, args.true_graph))
    floating = [] if args.float_path or exported is not None else float_only(problem, args.method)
    if floating:  # refused before any solving
        raise _float_refusal(problem, ", ".join(floating), several=len(floating) > 1)
    solution = exported if exported is not None else _certified(solve(problem, args.method, solver=args.solver))
    try:
        releases = solution.sample(true_value, args.count, rng=args.seed, secure=args.secure, exact=not args.float_path)
    except InvalidParameterError as error:
        if error.parameter != "exact":
            raise
        raise _float_refusal(problem, solution.method) from None
    summary = solution.summary()
    given: dict[str, Any] = {"true_value": f"{DATA_KINDS[problem.kind]} in the problem file" if true_value is None else true_value}
    if problem.kind == "finite_query":  # the row is a dataset: say whose value it holds
        value = float(problem.universe.values[true_value])
        whole = value.is_integer() and abs(value) < 2.0**53 and releases.dtype.kind == "i"  # as its releases are
        given["query_value"] = int(value) if whole else value
    if args.true_graph is not None:
        given["true_graph"] = args.true_graph
    if exported is not None:
        given["export"] = args.problem
    return [
        {key: summary[key] for key in ("kind", "method", "solver", "status", "objective", "alpha", "epsilon", "certificate", "sampler")}
        | given
        | {
            "count": args.count,
            "seed": args.seed,
            "source": "numpy.random.Generator(PCG64)" if args.seed is not None else "secrets",
            "releases": releases.tolist(),
        }
    ]


def _check_draw_options(args: argparse.Namespace) -> None:
    """``sample``'s and ``audit``'s numeric options, refused before any file is read."""
    if args.command == "sample":
        check_int(args.count, "count", "dpopt sample", low=1, high=MAX_RELEASES)
        if args.seed is not None and args.seed < 0:
            raise InvalidParameterError("seed", "dpopt sample", "an integer >= 0", args.seed)
    elif args.command == "audit":
        from dpopt.privacy_audit import AUDIT_LIMITS

        check_int(args.pairs, "pairs", "dpopt audit", low=0, high=100)
        check_int(args.samples, "samples", "dpopt audit", low=AUDIT_LIMITS["draws"][0], high=AUDIT_LIMITS["draws"][1])
        check_int(args.seed, "seed", "dpopt audit", low=0)
        check_real(args.confidence, "confidence", "dpopt audit", low=0.5, high=1.0, high_open=True)


def _float_refusal(problem: Any, method: str, *, several: bool = False) -> InvalidParameterError:
    """A release from a float-only sampler, refused naming the flag a command-line user can give
    (not the API's ``exact`` keyword) and the grid that would make it exact."""
    grid = ""
    if hasattr(problem, "release_grid"):
        grid = " (or declare release_grid in the problem file: exact releases on that grid)"
    elif getattr(problem, "mechanism", None) in ROUNDED_MECHANISMS:
        grid = " (or declare grid in the problem file: exact releases rounded to that grid)"
    elif str(getattr(problem, "mechanism", "")).startswith("gaussian"):
        grid = (' (or calibrate mechanism = "discrete_gaussian" with a grid: exact releases on that grid, '
                "its delta computed for the grid)")
    which = "none of which has an exact sampler: their" if several else "which has no exact sampler: its"
    return InvalidParameterError("--float", "dpopt sample", f"given to draw from {method}, {which} floating-point draws are "
                                 f"for simulation studies, not releases{grid}", False)


def _solve_with_timeout(problem: Any, args: argparse.Namespace, export: str | None) -> dict[str, Any]:
    """``dpopt solve --timeout S``: the solve (and export) in a process of its own, stopped after S
    seconds; its errors are raised here, so the exit status is the one an in-process solve gives."""
    from dpopt.method_processes import solve_in_process

    timeout = check_real(args.timeout, "timeout", "dpopt solve", low=0.0, low_open=True, high=MAX_TIMEOUT)
    outcome = solve_in_process(problem, args.method, args.solver, timeout, repair=not args.no_repair, export=export, dense=args.dense)
    if outcome.kind == "summary":
        if not outcome.value["certificate"]["ok"]:
            raise UncertifiedError(_summary_uncertified_message(outcome.value))
        return outcome.value
    if outcome.kind == "raise":
        raise outcome.value
    if outcome.kind == "timeout":
        raise InvalidParameterError("timeout", "dpopt solve", f"long enough for the solve to finish ({outcome.value}; "
                                    "nothing was written)", timeout)
    raise RuntimeError(outcome.value)  # the child's own failure: main's catch-all reports it in one line


def _compare_rows(problem: Any, solver: str | None, timeout: float | None) -> tuple[list[dict[str, Any]], list[Failure]]:
    """One row per certified method, and the methods that did not give one.

    A method refused by the memory estimate or stopped at ``timeout``, whose solver fails or
    whose mechanism fails its certificate does not cost the user the other methods' rows:
    they are printed and each failure is one line on stderr. A memory refusal or a timeout
    only skips the method; a solver failure or an uncertified mechanism makes the exit status
    3 or 4 (the worse one), so nothing uncertified leaves with exit 0.
    """
    summaries: list[dict[str, Any]] = []
    failures: list[Failure] = []
    for name, outcome in _compare_outcomes(problem, solver, timeout):
        if isinstance(outcome, tuple):
            failures.append(outcome)
        elif not outcome["certificate"]["ok"]:
            failures.append((EXIT_UNCERTIFIED, f"{name} uncertified", _summary_uncertified_message(outcome)))
        else:
            summaries.append(outcome)
    if not summaries and all(code == 0 for code, _, _ in failures):  # every method skipped: bad input, one line
        if timeout is not None and any(not isinstance(message, DPOptError) for _, _, message in failures):
            raise InvalidParameterError("timeout", "dpopt compare", "long enough for some method to finish "
                                        "(each was stopped or does not fit in memory)", timeout)
        raise failures[0][2]  # type: ignore[misc]  # the cheapest method's memory refusal
    best = min((s["objective"] for s in summaries if s["exact"] and s["objective"] is not None), default=float("nan"))
    rows = []
    for summary in summaries:
        ratio = summary["objective"] / best if best and summary["objective"] is not None else float("nan")
        rows.append({**summary, "ratio_to_optimum": ratio if math.isfinite(ratio) else None})
    return rows, failures


#: How a compare method that gave no summary is reported: (exit status it sets, 0 for none; label).
_COMPARE_FAILURES = {"skipped": (0, "skipped"), "solver_error": (EXIT_SOLVER, "solver failure"), "error": (EXIT_INTERNAL, "failed")}


def _compare_outcomes(problem: Any, solver: str | None, timeout: float | None) -> Iterator[tuple[str, Any]]:
    """Each method's summary dict, or the :data:`Failure` that stands for it; in-process without a timeout."""
    if timeout is not None:
        check_real(timeout, "timeout", "dpopt compare", low=0.0, low_open=True, high=MAX_TIMEOUT)
    plan = compare_plan(problem, solver=solver)
    outcomes = _in_process(problem, solver, plan) if timeout is None else _in_children(problem, solver, timeout, plan)
    yield from _with_progress([method.name for method, _ in plan], outcomes)


def _failure(name: str, kind: str, message: object) -> tuple[str, Failure]:
    code, label = _COMPARE_FAILURES[kind]
    return name, (code, f"{name} {label}", message)


def _in_process(problem: Any, solver: str | None, plan: list[Any]) -> Iterator[tuple[str, Any]]:
    for name, outcome in iter_compare_outcomes(problem, solver=solver, plan=plan):
        if isinstance(outcome, (InvalidParameterError, SolverError)):
            yield _failure(name, "skipped" if isinstance(outcome, InvalidParameterError) else "solver_error", outcome)
        else:
            yield name, outcome.summary()


def _in_children(problem: Any, solver: str | None, timeout: float, plan: list[Any]) -> Iterator[tuple[str, Any]]:
    """Each method in a process of its own, stopped at ``timeout``."""
    from dpopt.method_processes import solve_in_process

    for method, refusal in plan:
        if refusal is not None:
            yield _failure(method.name, "skipped", refusal)
            continue
        result = solve_in_process(problem, method.name, solver if method.uses_solver else None, timeout)
        if result.kind == "summary":
            yield method.name, result.value
        elif result.kind == "raise":  # a solver failure, a refusal as it ran (as in-process: skipped), or a bug
            error = result.value
            if isinstance(error, SolverError):
                yield _failure(method.name, "solver_error", str(error))
            elif isinstance(error, InvalidParameterError):
                yield _failure(method.name, "skipped", error)
            else:
                yield _failure(method.name, "error", f"{type(error).__name__}: {error}")
        else:
            yield _failure(method.name, "skipped" if result.kind == "timeout" else result.kind, result.value)


def _with_progress(names: list[str], outcomes: Iterator[tuple[str, Any]]) -> Iterator[tuple[str, Any]]:
    """``outcomes`` as they come, while a bar on stderr names the method now running.

    Only on a terminal (tqdm's ``disable=None``: a pipe, a file or a test sees nothing), and
    erased when done, before the failures' lines: a method can run for minutes (a count
    query's ``interaction`` at n = 300), and the rows are printed only once every method ends.
    """
    from tqdm import tqdm  # not tqdm.auto: in a notebook it warns when ipywidgets is absent

    bar = tqdm(total=len(names), desc="dpopt compare", file=sys.stderr, disable=None, leave=False,
               bar_format="{desc} ({n_fmt}/{total_fmt} methods done, {elapsed})")  # no rate or ETA: methods differ
    try:
        for name in names:
            bar.set_description_str(f"dpopt compare: running {name}", refresh=True)
            item = next(outcomes, None)
            if item is None:
                return
            bar.update()
            yield item
    finally:
        bar.close()


def _edge_list(text: str) -> list[list[int]]:
    """``--true-graph``: edges written ``u-v``, separated by spaces or commas (ASCII digits only)."""
    import re

    tokens = [token for token in re.split(r"[\s,]+", text.strip()) if token]
    if len(text) > 1000 or not all(re.fullmatch(r"[0-9]{1,2}-[0-9]{1,2}", token) for token in tokens):
        raise argparse.ArgumentTypeError(f'edges written u-v, separated by spaces or commas, such as "0-1 1-2 0-2" (got {text[:60]!r})')
    return [[int(u), int(v)] for u, v in (token.split("-") for token in tokens)]


def _atlas_index_of(problem: Any, edges: list[list[int]]) -> int:
    """The dataset index of the graph ``edges`` in the problem's graph-atlas universe."""
    from dpopt.universes import atlas_class

    spec = getattr(getattr(problem, "universe", None), "spec", None) or {}
    if problem.kind != "finite_query" or spec.get("type") != "graph_atlas":
        raise InvalidParameterError("true-graph", "dpopt sample", "given only for a finite_query on a graph_atlas universe "
                                    "(else --true-value)", edges)
    try:
        return atlas_class(edges, spec["nodes"])
    except InvalidParameterError as error:  # named as the option it came from
        raise InvalidParameterError("true-graph", "dpopt sample", f"a graph on the universe's {spec['nodes']} nodes "
                                    f"0..{spec['nodes'] - 1}, without self-loops", edges) from error


def _true_value(problem: Any, value: int | Fraction | None) -> Any:
    """The sample command's true value: an integer where the problem's inputs are integers."""
    if problem.kind in DATA_KINDS:
        data = DATA_KINDS[problem.kind]
        if value is not None:
            raise InvalidParameterError("true-value", "dpopt sample", f"omitted for {problem.kind} (releases use the file's {data})", value)
        if getattr(problem, data) is None:
            raise InvalidParameterError(data, "dpopt sample", "given in the problem file (the dataset to release for)", None)
        return None
    if value is None:
        raise InvalidParameterError("true-value", "dpopt sample", "given (--true-value V)", None)
    if problem.kind == "finite_query":  # a row of the mechanism: datasets may share a value
        last = problem.universe.size - 1
        if not isinstance(value, int) or not 0 <= value <= last:
            raise InvalidParameterError("true-value", "dpopt sample", f"a dataset's index in the universe, 0..{last} (the "
                                        "mechanism's row; not its query value, which datasets may share)", value)
        return value
    # real noise (calibrations, neighbouring sets) takes any number, a whole one as the exact int
    # _exact_number read; the other kinds' inputs are integers
    real = problem.kind == "calibration" or hasattr(problem, "neighbouring_set")
    if not real and not isinstance(value, int):
        raise InvalidParameterError("true-value", "dpopt sample", "an integer for this problem kind", value)
    return value


#: Options whose value may be a negative number.
SIGNED_OPTIONS = ("--true-value",)


def _attach_negative_values(argv: list[str]) -> list[str]:
    """``--true-value -1e300`` as ``--true-value=-1e300``: argparse takes a negative number for an
    option only in plain decimal (``-1.5``), so ``-1e3`` or ``-inf`` ended in "expected one argument"."""
    joined: list[str] = []
    index = 0
    while index < len(argv):
        token = argv[index]
        following = argv[index + 1] if index + 1 < len(argv) else None
        if token in SIGNED_OPTIONS and following is not None and following.startswith("-") and _is_number(following):
            joined.append(f"{token}={following}")
            index += 2
            continue
        joined.append(token)
        index += 1
    return joined


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpopt`` console script; returns the exit status."""
    try:
        args = _parser().parse_args(_attach_negative_values(sys.argv[1:] if argv is None else list(argv)))
    except SystemExit as exc:  # argparse: --help or --version (0), or a usage error (2, one line printed)
        return int(exc.code or 0)
    if not _stdout_open():
        return _fail(EXIT_BAD_INPUT, "error", "stdout is closed; the result is written there as JSON (nothing was done)")
    try:
        with _stdout_reserved_for_json(), warnings.catch_warnings():
            warnings.showwarning = _show_warning
            rows, failures = _run_interruptibly(args)
            text = "".join(_json_line(row) for row in rows)
    except KeyboardInterrupt:  # a sweep's Ctrl-C, after its finished rows reached disk
        return _fail(EXIT_INTERRUPTED, "interrupted", "stopped by the user; nothing was printed (a rerun resumes a sweep)")
    except InvalidParameterError as exc:
        return _fail(EXIT_BAD_INPUT, "error", exc)
    except SolverError as exc:
        return _fail(EXIT_SOLVER, "solver failure", exc)
    except UncertifiedError as exc:
        return _fail(EXIT_UNCERTIFIED, "uncertified", exc)
    except DPOptError as exc:  # a file refused on reading, ...
        return _fail(EXIT_BAD_INPUT, "error", exc)
    except Exception as exc:  # a bug: one line, never a traceback, never exit 0
        return _fail(EXIT_INTERNAL, "internal error (please report it)", f"{type(exc).__name__}: {exc}")
    if not _write_result(text):
        return EXIT_INTERNAL
    if failures:
        return max(_fail(code, label, message) for code, label, message in failures)
    if args.command == "audit" and not rows[0]["passed"]:
        return _fail(EXIT_AUDIT_FAILED, "audit failed", f"epsilon >= {rows[0]['epsilon_lower_bound']:.6g} at confidence "
                     f"{rows[0]['confidence']} exceeds the certified {rows[0]['certified_epsilon']:.6g}")
    return 0


def _stdout_open() -> bool:
    """Whether there is a stdout to print the JSON on. With fd 1 closed (``dpopt solve p.toml >&-``)
    Python's ``sys.stdout`` is None, and the next file opened would take fd 1."""
    if sys.stdout is None:
        return False
    try:
        os.fstat(1)
    except OSError:
        return False
    return True


def _write_result(text: str) -> bool:
    """Print the JSON; on a write error (a full disk, a reader gone: ``| head``) one line on
    stderr instead of a traceback, and stdout pointed at /dev/null so that the interpreter's
    last flush does not fail again."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except OSError as error:
        with contextlib.suppress(OSError):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            os.close(devnull)
        _fail(EXIT_INTERNAL, "output error", f"the result could not be written to stdout ({error.strerror or error}); "
              "it may be cut short")
        return False
    return True


def _show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """A warning as one line on stderr, as errors are (Python's own shows the file, line and source)."""
    _say("warning", message)


def _fail(code: int, label: str, message: object) -> int:
    _say(label, message)
    return code


def _say(label: str, message: object) -> None:
    line = " ".join(str(message).split())  # one line, whatever the message held
    sys.stderr.write(f"dpopt: {label}: {line}\n")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
