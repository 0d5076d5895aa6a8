import tomllib

import pytest

import dpopt
from dpopt.problem_files import PROBLEM_KINDS, problem_from_dict, read_problem_file
from dpopt.validation import InvalidParameterError
from tests.conftest import PROBLEMS

FILES = sorted(PROBLEMS.glob("*.toml"))


def test_the_examples_cover_every_kind():
    kinds = {read_problem_file(f).problem.kind for f in FILES}
    assert kinds == set(PROBLEM_KINDS)


#: Examples whose full comparison is minutes of work (the 1044-graph LP): run with ``-m slow``.
HEAVY = {"finite_query_triangles"}


@pytest.mark.parametrize(
    "path", [pytest.param(f, marks=pytest.mark.slow) if f.stem in HEAVY else f for f in FILES], ids=[f.stem for f in FILES]
)
def test_every_example_solves_and_matches_its_reference(path):
    entry = read_problem_file(path)
    assert "source" in entry.metadata
    solutions = dpopt.compare(entry.problem)
    for solution in solutions:
        assert solution.certificate.ok
    if "expected_objective" in entry.metadata:
        for solution in (s for s in solutions if s.exact):
            assert solution.objective == pytest.approx(entry.metadata["expected_objective"], abs=1e-9)


def test_round_trip_through_dict():
    problem = read_problem_file(PROBLEMS / "zero_one_loss.toml").problem
    again = problem_from_dict(problem.to_dict())
    assert again.support == problem.support and again.alpha == problem.alpha


@pytest.mark.parametrize(
    "data,field",
    [
        ({"n": 3, "alpha": 0.5}, "kind"),
        ({"kind": "histogram", "n": 3}, "kind"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "sensitivity": 2}, "sensitivity"),
        ({"kind": "count_query", "n": 0, "alpha": 0.5}, "n"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "side_information": []}, "side_information"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "side_information": [5]}, "side_information"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "side_information": {"lower": 2, "upper": 1}}, "side_information.upper"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "side_information": {"low": 1}}, "side_information"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "title": 1e308}, "title"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "source": ["Table 1"]}, "source"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "expected_objective": "0.4"}, "expected_objective"),
        ({"kind": "count_query", "n": 3, "alpha": 0.5, "expected_objective": float("nan")}, "expected_objective"),
    ],
)
def test_invalid_fields_are_named(data, field):
    with pytest.raises(InvalidParameterError) as info:
        problem_from_dict(data)
    assert info.value.parameter == field


def test_unreadable_and_invalid_toml(tmp_path):
    with pytest.raises(InvalidParameterError, match="readable"):
        read_problem_file(tmp_path / "nope.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("kind = ")
    with pytest.raises(InvalidParameterError, match="valid TOML"):
        read_problem_file(bad)


_UNIVERSE = {"type": "explicit", "values": [0, 1, 2], "neighbours": [[0, 1], [1, 2]]}
_DX = {key: value for key, value in tomllib.loads((PROBLEMS / "dx_example1.toml").read_text()).items()
       if key not in ("title", "source")}


@pytest.mark.parametrize(("spec", "field"), [
    ({"kind": "finite_query", "epsilon": 1.0, "universe": {**_UNIVERSE, "values": [0, True, 2]}}, "universe.values"),
    ({"kind": "finite_query", "epsilon": 1.0, "universe": {**_UNIVERSE, "neighbours": [[0, True], [1, 2]]}}, "universe.neighbours"),
    ({"kind": "finite_query", "epsilon": 1.0, "universe": {"type": "explicit", "values": [0, 1, 2],
                                                          "metric": [[0, True, 2], [1, 0, 1], [2, 1, 0]]}}, "universe.metric"),
    ({"kind": "finite_query", "epsilon": 1.0, "outputs": [0, True, 2], "universe": _UNIVERSE}, "outputs"),
    ({"kind": "finite_query", "epsilon": 1.0, "objective": "average", "prior": [1, True, 1], "universe": _UNIVERSE}, "prior"),
    ({"kind": "finite_query", "epsilon": 1.0, "loss": [[0, 1, 2], [1, True, 1], [2, 1, 0]], "universe": _UNIVERSE}, "loss"),
    ({"kind": "finite_query", "epsilon": 1.0, "important": [0, True], "universe": _UNIVERSE}, "important"),
    ({"kind": "count_query", "n": 1, "epsilon": 1.0, "loss": [[0, True], [1, 0]]}, "loss"),
    ({"kind": "noise_adding", "epsilon": 1.0, "neighbouring_set": [[0, True], [1000, 1001]]}, "neighbouring_set"),
    ({**_DX, "histogram": [5, True, 10, 5, 5, 0, 10, 0]}, "histogram"),
    ({**_DX, "query": [[1, True, 0, 0, 1, 1, 0, 0]]}, "query"),
], ids=lambda value: value if isinstance(value, str) else "")
def test_true_or_false_among_numbers_is_refused_naming_the_field(spec, field):
    """TOML arrays may mix types and numpy reads [0, true, 2] as [0, 1, 2]: until 2026-11-29
    each of these problems was solved as if the boolean were the number 1."""
    with pytest.raises(InvalidParameterError) as info:
        problem_from_dict(spec)
    assert info.value.parameter == field
