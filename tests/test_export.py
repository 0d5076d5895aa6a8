import json

import numpy as np
import pytest

import dpopt
from dpopt.export import read_solution
from dpopt.validation import DPOptError, InvalidParameterError

FORMATS = [".csv", ".json", ".parquet", ".npz"]


@pytest.fixture(scope="module")
def solution():
    return dpopt.solve(dpopt.CountQuery(n=4, alpha=0.5, loss="absolute", side_information={"lower": 1}))


@pytest.mark.parametrize("suffix", FORMATS)
def test_round_trip_keeps_matrix_labels_and_certificate(tmp_path, solution, suffix):
    path = tmp_path / f"mech{suffix}"
    solution.export(str(path))
    back = read_solution(path)
    np.testing.assert_array_equal(back.mechanism.to_numpy(), solution.mechanism.to_numpy())
    assert list(back.mechanism.index) == list(solution.mechanism.index)
    assert list(back.mechanism.columns) == list(solution.mechanism.columns)
    assert back.certificate.ok and back.certificate.max_privacy_loss == pytest.approx(solution.certificate.max_privacy_loss)
    assert back.problem.support == solution.problem.support and back.method == solution.method
    np.testing.assert_array_equal(back.sample(2, 10, rng=1), solution.sample(2, 10, rng=1))


def test_csv_has_certificate_beside_it(tmp_path, solution):
    solution.export(str(tmp_path / "m.csv"))
    meta = json.loads((tmp_path / "m.csv.meta.json").read_text())
    assert meta["certificate"]["ok"] is True and meta["problem"]["kind"] == "count_query"


@pytest.mark.parametrize("suffix", [".json", ".npz"])
def test_multi_level_round_trip_keeps_the_chain(tmp_path, suffix):
    solution = dpopt.solve(dpopt.MultiLevelRelease(n=4, alphas=[0.2, 0.6]))
    solution.export(str(tmp_path / f"m{suffix}"))
    back = read_solution(tmp_path / f"m{suffix}")
    np.testing.assert_array_equal(back.sample(1, 30, rng=2), solution.sample(1, 30, rng=2))


def test_uncertified_mechanism_is_not_exported(tmp_path):
    raw = dpopt.solve(dpopt.CountQuery(n=3, alpha=0.25), "lp", repair=False)
    bad = raw.__class__(**{**raw.__dict__, "certificate": dpopt.certify(np.eye(4), 1.0)})
    with pytest.raises(InvalidParameterError, match="certificate"):
        bad.export(str(tmp_path / "m.json"))
    assert list(tmp_path.iterdir()) == []


def test_failed_write_leaves_nothing(tmp_path, solution, monkeypatch):
    import dpopt.export as export

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(export, "_write_npz", boom)
    with pytest.raises(OSError):
        solution.export(str(tmp_path / "m.npz"))
    assert list(tmp_path.iterdir()) == []


def test_bad_paths_rejected(tmp_path, solution):
    with pytest.raises(InvalidParameterError, match="'export'"):
        solution.export(str(tmp_path / "m.xlsx"))
    with pytest.raises(InvalidParameterError, match="'export'"):
        solution.export(str(tmp_path / "missing" / "m.csv"))


def test_edited_file_fails_its_certificate_on_read(tmp_path, solution):
    path = tmp_path / "m.json"
    solution.export(str(path), dense=True)
    data = json.loads(path.read_text())
    data["mechanism"]["data"][0] = [1.0, 0.0, 0.0, 0.0, 0.0]
    path.write_text(json.dumps(data))
    with pytest.raises(DPOptError, match="certificate"):
        read_solution(path)


def test_edited_factored_file_fails_its_certificate_on_read(tmp_path, solution):
    """Any stochastic remap keeps G's privacy, so an edit is caught by the row sums."""
    path = tmp_path / "m.json"
    solution.export(str(path))
    data = json.loads(path.read_text())
    data["remap"]["probability"][0] = 5.0
    path.write_text(json.dumps(data))
    with pytest.raises(DPOptError, match="certificate"):
        read_solution(path)


@pytest.mark.parametrize("suffix", FORMATS)
def test_factored_exports_are_sparse_and_dense_on_request(tmp_path, solution, suffix):
    assert solution.factored is not None
    solution.export(str(tmp_path / f"sparse{suffix}"))
    solution.export(str(tmp_path / f"dense{suffix}"), dense=True)
    sparse_back, dense_back = read_solution(tmp_path / f"sparse{suffix}"), read_solution(tmp_path / f"dense{suffix}")
    assert sparse_back.factored is not None and dense_back.factored is None
    assert sparse_back.factored.remap.nnz == solution.factored.remap.nnz
    np.testing.assert_allclose(sparse_back.mechanism.to_numpy(), dense_back.mechanism.to_numpy(), atol=1e-15)


def test_parameter_solutions_round_trip_and_are_recertified(tmp_path):
    from dpopt.problem_files import load_problem
    from tests.conftest import PROBLEMS

    cal = dpopt.solve(dpopt.Calibration(mechanism="gaussian_analytic", epsilon=0.5, delta=1e-5))
    cal.export(str(tmp_path / "cal.json"))
    back = read_solution(tmp_path / "cal.json")
    assert back.parameters["scale"] == cal.parameters["scale"] and back.certificate.ok
    data = json.loads((tmp_path / "cal.json").read_text())
    data["parameters"]["scale"] *= 0.5  # an edited file: half the noise
    (tmp_path / "edited.json").write_text(json.dumps(data))
    with pytest.raises(DPOptError, match="not the calibration"):
        read_solution(tmp_path / "edited.json")

    dx = dpopt.solve(load_problem(PROBLEMS / "dx_example1.toml"), "psa")
    dx.export(str(tmp_path / "dx.json"))
    back = read_solution(tmp_path / "dx.json")
    assert back.parameters["scales"] == dx.parameters["scales"] and back.certificate.ok
    data = json.loads((tmp_path / "dx.json").read_text())
    data["parameters"]["transformed_query"][0] = [2 * v for v in data["parameters"]["transformed_query"][0]]
    (tmp_path / "dx_edited.json").write_text(json.dumps(data))
    with pytest.raises(DPOptError, match="privacy check"):
        read_solution(tmp_path / "dx_edited.json")
