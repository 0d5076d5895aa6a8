"""Sweep files (dpopt.sweep_files): every bad description refused before any work, naming the field."""

import pytest

from dpopt import sweeps
from dpopt.sweep_files import sweep_from_dict
from dpopt.validation import InvalidParameterError


@pytest.mark.parametrize("change,field", [
    ({"colour": "red"}, "colour"),
    ({"grid": {"alpha": 0.5}}, "grid.alpha"),
    ({"grid": {"kind": ["noise_adding"]}}, "grid.kind"),
    ({"zip": {"alpha": [0.1, 0.2], "loss": ["absolute"]}}, "zip"),
    ({"grid": {"alpha": [0.5, 1.5]}}, "alpha"),
    ({"methods": ["simplex"]}, "methods"),
    ({"methods": "lp"}, "methods"),
    ({"base": {"loss": "absolute"}}, "base"),
    ({"kind": "count_query"}, "kind"),
    ({"title": 1e308}, "title"),
])
def test_invalid_sweeps_are_refused_before_any_work_naming_the_field(change, field, monkeypatch):
    monkeypatch.setattr(sweeps, "solve_cell", lambda *a: pytest.fail("no cell may be solved"))
    spec = {"kind": "sweep", "methods": ["lp"], "base": {"kind": "count_query", "n": 4, "loss": "absolute"},
            "grid": {"alpha": [0.3]}} | change
    with pytest.raises(InvalidParameterError, match=field):
        sweep_from_dict(spec)


@pytest.mark.parametrize("change,field", [
    ({"seeds": 3}, "seeds"),  # no [random]
    ({"random": {"query": {"generator": "normal"}}, "seeds": 2}, "random.query"),
    ({"random": {"query": {"generator": "uniform_matrix", "rows": 1, "columns": 3, "mean": 0}}, "seeds": 2}, "random.query.mean"),
    ({"random": {"query": {"generator": "uniform_matrix", "rows": 1, "columns": 3}}}, "seeds"),
    ({"random": {"query": {"generator": "uniform_matrix", "columns": 3}}, "seeds": 2}, "random.query.rows"),
    ({"random": {"query": {"generator": "uniform_matrix", "rows": 1, "columns": 3}}, "seeds": 2,
      "grid": {"random.query.depth": [1]}}, "random.query.depth"),
])
def test_bad_random_specifications_are_refused_naming_the_field(change, field):
    spec = {"kind": "sweep", "methods": ["strategy2"],
            "base": {"kind": "dx_linear_query", "n": 20, "query": [0.1, 0.2, 0.3], "metric": {"type": "uniform", "epsilon": 0.5}}} | change
    with pytest.raises(InvalidParameterError, match=field.replace(".", r"\.")):
        sweep_from_dict(spec)


def test_csv_paths_are_read_relative_to_the_file_that_names_them(tmp_path, monkeypatch):
    """A base problem file's CSV universe is relative to that file (as ``dpopt solve`` reads it),
    and a CSV named in the sweep file relative to the sweep file; until 2026-11-29 both were
    read relative to the working directory, so the sweep of a file that solves alone was refused."""
    from dpopt.sweep_files import load_sweep

    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "u.csv").write_text("value,neighbours\n0,1\n1,0 2\n2,1\n")
    (tmp_path / "sub" / "fq.toml").write_text('kind = "finite_query"\nepsilon = 1.0\n[universe]\ntype = "csv"\npath = "u.csv"\n')
    (tmp_path / "by_file.toml").write_text('kind = "sweep"\nmethods = ["lp"]\nbase = "sub/fq.toml"\n[grid]\nepsilon = [0.5, 1.0]\n')
    (tmp_path / "inline.toml").write_text('kind = "sweep"\nmethods = ["lp"]\n[base]\nkind = "finite_query"\nepsilon = 1.0\n'
                                          'universe = { type = "csv", path = "sub/u.csv" }\n[grid]\nepsilon = [0.5, 1.0]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for name in ("by_file.toml", "inline.toml"):
        sweep = load_sweep(tmp_path / name)
        assert [cell.problem["universe"]["path"] for cell in sweep.cells] == [str((tmp_path / "sub" / "u.csv").resolve())] * 2
        table = sweeps.run_sweep(sweep, progress=False)
        assert (table["error"] == "").all() and table["certificate_ok"].all()


def test_an_edited_csv_universe_is_solved_again_not_resumed(tmp_path):
    from dpopt.sweep_files import load_sweep

    (tmp_path / "u.csv").write_text("value,neighbours\n0,1\n1,0 2\n2,1\n")
    (tmp_path / "s.toml").write_text('kind = "sweep"\nmethods = ["lp"]\n[base]\nkind = "finite_query"\nepsilon = 1.0\n'
                                     'universe = { type = "csv", path = "u.csv" }\n[grid]\nepsilon = [0.5, 1.0]\n')
    output = tmp_path / "out.parquet"
    first = sweeps.run_sweep(load_sweep(tmp_path / "s.toml"), output=output, progress=False)
    (tmp_path / "u.csv").write_text("value,neighbours\n0,1\n10,0 2\n20,1\n")  # values ten times apart
    second = sweeps.run_sweep(load_sweep(tmp_path / "s.toml"), output=output, progress=False)
    assert len(second) == 2 and (second["objective"] > 5 * first["objective"]).all()


COUNT_BASE = {"kind": "count_query", "n": 4, "loss": "absolute"}
RANDOM_QUERY = {"query": {"generator": "uniform_matrix", "rows": 1, "columns": 3}}
DX_BASE = {"kind": "dx_linear_query", "n": 10, "metric": {"type": "uniform", "epsilon": 1.0}}


@pytest.mark.parametrize(("spec", "field"), [
    ({"base": COUNT_BASE, "grid": {"alpha": [0.5, 0.5, 0.6]}}, "grid.alpha"),
    ({"base": COUNT_BASE, "grid": {"alpha": [0.5]}, "methods": ["lp", "factored", "lp"]}, "methods"),
    ({"base": COUNT_BASE, "zip": {"alpha": [0.5, 0.6, 0.5], "n": [4, 5, 4]}}, "zip"),
    ({"base": DX_BASE, "random": RANDOM_QUERY, "seeds": [1, 2, 1], "methods": ["exact"]}, "seeds"),
    ({"base": {**DX_BASE, "query": [[1, 0, 0]]}, "methods": ["exact"],  # two metrics made one by the dotted key
      "grid": {"metric": [{"type": "uniform", "epsilon": 1.0}, {"type": "uniform", "epsilon": 2.0}], "metric.epsilon": [3.0]}},
     "grid"),
])
def test_values_that_name_one_cell_twice_are_refused(spec, field, monkeypatch):
    """Until 2026-11-29 they were one cell and one row, silently: alpha = [0.5, 0.5, 0.6] gave
    two rows where three were asked for. Zipped lists may repeat a value, not a row."""
    monkeypatch.setattr(sweeps, "solve_cell", lambda *a: pytest.fail("no cell may be solved"))
    with pytest.raises(InvalidParameterError, match=rf"'{field}' parameter of sweep.*(appears twice|same .* problem)"):
        sweep_from_dict({"kind": "sweep", "methods": ["factored"], **spec})
    sweep_from_dict({"kind": "sweep", "methods": ["factored"], "base": COUNT_BASE, "zip": {"alpha": [0.5, 0.6, 0.5], "n": [4, 4, 5]}})
