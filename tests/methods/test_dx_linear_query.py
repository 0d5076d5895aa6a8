"""The dx_linear_query problem kind: routes, auto, CLI, problem files."""

import json

import numpy as np
import pytest

import dpopt
from dpopt.cli import main
from dpopt.problem_files import load_problem
from dpopt.problems.dx_linear_query import DXLinearQuery
from dpopt.validation import InvalidParameterError
from tests.conftest import PROBLEMS


def test_every_route_is_certified_and_exact_is_best_under_its_objective():
    problem = load_problem(PROBLEMS / "dx_hotspots.toml")
    solutions = {s.method: s for s in dpopt.compare(problem)}
    assert set(solutions) == {"closed_form", "strategy1", "strategy2", "psa", "exact", "exact_improvement", "exact_surrogate", "alternating"}
    assert all(s.certificate.ok for s in solutions.values())
    best = solutions["exact_surrogate"].objective
    assert all(s.objective >= best * (1 - 1e-9) for s in solutions.values())
    assert dpopt.solve(problem).method == "exact_surrogate"


def test_multi_query_auto_falls_back_to_alternating():
    problem = load_problem(PROBLEMS / "dx_example1.toml")
    solution = dpopt.solve(problem)
    assert solution.method == "alternating" and solution.certificate.ok
    objectives = solution.parameters["objective_per_iteration"]
    assert objectives[-1] <= objectives[0]


def test_cli_solve_compare_sample(capsys):
    assert main(["solve", str(PROBLEMS / "dx_example1.toml"), "--method", "strategy2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["scales"]) == 2 and out["improvement_factor"] > 0 and out["certificate"]["ok"]
    assert main(["compare", str(PROBLEMS / "dx_example1.toml")]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert {line["method"] for line in lines} >= {"strategy1", "strategy2", "psa", "exact", "alternating"}
    assert main(["sample", str(PROBLEMS / "dx_example1.toml"), "--count", "3", "--seed", "1"]) == 0
    assert np.array(json.loads(capsys.readouterr().out)["releases"]).shape == (3, 2)


@pytest.mark.parametrize(
    "fields,parameter",
    [
        (dict(n=10, query=[1.0, 2.0], metric={"type": "nowhere"}), "metric.type"),
        (dict(n=10, query=[1.0, 2.0, 3.0], metric={"type": "uniform", "epsilon": 1.0, "radius": 2}), "metric.radius"),
        (dict(n=10, query=[1.0, 2.0, 3.0], metric={"type": "matrix", "values": [[0, 1], [1, 0]]}), "query"),
        (dict(n=10, query=[1.0, 2.0], metric={"type": "uniform"}, histogram=[3, 3]), "histogram"),
        (dict(n=0, query=[1.0, 2.0], metric={"type": "uniform"}), "n"),
        (dict(n=10, query=[1.0, 2.0], metric={"type": "matrix", "values": [[0, -1], [-1, 0]]}), "metric.values"),
        (dict(n=10, query=[1.0, 2.0], metric={"type": "matrix", "values": [[0, float("nan")], [float("nan"), 0]]}), "metric.values"),
        (dict(n=10, query=[1.0, 2.0], metric={"type": "matrix", "values": [[0, float("inf")], [float("inf"), 0]]}), "metric"),
        (dict(n=10, query=[1.0, 2.0, 3.0], metric={"type": "graph", "edges": [[0, 1, float("nan")], [1, 2, 1.0]]}), "edges"),
        (dict(n=10, query=["1", "2"], metric={"type": "uniform"}), "query"),
        (dict(n=10, query=[[1.0, 2.0], [1.0]], metric={"type": "uniform"}), "query"),
        (dict(n=10, query=[1.0, 2.0], metric={"type": "euclidean", "coordinates": [[0.0], ["x"]]}), "coordinates"),
        (dict(n=10, query=[1.0, 2.0], metric={"type": "dates", "values": ["1", "2"]}), "values"),
        (dict(n=10, query=[1.0, 2.0], metric={"type": ["uniform"]}), "metric.type"),
        (dict(n=10, query=[1.0, 2.0], metric={"type": "matrix", "values": [[0, 1], [1, 0]], "closure": "yes"}), "metric.closure"),
    ],
)
def test_invalid_problems_name_the_field(fields, parameter):
    with pytest.raises(InvalidParameterError, match=f"'{parameter}'"):
        DXLinearQuery(**fields)


def test_csv_metric_relative_to_the_problem_file(tmp_path, capsys):
    (tmp_path / "d.csv").write_text("0,1,2\n1,0,1\n2,1,0\n")
    (tmp_path / "p.toml").write_text('kind = "dx_linear_query"\nn = 5\nquery = [0.0, 1.0, 3.0]\n[metric]\ntype = "csv"\npath = "d.csv"\n')
    assert main(["solve", str(tmp_path / "p.toml"), "--method", "closed_form"]) == 0
    assert json.loads(capsys.readouterr().out)["scales"] == [pytest.approx(2.0)]
    (tmp_path / "bad.toml").write_text('kind = "dx_linear_query"\nn = 5\nquery = [0.0, 1.0, 3.0]\n[metric]\ntype = "matrix"\nvalues = [[0, 1, 5], [1, 0, 1], [5, 1, 0]]\n')
    assert main(["solve", str(tmp_path / "bad.toml")]) == 2
    assert "triangle inequality" in capsys.readouterr().err
