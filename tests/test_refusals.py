"""What dpopt refuses, class by class (issue 12): one line, exit 2, naming the field, before any work.

Each case is one class of defect a new user hit; the fuzz tests (test_fuzz_inputs.py)
explore the same classes at random.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys

import pytest

import dpopt
from dpopt.cli import main
from dpopt.validation import InvalidParameterError, SolverError
from tests.conftest import PROBLEMS

TABLE1 = str(PROBLEMS / "gupte_sundararajan_table1.toml")


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def problem_file(tmp_path, text: str | bytes, name: str = "p.toml") -> str:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return str(path)


CASES = {
    # class 5: files that are not UTF-8 text, or never end
    "binary": (b"\x00\xff\xfe kind", "'PROBLEM'"),
    "latin-1": ('kind = "count_query"\nn = 3\nalpha = 0.5\ntitle = "caf\xe9"\n'.encode("latin-1"), "'PROBLEM'"),
    # class 6: sizes estimated before work
    "n = 10**9": ('kind = "count_query"\nn = 1000000000\nalpha = 0.5\n', "'n'"),
    "n = 10**6": ('kind = "count_query"\nn = 1000000\nalpha = 0.5\n', "'n'"),
    "huge sensitivity": ('kind = "noise_adding"\nsensitivity = 1000000000\nepsilon = 1.0\n', "'sensitivity'"),
    "huge window": ('kind = "noise_adding"\nsensitivity = 2\nepsilon = 1.0\nwindow = 100000000000\n', "'window'"),
    # TOML integers have no size limit: the memory estimate's float arithmetic overflowed (exit 1 until 2026-11-28)
    "sensitivity 10**400": (f'kind = "noise_adding"\nsensitivity = {10**400}\nepsilon = 1.0\n', "'sensitivity'"),
    "window 10**400": (f'kind = "noise_adding"\nsensitivity = 2\nepsilon = 1.0\nwindow = {10**400}\n', "'window'"),
    "huge p": ('kind = "calibration"\nmechanism = "truncated_generalized_gaussian"\nepsilon = 1.0\np = 1000000\nlower = 0.0\nupper = 100.0\n', "'p'"),
    "huge multi-level": ('kind = "multi_level_release"\nn = 100000000\nalphas = [0.2, 0.5]\n', "'n'"),
    # class 7: strings and ragged arrays in d_X fields
    "query string": ('kind = "dx_linear_query"\nn = 2\nquery = "abc"\nmetric = { type = "uniform" }\n', "'query'"),
    "ragged query": ('kind = "dx_linear_query"\nn = 2\nquery = [[1, 0], [1]]\nmetric = { type = "uniform" }\n', "'query'"),
    "string coordinates": ('kind = "dx_linear_query"\nn = 2\nquery = [1, 0]\nmetric = { type = "euclidean", coordinates = [[0], ["x"]] }\n', "'coordinates'"),
    "all-inf metric": ('kind = "dx_linear_query"\nn = 2\nquery = [1, 0]\nmetric = { type = "matrix", values = [[0, inf], [inf, 0]] }\n', "'metric'"),
    # class 2 and 11: NaN and numeric strings never enter
    "nan edge weight": ('kind = "dx_linear_query"\nn = 3\nquery = [1, 0, 1]\nmetric = { type = "graph", edges = [[0, 1, nan], [1, 2, 1.0]] }\n', "'edges'"),
    "nan loss table": ('kind = "count_query"\nn = 1\nalpha = 0.5\nloss = [[0, nan], [1, 0]]\n', "'loss'"),
    "numeric strings": ('kind = "dx_linear_query"\nn = 2\nquery = [1, 0]\nmetric = { type = "dates", values = ["1", "2"] }\n', "'values'"),
    "epsilons 1e-300": ('kind = "multi_level_release"\nn = 4\nepsilons = [1e-300]\n', "'epsilons'"),
    # class 9: an epsilon whose noise cannot be represented is refused, not certified false
    "noise epsilon 700": ('kind = "noise_adding"\nsensitivity = 3\nepsilon = 700.0\n', "'epsilon'"),
    # class 14: messages name the field as written
    "missing field": ('kind = "count_query"\nalpha = 0.5\n', "'n'"),
    "unhashable kind": ('kind = ["x"]\n', "'kind'"),
    "negative budget": ('kind = "dx_linear_query"\nn = 2\nquery = [1, 0]\n[metric]\ntype = "attribute"\nrecords = [["a"], ["b"]]\nbudgets = { a = -1.0, b = 1.0 }\n', "'budgets'"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_problem_files_exit_2_with_one_line(tmp_path, case):
    text, needle = CASES[case]
    code, out, err = run("solve", problem_file(tmp_path, text))
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and needle in err and "Traceback" not in err, err


@pytest.mark.parametrize("path", ["/dev/zero", "/", "/nonexistent/p.toml"])
def test_special_paths_are_refused_unread(path):
    code, out, err = run("solve", path)
    assert (code, out) == (2, "") and "'PROBLEM'" in err and err.count("\n") == 1


def test_oversized_problem_file(tmp_path):
    code, _, err = run("solve", problem_file(tmp_path, 'kind = "count_query"\n' + "#" * (2 << 20) + "\n"))
    assert code == 2 and "bytes" in err


def test_a_metric_file_is_never_echoed(tmp_path):
    secret = tmp_path / "secret.csv"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    text = f'kind = "dx_linear_query"\nn = 2\nquery = [1, 0]\nmetric = {{ type = "csv", path = "{secret}" }}\n'
    code, _, err = run("solve", problem_file(tmp_path, text))
    assert code == 2 and "metric.path" in err and "root:x" not in err


@pytest.mark.parametrize(
    "args,needle",
    [
        (("sample", TABLE1, "--true-value", "nan"), "finite"),
        (("sample", TABLE1, "--true-value", "inf"), "finite"),
        # each float option is named by its own name (all three once said "--true-value")
        (("audit", TABLE1, "--confidence", "nan"), "--confidence: a finite number"),
        (("compare", TABLE1, "--timeout", "inf"), "--timeout: a finite number"),
        (("sweep", TABLE1, "--output", "x.parquet", "--timeout", "nan"), "--timeout: a finite number"),
        (("sample", TABLE1, "--true-value", "1", "--count", str(10**12)), "'count'"),
        (("sample", TABLE1, "--true-value", "1", "--count", str(10**8), "--secure"), "'count'"),
        (("sample", str(PROBLEMS / "dx_example1.toml"), "--true-value", "3"), "'true-value'"),
        (("solve", TABLE1, "--dense"), "'dense'"),  # without --export it would be ignored
        (("solve", TABLE1, "--export", ""), "'export'"),
        (("solve", TABLE1, "--export", "/proc/dpopt.csv"), "'export'"),
        (("solve", TABLE1, "--export", "/sys/dpopt.json"), "'export'"),
        (("solve", str(PROBLEMS / "calibration_gaussian_analytic.toml"), "--export", "cal.csv"), "'export'"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, needle):
    code, out, err = run(*args)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and needle in err, err


def test_api_refuses_a_solver_that_is_not_a_name():
    with pytest.raises(InvalidParameterError, match="'solver'"):
        dpopt.solve(dpopt.CountQuery(n=3, alpha=0.25), "lp", solver=5)
    with pytest.raises(InvalidParameterError, match="'method'"):
        dpopt.solve(dpopt.CountQuery(n=3, alpha=0.25), ["lp"])
    with pytest.raises(InvalidParameterError, match="'n'"):
        dpopt.CountQuery(n=10**12, alpha=0.5)


def test_auto_falls_back_to_the_next_exact_method_and_says_so(monkeypatch):
    """Class 10: n = 3, epsilon = 40 -- when the chosen exact method fails, auto tries the next."""
    from dpopt.registry import REGISTRY, methods_for

    methods_for(dpopt.CountQuery(n=3, alpha=0.5))  # loads the registry

    def broken(problem, solver, repair):
        raise SolverError("HIGHS", "Not Set", "(column generation master)")

    factored = REGISTRY["count_query"]["factored"]
    monkeypatch.setitem(REGISTRY["count_query"], "factored", factored.__class__(**{**factored.__dict__, "run": broken}))
    solution = dpopt.solve(dpopt.CountQuery(n=3, epsilon=40.0))
    assert solution.method != "factored" and solution.exact and solution.certificate.ok
    assert "factored" in solution.details["auto_fallbacks"][0]


def test_n3_epsilon_40_is_solved_by_auto():
    solution = dpopt.solve(dpopt.CountQuery(n=3, epsilon=40.0))
    assert solution.certificate.ok and solution.exact
    assert solution.objective == pytest.approx(dpopt.solve(dpopt.CountQuery(n=3, epsilon=40.0), "lp").objective, abs=1e-12)


def test_stdout_is_only_json_even_when_a_library_prints(monkeypatch, capfd):
    """C-level and Python-level prints during the work go to stderr, never before the JSON."""
    import ctypes

    import dpopt.registry as registry

    real = registry.solve

    def noisy(*args, **kwargs):
        print("python-level chatter")
        ctypes.CDLL(None).printf(b"C-level chatter\n")
        ctypes.CDLL(None).fflush(None)
        return real(*args, **kwargs)

    monkeypatch.setattr("dpopt.cli.solve", noisy)
    assert main(["solve", TABLE1]) == 0
    out, err = capfd.readouterr()
    assert json.loads(out)["certificate"]["ok"] and "chatter" in err and "chatter" not in out


def test_highs_banner_never_reaches_stdout_of_a_fresh_process():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "dpopt.cli", "compare", TABLE1], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert all(line.startswith("{") for line in done.stdout.splitlines())
    assert "HiGHS" not in done.stdout


def test_bounds_beyond_float_resolution_of_the_sensitivity_are_refused():
    """Found by the explore fuzz profile: upper = 6.3e15, Delta = 1 measured a loss of 1.07 > epsilon = 1."""
    with pytest.raises(InvalidParameterError, match="'upper'"):
        dpopt.Calibration(mechanism="truncated_generalized_gaussian", epsilon=1.0, p=2, lower=0.0, upper=6317977089468322.0)
    assert dpopt.solve(dpopt.Calibration(mechanism="truncated_generalized_gaussian", epsilon=1.0, p=2, lower=0.0, upper=1e9)).certificate.ok


def test_multi_level_n_where_alpha_1_to_the_n_underflows_is_refused_by_the_dense_routes():
    """Found by the explore fuzz profile: n = 518, alpha_1 = 0.25 gave entries 2^-1036 (subnormal).
    The dense routes refuse it; the factored chain (no matrices) releases it."""
    problem = dpopt.MultiLevelRelease(n=518, alphas=[0.25, 0.5, 0.8])
    for method in ("closed_form", "lp"):
        with pytest.raises(InvalidParameterError, match="n x epsilon_1"):
            dpopt.solve(problem, method)
    assert dpopt.solve(problem).method == "factored" and dpopt.solve(problem).certificate.ok
    assert dpopt.solve(dpopt.MultiLevelRelease(n=500, alphas=[0.25, 0.5, 0.8])).method == "closed_form"


@pytest.mark.parametrize(
    "fields,needle",
    [
        (dict(query=[1.3e155, 0.2, 0.3], metric={"type": "uniform"}), "'query'"),
        (dict(query=[1.0, 0.2, 0.3], metric={"type": "euclidean", "coordinates": [0.0, 1.0, 2.0], "epsilon": 1e300}), "'epsilon'"),
        (dict(query=[1.0, 0.2, 0.3], metric={"type": "dates", "values": [0.0, 1.0, 2e16]}), "'values'"),
        (dict(query=[1.0, 0.2, 0.3], metric={"type": "dates", "values": [0.0, 1.0, 2.0], "period": 1e-300}), "'period'"),
        (dict(query=[1.0, 0.2, 0.3], metric={"type": "heterogeneous", "epsilons": [1e16, 1.0, 1.0]}), "'epsilons'"),
    ],
)
def test_dx_numbers_that_would_overflow_are_refused(fields, needle):
    """Found by the explore fuzz profile (a query of 1.3e155 overflowed the surrogate); an overflow
    to +inf in a metric would mean "never confuse these two" and drop a privacy constraint."""
    with pytest.raises(InvalidParameterError, match=needle):
        dpopt.DXLinearQuery(n=10, **fields)


def test_dx_distances_that_round_alpha_to_one_are_refused():
    """Found by the explore fuzz profile: a Euclidean epsilon of 1.2e-179 made log(1 - alpha) divide by zero."""
    with pytest.raises(InvalidParameterError, match="'epsilon'"):
        dpopt.DXLinearQuery(n=10, query=[1.0, 0.0], metric={"type": "euclidean", "coordinates": [0.0, 1.0], "epsilon": 1.2e-179})
    with pytest.raises(InvalidParameterError, match="'metric'"):
        dpopt.DXLinearQuery(n=10, query=[1.0, 0.0], metric={"type": "matrix", "values": [[0, 1e-200], [1e-200, 0]]})


@pytest.mark.parametrize("value", ["abc", "nan", "inf", "12GiB", "0", "-1"])
def test_a_bad_memory_limit_in_the_environment_is_one_line_where_a_solve_starts(value):
    # it was read when dpopt was imported: every command, --help included, ended in a traceback
    # ("abc", "nan", "12GiB"; "inf" an OverflowError), and 0 or -1 became a 1-byte limit
    env = {**os.environ, "DPOPT_MEMORY_LIMIT": value}
    done = subprocess.run([sys.executable, "-m", "dpopt.cli", "solve", TABLE1], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "'DPOPT_MEMORY_LIMIT'" in done.stderr and "Traceback" not in done.stderr
    assert subprocess.run([sys.executable, "-c", "import dpopt"], env=env, timeout=120).returncode == 0
