"""The ``dpopt`` command line (see DESIGN.md: a contract that users and checks rely on).

    dpopt solve PROBLEM.toml [--method auto|lp|NAME] [--solver NAME] [--export PATH]
    dpopt compare PROBLEM.toml
    dpopt sample PROBLEM.toml --true-value V [--count K] [--seed S | --secure]

Output is JSON on stdout (``compare``: one object per line). Bad input: one line on
stderr, exit 2. Solver failure: one line naming the solver and its status, exit 3.
Nothing is written to ``--export`` unless the run succeeded.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from typing import Any, NoReturn, Sequence

from dpopt.export import check_export_path
from dpopt.problem_files import load_problem
from dpopt.registry import compare, solve
from dpopt.validation import InvalidParameterError, SolverError

__all__ = ["main"]

EXIT_BAD_INPUT = 2
EXIT_SOLVER = 3


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage block
        self.exit(EXIT_BAD_INPUT, f"dpopt: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dpopt", description="Design differentially private mechanisms by optimization.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    solve_cmd = commands.add_parser("solve", help="solve a problem file and print the solution as JSON")
    solve_cmd.add_argument("problem", metavar="PROBLEM.toml")
    solve_cmd.add_argument("--method", default="auto", help="auto (default), lp, or a registered method name")
    solve_cmd.add_argument("--solver", default=None, help="cvxpy solver for program methods (default HiGHS for LPs)")
    solve_cmd.add_argument("--export", default=None, metavar="PATH", help="write the mechanism (.csv, .json, .parquet, .npz)")
    solve_cmd.add_argument("--dense", action="store_true", help="export a factored solution as its dense matrix")
    solve_cmd.add_argument("--no-repair", action="store_true", help="return the solver's matrix unrepaired")

    compare_cmd = commands.add_parser("compare", help="every applicable method side by side, one JSON per line")
    compare_cmd.add_argument("problem", metavar="PROBLEM.toml")
    compare_cmd.add_argument("--solver", default=None)

    sample_cmd = commands.add_parser("sample", help="draw releases from the solved, certified mechanism")
    sample_cmd.add_argument("problem", metavar="PROBLEM.toml")
    sample_cmd.add_argument("--true-value", type=float, default=None, dest="true_value",
                            help="the true answer (required except for dx_linear_query, which uses the file's histogram)")
    sample_cmd.add_argument("--count", type=int, default=1)
    source = sample_cmd.add_mutually_exclusive_group()
    source.add_argument("--seed", type=int, default=None)
    source.add_argument("--secure", action="store_true", help="draw from the OS secure source (secrets)")
    sample_cmd.add_argument("--method", default="auto")
    sample_cmd.add_argument("--solver", default=None)
    return parser


def _print(data: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(data, allow_nan=False) + "\n")


def _run(args: argparse.Namespace) -> None:
    problem = load_problem(args.problem)
    if args.command == "solve":
        export = check_export_path(args.export) if args.export else None
        if export is not None and problem.kind == "calibration" and export.suffix.lower() not in (".json", ".csv"):
            raise InvalidParameterError("export", "dpopt solve", "a .json or .csv path for a calibration (its result is parameters)", str(export))
        solution = solve(problem, args.method, solver=args.solver, repair=not args.no_repair)
        if export is not None:
            solution.export(str(export), dense=args.dense)
        _print({**solution.summary(), **({"export": str(export)} if export else {})})
    elif args.command == "compare":
        solutions = compare(problem, solver=args.solver)
        best = min((s.objective for s in solutions if s.exact), default=float("nan"))
        for solution in solutions:
            ratio = solution.objective / best if best else float("nan")
            _print({**solution.summary(), "ratio_to_optimum": ratio if math.isfinite(ratio) else None})
    else:
        if args.count < 1:
            raise InvalidParameterError("count", "dpopt sample", "an integer >= 1", args.count)
        if args.seed is not None and args.seed < 0:
            raise InvalidParameterError("seed", "dpopt sample", "an integer >= 0", args.seed)
        true_value = _true_value(problem, args.true_value)
        solution = solve(problem, args.method, solver=args.solver)
        releases = solution.sample(true_value, args.count, rng=args.seed, secure=args.secure)
        summary = solution.summary()
        _print(
            {
                key: summary[key]
                for key in ("kind", "method", "solver", "status", "objective", "alpha", "epsilon", "certificate")
            }
            | {
                "true_value": "histogram in the problem file" if true_value is None else true_value,
                "count": args.count,
                "seed": args.seed,
                "source": "secrets" if args.secure else "numpy.random.Generator(PCG64)",
                "releases": releases.tolist(),
            }
        )


def _true_value(problem: Any, value: float | None) -> Any:
    """The sample command's true value: an integer where the problem's inputs are integers."""
    if problem.kind == "dx_linear_query":
        if problem.histogram is None:
            raise InvalidParameterError("histogram", "dpopt sample", "given in the problem file (the records' counts per element)", None)
        return None
    if value is None:
        raise InvalidParameterError("true-value", "dpopt sample", "given (--true-value V)", None)
    if problem.kind != "calibration":
        if value != int(value):
            raise InvalidParameterError("true-value", "dpopt sample", "an integer for this problem kind", value)
        return int(value)
    return value


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``dpopt`` console script; returns the exit status."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, one line printed)
        return int(exc.code or 0)
    try:
        _run(args)
    except InvalidParameterError as exc:
        sys.stderr.write(f"dpopt: error: {exc}\n")
        return EXIT_BAD_INPUT
    except SolverError as exc:
        sys.stderr.write(f"dpopt: solver failure: {exc}\n")
        return EXIT_SOLVER
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
