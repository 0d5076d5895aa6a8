import io
import json
import os
import subprocess
import sys
from decimal import Decimal

import numpy as np
import pytest

from dpopt import cli
from dpopt.export import read_solution
from tests.conftest import PROBLEMS

TABLE1 = str(PROBLEMS / "gupte_sundararajan_table1.toml")


def run(capsys, *args):
    code = cli.main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_solve_prints_the_contract_fields(capsys):
    code, out, err = run(capsys, "solve", TABLE1)
    data = json.loads(out)
    assert code == 0 and err == ""
    for key in ("kind", "method", "solver", "status", "objective", "seconds", "alpha", "epsilon"):
        assert key in data
    assert set(data["certificate"]) >= {"max_privacy_loss", "target", "ok"}
    assert data["objective"] == pytest.approx(168 / 415, abs=1e-9) and data["certificate"]["ok"]


def test_compare_prints_one_object_per_method(capsys):
    code, out, _ = run(capsys, "compare", TABLE1)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and {r["method"] for r in rows} == {"lp", "interaction", "geometric", "factored"}
    exact = [r for r in rows if r["exact"]]
    assert all(r["objective"] == pytest.approx(168 / 415, abs=1e-9) for r in exact)


class _Terminal(io.StringIO):
    """A stderr that says it is a terminal (tqdm shows its bar only there)."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("timeout", [[], ["--timeout", "120"]], ids=["in_process", "child_processes"])
def test_compare_names_the_running_method_on_a_terminal_only(capsys, monkeypatch, timeout):
    """A method can run for minutes and the rows are printed only at the end, so on a terminal
    stderr shows a bar naming the method now running; a pipe or a file sees nothing."""
    code, out, err = run(capsys, "compare", TABLE1, *timeout)
    assert code == 0 and err == ""
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    code_tty, out_tty, _ = run(capsys, "compare", TABLE1, *timeout)
    shown = terminal.getvalue()
    assert code_tty == 0 and [json.loads(line)["method"] for line in out_tty.splitlines()] == [
        json.loads(line)["method"] for line in out.splitlines()]
    assert all(f"dpopt compare: running {name}" in shown for name in ("lp", "interaction", "geometric", "factored"))
    assert "/4 methods done" in shown and shown.endswith("\r")  # counted out of the four, then erased (leave=False)


def test_compare_prints_the_certified_rows_when_a_method_fails(capsys, monkeypatch):
    """geometric's solver fails and interaction's mechanism fails its certificate (both made to):
    lp's and factored's rows are still printed, each failure is one line, and the exit status is
    the worse one (4: uncertified)."""
    import dataclasses

    from dpopt.certificates import Certificate
    from dpopt.registry import REGISTRY, _load_methods
    from dpopt.validation import SolverError

    _load_methods()  # alone in its worker, no earlier solve has filled the registry
    methods = REGISTRY["count_query"]

    def failing(problem, solver, repair):
        raise SolverError("HIGHS", "Infeasible", "made to fail")

    def uncertified(problem, solver, repair):
        solution = methods["lp"].run(problem, None, True)
        return dataclasses.replace(solution, certificate=Certificate.measured(float("inf"), problem.epsilon, (0, 1, 0), 0.0, 0.0))

    monkeypatch.setitem(methods, "geometric", dataclasses.replace(methods["geometric"], run=failing))
    monkeypatch.setitem(methods, "interaction", dataclasses.replace(methods["interaction"], run=uncertified))
    code, out, err = run(capsys, "compare", TABLE1)
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == cli.EXIT_UNCERTIFIED
    assert {r["method"] for r in rows} == {"lp", "factored"} and all(r["certificate"]["ok"] for r in rows)
    assert all(r["ratio_to_optimum"] == pytest.approx(1.0, abs=1e-8) for r in rows)
    lines = sorted(err.splitlines())
    assert len(lines) == 2 and lines[0].startswith("dpopt: geometric solver failure: Solver HIGHS")
    assert lines[1].startswith("dpopt: interaction uncertified: ") and "measured loss inf" in lines[1]


def test_compare_skips_a_method_that_refuses_the_problem_as_it_runs(capsys, monkeypatch):
    """A refusal raised inside one method (not by its applies rule) costs the user that row only:
    the others are printed and the refusal is one line on stderr."""
    import dataclasses

    from dpopt.registry import REGISTRY, _load_methods
    from dpopt.validation import fail

    _load_methods()  # alone in its worker, no earlier solve has filled the registry
    methods = REGISTRY["count_query"]

    def refusing(problem, solver, repair):
        raise fail("n", "geometric", "made to refuse", problem.n)

    monkeypatch.setitem(methods, "geometric", dataclasses.replace(methods["geometric"], run=refusing))
    code, out, err = run(capsys, "compare", TABLE1)
    assert code == 0 and {json.loads(line)["method"] for line in out.splitlines()} == {"lp", "interaction", "factored"}
    assert err.splitlines() == [err.strip()] and err.startswith("dpopt: geometric skipped: ") and "made to refuse" in err


def test_compare_certifies_every_count_method_where_the_dense_g_underflows(capsys, tmp_path):
    """n epsilon = 800: geometric and interaction are held as G T, certified in log space (their dense
    matrices, with zeros beside non-zeros, failed their certificates and the whole compare exited 4)."""
    path = tmp_path / "big.toml"
    path.write_text('kind = "count_query"\nn = 80\nepsilon = 10\n')
    code, out, err = run(capsys, "compare", str(path))
    rows = {r["method"]: r for r in map(json.loads, out.splitlines())}
    assert code == 0 and err == "" and set(rows) == {"lp", "factored", "geometric", "interaction"}
    assert rows["interaction"]["objective"] == pytest.approx(rows["factored"]["objective"], rel=1e-6)


def test_compare_skips_a_method_too_large_for_memory(capsys, tmp_path, monkeypatch):
    path = tmp_path / "n400.toml"
    path.write_text('kind = "count_query"\nn = 400\nalpha = 0.9\n')
    monkeypatch.setenv("DPOPT_MEMORY_LIMIT", str(50 * 2**20))  # lp and interaction plan > 200 MB at n = 400
    code, out, err = run(capsys, "compare", str(path))
    assert code == 0 and {json.loads(line)["method"] for line in out.splitlines()} == {"geometric", "factored"}
    assert sorted(line.split()[1] for line in err.splitlines()) == ["interaction", "lp"] and "skipped" in err
    monkeypatch.setenv("DPOPT_MEMORY_LIMIT", "1000")  # nothing fits: bad input in one line, nothing printed
    code, out, err = run(capsys, "compare", str(path))
    assert code == cli.EXIT_BAD_INPUT and out == "" and len(err.splitlines()) == 1 and "'n'" in err


def test_compare_with_a_timeout_skips_the_methods_still_running(capsys, tmp_path):
    """n = 300, alpha = 0.9: the direct LPs take minutes; each method runs in its own process, and those
    not done within 10 s are stopped and named; the others' rows are the in-process ones. (3 s was too
    tight on a loaded machine: the closed form's process was stopped before it had imported dpopt.)"""
    path = tmp_path / "n300.toml"
    path.write_text('kind = "count_query"\nn = 300\nalpha = 0.9\n')
    code, out, err = run(capsys, "compare", str(path), "--timeout", "10")
    rows = {r["method"]: r for r in map(json.loads, out.splitlines())}
    assert code == 0 and set(rows) == {"geometric", "factored"}
    assert sorted(line.split()[1] for line in err.splitlines()) == ["interaction", "lp"] and err.count("skipped") == 2
    assert "within 10 s" in err
    code, out, _ = run(capsys, "compare", TABLE1, "--timeout", "120")
    isolated = {r["method"]: r["objective"] for r in map(json.loads, out.splitlines())}
    code_here, out_here, _ = run(capsys, "compare", TABLE1)
    assert code == code_here == 0 and isolated == pytest.approx({r["method"]: r["objective"] for r in map(json.loads, out_here.splitlines())}, rel=1e-12)


def test_compare_where_every_method_is_stopped_names_the_timeout(capsys):
    code, out, err = run(capsys, "compare", TABLE1, "--timeout", "0.001")
    assert code == cli.EXIT_BAD_INPUT and out == "" and "'timeout'" in err and len(err.splitlines()) == 1


def test_solve_with_a_timeout_is_the_in_process_solve_or_stops_writing_nothing(capsys, tmp_path):
    export = tmp_path / "t1.json"
    code, out, err = run(capsys, "solve", TABLE1, "--timeout", "120", "--export", str(export))
    code_here, out_here, _ = run(capsys, "solve", TABLE1)
    isolated, here = json.loads(out), json.loads(out_here)
    assert code == code_here == 0 and err == "" and isolated["export"] == str(export)
    assert {k: v for k, v in isolated.items() if k not in ("seconds", "export")} == {k: v for k, v in here.items() if k != "seconds"}
    assert read_solution(export).certificate.ok
    slow, stopped = tmp_path / "n300.toml", tmp_path / "never.json"
    slow.write_text('kind = "count_query"\nn = 300\nalpha = 0.9\n')  # the consumer LP takes minutes
    code, out, err = run(capsys, "solve", str(slow), "--method", "interaction", "--timeout", "2", "--export", str(stopped))
    assert code == cli.EXIT_BAD_INPUT and out == "" and "'timeout'" in err and len(err.splitlines()) == 1
    assert not stopped.exists()


@pytest.mark.parametrize("args", [["--method", "nosuch"], ["--method", "interaction", "--solver", "SCS"]])
def test_solve_with_a_timeout_fails_as_the_in_process_solve(capsys, args):
    # the child's error comes back whole: the same exit status and line (a bad method: 2; SCS inaccurate: 3)
    problem = str(PROBLEMS / "drug_company_lower_bound.toml")
    code, out, err = run(capsys, "solve", problem, *args, "--timeout", "300")
    code_here, out_here, err_here = run(capsys, "solve", problem, *args)
    assert code == code_here != 0 and out == out_here == "" and err == err_here and len(err.splitlines()) == 1


@pytest.mark.parametrize("value", ["0", "-1", "1e9"])
def test_compare_refuses_a_bad_timeout(capsys, value):
    code, out, err = run(capsys, "compare", TABLE1, "--timeout", value)
    assert code == cli.EXIT_BAD_INPUT and out == "" and "'timeout'" in err and len(err.splitlines()) == 1


def test_compare_refuses_a_solver_where_no_method_uses_one(capsys):
    code, out, err = run(capsys, "compare", str(PROBLEMS / "calibration_truncated_gg.toml"), "--solver", "SCS")
    assert code == cli.EXIT_BAD_INPUT and out == "" and "'solver'" in err and "no method that applies uses a solver" in err


def test_compare_refuses_an_unknown_solver_before_any_work(capsys):
    code, out, err = run(capsys, "compare", TABLE1, "--solver", "NOPE")
    assert code == cli.EXIT_BAD_INPUT and out == "" and "'solver'" in err and len(err.splitlines()) == 1


def test_sample_is_seeded(capsys):
    args = ("sample", TABLE1, "--true-value", "2", "--count", "25", "--seed", "4")
    first = json.loads(run(capsys, *args)[1])
    second = json.loads(run(capsys, *args)[1])
    assert first["releases"] == second["releases"] and len(first["releases"]) == 25
    multi = json.loads(run(capsys, "sample", str(PROBLEMS / "multi_level_release.toml"), "--true-value", "3", "--seed", "1")[1])
    assert len(multi["releases"][0]) == 3


def test_a_finite_query_release_is_for_a_dataset_and_says_whose_value_it_holds(capsys):
    # the row of a finite universe's mechanism is a dataset, and datasets may share a value; until
    # 2026-11-29 nothing in the output said so, and --true-value 4 on values 0, 1, 2, 4, 5, 8
    # released for dataset 4 (value 5) where a user meant the value 4
    path = str(PROBLEMS / "finite_query_explicit.toml")
    data = json.loads(run(capsys, "sample", path, "--true-value", "3", "--count", "2", "--seed", "1")[1])
    assert data["true_value"] == 3 and data["query_value"] == 4.0
    for value in ("6", "-1", "2.5"):
        code, out, err = run(capsys, "sample", path, "--true-value", value)
        assert code == cli.EXIT_BAD_INPUT and out == "" and "dataset's index in the universe, 0..5" in err


@pytest.mark.parametrize("value", ["-1e3", "-2.5E+2", "-7"])
def test_a_negative_true_value_in_any_notation_is_a_value_not_an_option(capsys, value):
    # argparse reads "-1e3" after an option as an option of its own ("expected one argument")
    # unless it is plain decimal; until 2026-11-28 only --true-value=-1e3 worked
    path = str(PROBLEMS / "noise_adding_neighbouring_set.toml")
    code, out, err = run(capsys, "sample", path, "--true-value", value, "--count", "2", "--seed", "1")
    assert code == 0 and err == ""
    assert json.loads(out)["releases"] == json.loads(run(capsys, "sample", path, f"--true-value={value}", "--count", "2", "--seed", "1")[1])["releases"]


@pytest.mark.parametrize("value", ["123456789012345678", "1152921504606847105", "-9223372036854775808", "1e30"])
def test_an_integer_true_value_is_read_exactly_and_released_around_itself(capsys, value):
    """Until 2026-11-28 --true-value was read as a double: 123456789012345678 became ...680, and
    the neighbours 2**60 + 128 and 2**60 + 129 (the second value here) became true values 256
    apart, which geometric noise for sensitivity 1 does not hide; -2**63 wrapped to releases
    near +9.2e18 (int64), and 1e30 ended in an internal OverflowError."""
    path = str(PROBLEMS / "noise_adding_staircase.toml")
    code, out, err = run(capsys, "sample", path, f"--true-value={value}", "--count", "200", "--seed", "3")
    assert code == 0 and err == ""
    data = json.loads(out)
    true = int(Decimal(value))
    assert data["true_value"] == true
    offsets = [release - true for release in data["releases"]]
    assert all(isinstance(r, int) for r in data["releases"]) and max(map(abs, offsets)) < 200 and min(offsets) < 0 < max(offsets)


@pytest.mark.parametrize("problem", ["calibration_discrete_gaussian", "noise_adding_neighbouring_set"])
def test_a_decimal_true_value_is_read_exactly(capsys, problem):
    """Until 2026-11-29 a non-integer --true-value was read as a double: 0.05 on a grid of 0.1 was
    placed as 0.05000000000000000277 (the cell of 0.1, not 0's), and the neighbours 2**60 + 127.9
    and 2**60 + 128.9 became true values 256 apart. Releases now equal the API's for the exact Fraction."""
    from fractions import Fraction

    import dpopt
    from dpopt.problem_files import load_problem

    path = str(PROBLEMS / f"{problem}.toml")
    solution = dpopt.solve(load_problem(path))
    moved = 0
    for text in ["0.05", "1152921504606847103.9", "1152921504606847104.9"]:
        code, out, err = run(capsys, "sample", path, f"--true-value={text}", "--count", "300", "--seed", "3")
        assert code == 0 and err == "" and f'"true_value": {text},' in out  # the number as written
        releases = json.loads(out)["releases"]
        assert releases == solution.sample(Fraction(Decimal(text)), 300, rng=3).tolist()
        moved += releases != solution.sample(float(text), 300, rng=3).tolist()
    assert moved >= 2  # the double would have moved them


def test_a_true_value_with_too_many_decimal_places_is_refused(capsys):
    code, out, err = run(capsys, "sample", str(PROBLEMS / "calibration_discrete_gaussian.toml"), "--true-value=1e-100000000")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "decimal places" in err


@pytest.mark.parametrize("problem", [TABLE1, str(PROBLEMS / "finite_query_explicit.toml")])
@pytest.mark.parametrize(("value", "shown"), [("1.5", "1.5"), ("-0.125", "-0.125"), ("2.50", "2.5")])
def test_a_true_value_that_is_not_an_index_is_shown_as_written(capsys, problem, value, shown):
    """Until 2026-11-29 the refusal read "Got Fraction(3, 2) instead": the exact reading of the
    value leaked into the message."""
    code, out, err = run(capsys, "sample", problem, f"--true-value={value}", "--seed", "1")
    assert code == 2 and out == "" and err.rstrip().endswith(f"Got {shown} instead.") and "Fraction" not in err


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet", ".npz"])
def test_export(capsys, tmp_path, suffix):
    target = tmp_path / f"m{suffix}"
    code, out, _ = run(capsys, "solve", TABLE1, "--export", str(target))
    assert code == 0 and target.exists() and json.loads(out)["export"] == str(target)


@pytest.mark.parametrize(
    "args,needle",
    [
        (("solve", "missing.toml"), "'PROBLEM'"),
        (("solve", TABLE1, "--method", "nope"), "'method'"),
        (("solve", TABLE1, "--solver", "NOPE"), "'solver'"),
        (("solve", TABLE1, "--export", "out.xlsx"), "'export'"),
        (("sample", TABLE1, "--true-value", "9"), "'true_value'"),
        (("sample", TABLE1, "--true-value", "1", "--count", "0"), "'count'"),
        (("sample", TABLE1, "--true-value", "x"), "invalid number"),
        (("sample", TABLE1, "--true-value", "1e999"), "magnitude at most 2**1023"),
        (("sample", TABLE1, "--true-value", "nan"), "finite"),
        (("sample", TABLE1, "--true-value", "1.5"), "'true-value'"),
        (("sample", TABLE1), "'true-value'"),
        (("solve", str(PROBLEMS / "dx_example1.toml"), "--solver", "HIGHS"), "'solver'"),  # a cone HiGHS lacks: exit 3 until 2026-11-28
        (("frobnicate",), "invalid choice"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, args, needle):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err


def test_bad_field_in_file(capsys, tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('kind = "count_query"\nn = 3\nalpha = 1.5\n')
    code, _, err = run(capsys, "solve", str(bad))
    assert code == 2 and "The 'alpha' parameter of count_query must be a float in (0, 1). Got 1.5 instead." in err


def test_solver_failure_exits_3_and_exports_nothing(capsys, tmp_path, monkeypatch):
    import dpopt.solvers

    monkeypatch.setattr(dpopt.solvers, "_attempt", lambda program, solver, options: "infeasible")
    target = tmp_path / "m.csv"
    code, out, err = run(capsys, "solve", TABLE1, "--method", "lp", "--export", str(target))
    assert code == 3 and out == "" and "HIGHS" in err and "infeasible" in err
    assert not target.exists()


def test_a_solution_cvxpy_cannot_unpack_is_one_readable_line(capsys, monkeypatch):
    """cvxpy raises ValueError("Cannot unpack invalid solution: Solution(status=UNKNOWN, ...,
    attr={...<highspy._core.HighsInfo object at 0x...>})") when HiGHS rejects a model (the grid
    LP at epsilon = 40 did); the message keeps the status and drops the dump."""
    import cvxpy as cp

    def unpack_error(self, *args, **kwargs):
        raise ValueError("Cannot unpack invalid solution: Solution(status=UNKNOWN, opt_val=None, primal_vars={}, "
                         "dual_vars={}, attr={'solver_specific_stats': <highspy._core.HighsInfo object at 0x7f24>})")

    monkeypatch.setattr(cp.Problem, "solve", unpack_error)
    code, out, err = run(capsys, "solve", TABLE1, "--method", "lp")
    assert code == 3 and out == "" and err.count("\n") == 1
    assert "no solution to read (solver status UNKNOWN)" in err and "0x7f24" not in err


def test_console_entry_point_in_a_subprocess(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "dpopt.cli", "solve", str(tmp_path / "none.toml")], capture_output=True, text=True
    )
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def test_factored_solution_reports_bounds_and_exports_sparse(capsys, tmp_path):
    import numpy as np

    target = tmp_path / "remap.npz"
    code, out, _ = run(capsys, "solve", TABLE1, "--export", str(target))
    data = json.loads(out)
    assert code == 0 and data["method"] == "factored"
    assert data["lower_bound"] <= data["objective"] == data["upper_bound"]
    assert data["upper_bound"] - data["lower_bound"] <= 1e-9 * data["upper_bound"]
    with np.load(target) as arrays:
        assert set(arrays.files) == {"from", "to", "probability", "metadata"}
        assert json.loads(arrays["metadata"].tobytes())["summary"]["lower_bound"] == data["lower_bound"]
    dense = tmp_path / "dense.csv"
    assert run(capsys, "solve", TABLE1, "--export", str(dense), "--dense")[0] == 0
    assert dense.read_text().splitlines()[0].startswith("true,")


# The command-line synopsis of DESIGN.md ("Command line"), copied: users' scripts and the
# project's checks call these forms, so each must parse exactly as written there.
CONTRACT_FORMS = (
    ["solve", "P.toml", "--method", "lp", "--solver", "HIGHS", "--export", "out.csv"],
    ["compare", "P.toml"],
    ["sample", "P.toml", "--true-value", "3", "--count", "5", "--seed", "1"],
    ["sample", "P.toml", "--true-value", "3", "--secure"],
    ["audit", "P.toml", "--method", "lp", "--samples", "1000", "--seed", "2"],
    ["sweep", "S.toml", "--output", "out.parquet", "--workers", "2", "--scheduler", "tcp://127.0.0.1:8786"],
)


@pytest.mark.parametrize("argv", CONTRACT_FORMS, ids=[form[0] for form in CONTRACT_FORMS])
def test_every_contract_option_parses(argv):
    from dpopt.cli import _parser

    args = _parser().parse_args(argv)
    assert args.command == argv[0]


def test_audit_samples_and_draws_are_one_option():
    from dpopt.cli import _parser

    parse = _parser().parse_args
    assert parse(["audit", "P.toml", "--samples", "1234"]).samples == 1234
    assert parse(["audit", "P.toml", "--draws", "1234"]).samples == 1234


def test_sample_without_an_exact_sampler_names_the_float_flag(capsys, tmp_path):
    problem = tmp_path / "v.toml"  # a real noise density without a release_grid: no exact sampler
    problem.write_text('kind = "noise_adding"\nneighbouring_set = [[0, 1], [1000, 1001]]\nepsilon = 1.0\ndelta = 10.0\n')
    problem = str(problem)
    code, out, err = run(capsys, "sample", problem, "--true-value", "1", "--count", "2", "--seed", "1")
    assert code == 2 and out == "" and err.count("\n") == 1 and "--float" in err and "release_grid" in err
    code, out, err = run(capsys, "sample", problem, "--true-value", "1", "--count", "2", "--seed", "1", "--float")
    assert code == 0 and err == "" and len(json.loads(out)["releases"]) == 2


def test_a_float_only_release_is_refused_before_any_solving(capsys, monkeypatch):
    # every method auto could run has only the floating-point sampler: nothing is solved
    import dpopt.cli

    def no_solve(*args, **kwargs):
        raise AssertionError("solved before refusing")

    monkeypatch.setattr(dpopt.cli, "solve", no_solve)
    code, out, err = run(capsys, "sample", str(PROBLEMS / "dx_example1.toml"), "--count", "2", "--seed", "1")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--float" in err and "draw from alternating, which has no exact sampler" in err and "release_grid" in err
    code, out, err = run(capsys, "sample", str(PROBLEMS / "calibration_gaussian_analytic.toml"), "--true-value", "3", "--count", "2",
                         "--method", "closed_form")
    assert code == 2 and "draw from closed_form" in err and "release_grid" not in err
    assert err.count("\n") == 1 and 'mechanism = "discrete_gaussian" with a grid' in err  # the Gaussian that releases exactly


def test_an_export_of_a_matrix_too_large_to_build_is_refused_before_solving(capsys, tmp_path, monkeypatch):
    """Integer noise with sensitivity 10^5 is solved and sampled without its matrix (2,000 GiB);
    an export of it is refused in one line before any solving, and nothing is written."""
    path = tmp_path / "wide.toml"
    path.write_text('kind = "noise_adding"\nsensitivity = 100000\nepsilon = 1.0\n')
    solved = []
    monkeypatch.setattr(cli, "solve", lambda *args, **kwargs: solved.append(args))
    code, out, err = run(capsys, "solve", str(path), "--export", str(tmp_path / "wide.csv"))
    assert code == cli.EXIT_BAD_INPUT and out == "" and "'export'" in err and len(err.strip().splitlines()) == 1
    assert solved == [] and list(tmp_path.iterdir()) == [path]
    monkeypatch.undo()
    code, out, _ = run(capsys, "sample", str(path), "--true-value", "7", "--count", "3", "--seed", "1")
    assert code == 0 and len(json.loads(out)["releases"]) == 3


def test_an_export_folder_where_nothing_can_be_written_is_refused_before_solving(capsys, tmp_path, monkeypatch):
    """A read-only folder (simulated: the suite may run as root) was found only when the export
    was written, after the solve, until 2026-11-29; a folder in the export's place too."""
    import errno

    import dpopt.export

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, "Read-only file system")

    solved = []
    monkeypatch.setattr(cli, "solve", lambda *args, **kwargs: solved.append(args))
    (tmp_path / "taken.csv").mkdir()
    code, out, err = run(capsys, "solve", str(PROBLEMS / "gupte_sundararajan_table1.toml"), "--export", str(tmp_path / "taken.csv"))
    assert code == cli.EXIT_BAD_INPUT and out == "" and "it is a folder" in err and err.count("\n") == 1
    monkeypatch.setattr(dpopt.export.tempfile, "mkstemp", read_only)
    code, out, err = run(capsys, "solve", str(PROBLEMS / "gupte_sundararajan_table1.toml"), "--export", str(tmp_path / "m.csv"))
    assert code == cli.EXIT_BAD_INPUT and out == "" and "Read-only file system" in err and err.count("\n") == 1
    assert solved == [] and sorted(p.name for p in tmp_path.iterdir()) == ["taken.csv"]


def test_sample_hands_a_whole_true_value_to_an_integer_calibrated_mechanism(capsys, tmp_path):
    """--true-value is read as a number; the geometric calibration's sampler takes integers, so
    ``--true-value 3`` must reach it as 3 (it was refused as "3.0 is not an integer")."""
    path = tmp_path / "geometric.toml"
    path.write_text('kind = "calibration"\nmechanism = "geometric"\nepsilon = 1\n')
    code, out, err = run(capsys, "sample", str(path), "--true-value", "3", "--count", "5", "--seed", "2")
    data = json.loads(out)
    assert code == 0 and err == "" and data["true_value"] == 3 and all(isinstance(r, int) for r in data["releases"])
    code, out, err = run(capsys, "sample", str(path), "--true-value", "0.5", "--count", "5", "--seed", "2")
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "'true_value'" in err


@pytest.mark.parametrize("timeout", [None, "60"])
def test_compare_refuses_in_one_line_what_the_only_method_refuses_as_it_runs(capsys, tmp_path, timeout):
    """The discrete Gaussian's grid variance is only known once calibrated; with --timeout the
    refusal came back from the method's process as an internal error (exit 1)."""
    path = tmp_path / "grid.toml"
    path.write_text('kind = "calibration"\nmechanism = "discrete_gaussian"\nepsilon = 0.001\nsensitivity = 100\n'
                    'delta = 0.01\ngrid = 1.0\n')
    code, out, err = run(capsys, "compare", str(path), *(["--timeout", timeout] if timeout else []))
    assert code == 2 and out == "" and len(err.splitlines()) == 1 and "grid variance" in err


TABLE1_FILE = str(PROBLEMS / "gupte_sundararajan_table1.toml")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_stdout_that_cannot_be_written_is_one_line_not_a_traceback():
    # a full disk ended in an OSError traceback; a reader that went away (| head) likewise
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, "-m", "dpopt.cli", "solve", TABLE1_FILE], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "No space left" in done.stderr
    reader_gone = subprocess.Popen([sys.executable, "-m", "dpopt.cli", "sample", TABLE1_FILE, "--true-value", "1", "--count",
                                    "200000", "--seed", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    reader_gone.stdout.close()
    err = reader_gone.stderr.read()
    reader_gone.stderr.close()
    assert reader_gone.wait(timeout=120) == 1 and err.count("\n") == 1 and "Broken pipe" in err


def test_a_closed_stdout_is_refused_before_any_work():
    # Python's sys.stdout was None: an internal error after the solve; fd 1 free for the next file opened
    done = subprocess.run([sys.executable, "-c", "import os, sys; os.close(1); sys.stdout = None; from dpopt.cli import main; "
                           f"sys.exit(main(['solve', {TABLE1_FILE!r}]))"], stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "stdout is closed" in done.stderr


@pytest.mark.parametrize("extra", [[], ["--timeout", "300"]])
def test_ctrl_c_stops_a_solve_inside_the_solver_at_once(tmp_path, extra):
    # Python sees a signal only between bytecodes of its main thread: a solve inside HiGHS's
    # C++ code ran on for minutes after Ctrl-C, and a --timeout solve's process outlived dpopt
    import signal
    import time

    problem = tmp_path / "slow.toml"
    problem.write_text('kind = "count_query"\nn = 400\nalpha = 0.9\nloss = "absolute"\n')  # lp: minutes
    command = subprocess.Popen([sys.executable, "-m", "dpopt.cli", "solve", str(problem), "--method", "lp", *extra],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        time.sleep(8)  # imports done, the LP is in HiGHS
        assert command.poll() is None
        command.send_signal(signal.SIGINT)
        # communicate ends when every process holding the pipes has ended: children included
        out, err = command.communicate(timeout=30)
    finally:
        if command.poll() is None:
            command.kill()
            command.communicate()
    assert command.returncode == 130 and out == ""
    assert err.count("\n") == 1 and err.startswith("dpopt: interrupted")


@pytest.mark.parametrize("suffix", [".csv", ".json", ".parquet", ".npz"])
@pytest.mark.parametrize("problem,true_value", [(TABLE1, "2"), (str(PROBLEMS / "finite_query_explicit.toml"), "3")])
def test_sample_reads_an_export_and_draws_what_the_solve_would(capsys, tmp_path, suffix, problem, true_value):
    """A release from the exported mechanism itself, verified on reading (until 2026-11-29 the
    command line re-solved a problem file; an export was refused as invalid TOML). With one seed
    the draws are the problem file's: the export holds that mechanism exactly."""
    target = tmp_path / f"m{suffix}"
    assert run(capsys, "solve", problem, "--export", str(target))[0] == 0
    args = ("--true-value", true_value, "--count", "40", "--seed", "7")
    code, out, err = run(capsys, "sample", str(target), *args)
    assert code == 0 and err == ""
    exported, solved = json.loads(out), json.loads(run(capsys, "sample", problem, *args)[1])
    assert exported["export"] == str(target) and "export" not in solved
    assert exported["releases"] == solved["releases"] and exported["certificate"]["ok"]
    code, out, _ = run(capsys, "audit", str(target), "--samples", "2000")
    assert code == 0 and json.loads(out)["export"] == str(target) and json.loads(out)["passed"]


def test_sample_refuses_an_edited_export_and_a_solve_option_beside_one(capsys, tmp_path):
    target = tmp_path / "m.json"
    run(capsys, "solve", TABLE1, "--export", str(target))
    for option in (("--method", "lp"), ("--solver", "HIGHS")):
        code, out, err = run(capsys, "sample", str(target), "--true-value", "1", *option)
        assert code == cli.EXIT_BAD_INPUT and out == "" and f"'{option[0][2:]}'" in err and "reading an export" in err
    data = json.loads(target.read_text())
    data["summary"]["objective"] /= 2  # a better objective than was solved for
    target.write_text(json.dumps(data))
    code, out, err = run(capsys, "sample", str(target), "--true-value", "1")
    assert code == cli.EXIT_BAD_INPUT and out == "" and len(err.splitlines()) == 1 and "digest" in err
    code, out, err = run(capsys, "sample", str(tmp_path / "missing.npz"), "--true-value", "1")
    assert code == cli.EXIT_BAD_INPUT and out == "" and "'PROBLEM'" in err and "existing problem file or export" in err


@pytest.mark.parametrize("command", ["solve", "compare"])
def test_solve_and_compare_refuse_an_export_naming_the_commands_that_read_one(capsys, tmp_path, command):
    target = tmp_path / "m.npz"
    run(capsys, "solve", TABLE1, "--export", str(target))
    code, out, err = run(capsys, command, str(target))
    assert code == cli.EXIT_BAD_INPUT and out == "" and "dpopt sample" in err and "'PROBLEM'" in err


@pytest.mark.parametrize("name,suffix,method", [("calibration_gaussian_analytic", ".csv", []), ("dx_example1", ".npz", []),
                                                ("statistical_marginal", ".parquet", []), ("noise_adding_neighbouring_set", ".csv", []),
                                                ("multi_level_release", ".npz", ["--method", "factored"])])
def test_an_export_format_a_parameter_solution_cannot_take_is_refused_before_the_solve(capsys, tmp_path, monkeypatch, name, suffix, method):
    """Until 2026-11-29 only a calibration was checked first, and allowed .csv, which its export then
    refused after the solve; a d_X or neighbouring-set problem solved (minutes, for large ones) first."""
    monkeypatch.setattr(cli, "solve", lambda *args, **kwargs: pytest.fail("solved before refusing the export"))
    target = tmp_path / f"m{suffix}"
    code, out, err = run(capsys, "solve", str(PROBLEMS / f"{name}.toml"), "--export", str(target), *method)
    assert code == cli.EXIT_BAD_INPUT and out == "" and "'export'" in err and "a .json path" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args,needle", [(("sample", "missing.npz", "--true-value", "1", "--count", "0"), "'count'"),
                                         (("sample", "missing.json", "--true-value", "1", "--seed", "-3"), "'seed'"),
                                         (("audit", "missing.parquet", "--samples", "0"), "'samples'"),
                                         (("audit", "missing.csv", "--confidence", "2"), "'confidence'")])
def test_draw_options_are_refused_before_an_export_is_read(capsys, args, needle):
    """An export may be gigabytes: a bad count or seed is found first (the file here does not even exist)."""
    code, out, err = run(capsys, *args)
    assert code == cli.EXIT_BAD_INPUT and out == "" and needle in err


def test_a_finite_universe_with_whole_outputs_releases_integers(capsys):
    """Triangle counts and the like were released as 3.0 (the universe's values are floats) until
    2026-11-29, where a count query releases 3; outputs that are not all whole stay floats."""
    import dpopt

    path = str(PROBLEMS / "finite_query_explicit.toml")
    data = json.loads(run(capsys, "sample", path, "--true-value", "3", "--count", "20", "--seed", "2")[1])
    assert all(type(r) is int for r in data["releases"]) and type(data["query_value"]) is int and data["query_value"] == 4
    halves = dpopt.FiniteQuery(universe={"type": "explicit", "values": [0, 0.5, 1], "neighbours": [[0, 1], [1, 2]]}, epsilon=1.0)
    releases = dpopt.solve(halves).sample(2, 50, rng=1)
    assert releases.dtype == np.float64 and set(releases) <= {0.0, 0.5, 1.0}
    whole = dpopt.FiniteQuery(universe={"type": "explicit", "values": [0, 2, 7], "neighbours": [[0, 1], [1, 2]]}, epsilon=1.0)
    assert dpopt.solve(whole).sample(1, 50, rng=1).dtype == np.int64


def test_version_prints_the_installed_version_and_matches_the_package(capsys):
    """``dpopt --version`` (until 2026-11-29 a usage error, exit 2): one line on stdout, exit 0,
    the same version as ``dpopt.__version__`` and the installed distribution."""
    from importlib.metadata import version

    import dpopt

    code, out, err = run(capsys, "--version")
    assert code == 0 and err == ""
    assert out == f"dpopt {version('dpopt')}\n" == f"dpopt {dpopt.__version__}\n"


def test_sample_without_a_seed_draws_from_the_secure_source(capsys, monkeypatch):
    """No --seed meant a PCG64 Generator seeded from the OS (JSON "source": PCG64) until
    2026-11-29; a release now reads secrets unless a seed asks for reproducible draws."""
    import secrets

    read = []
    real = secrets.token_bytes
    monkeypatch.setattr(secrets, "token_bytes", lambda n: read.append(n) or real(n))
    code, out, _ = run(capsys, "sample", TABLE1, "--true-value", "1", "--count", "4")
    assert code == 0 and json.loads(out)["source"] == "secrets" and read
    read.clear()
    code, out, _ = run(capsys, "sample", TABLE1, "--true-value", "1", "--count", "4", "--seed", "3")
    assert code == 0 and json.loads(out)["source"] == "numpy.random.Generator(PCG64)" and not read


def test_sample_takes_the_data_graph_for_a_graph_atlas_universe(capsys, tmp_path):
    """A graph researcher has a graph, not its class's index in the atlas: --true-graph finds the
    index (dpopt.universes.atlas_class) and releases exactly what --true-value with it releases."""
    from dpopt.universes import atlas_class

    problem = tmp_path / "atlas.toml"
    problem.write_text('kind = "finite_query"\nepsilon = 1.0\n[universe]\ntype = "graph_atlas"\nnodes = 5\nstatistic = "triangles"\n')
    code, out, _ = run(capsys, "sample", str(problem), "--true-graph", "3-4 4-2, 2-3", "--count", "6", "--seed", "4")
    by_graph = json.loads(out)
    index = atlas_class([[3, 4], [4, 2], [2, 3]], 5)
    assert code == 0 and by_graph["true_value"] == index and by_graph["query_value"] == 1
    assert by_graph["true_graph"] == [[3, 4], [4, 2], [2, 3]]
    code, out, _ = run(capsys, "sample", str(problem), "--true-value", str(index), "--count", "6", "--seed", "4")
    assert code == 0 and json.loads(out)["releases"] == by_graph["releases"]
    for argv, needle in (
        (["--true-graph", "0-5"], "'true-graph'"),                  # node 5 of a 5-node universe
        (["--true-graph", "1-1"], "'true-graph'"),                  # a self-loop
        (["--true-graph", "0_1"], "--true-graph: edges written u-v"),
        (["--true-graph", "0-1", "--true-value", "2"], "not allowed with"),
    ):
        code, out, err = run(capsys, "sample", str(problem), *argv)
        assert code == 2 and out == "" and err.count("\n") == 1 and needle in err
    code, _, err = run(capsys, "sample", str(PROBLEMS / "finite_query_explicit.toml"), "--true-graph", "0-1")
    assert code == 2 and "only for a finite_query on a graph_atlas universe" in err
