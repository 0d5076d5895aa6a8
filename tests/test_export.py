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
    with pytest.raises(InvalidParameterError, match="'export'"):
        solution.export(str(tmp_path / "m.npz"))
    assert list(tmp_path.iterdir()) == []


def test_a_writer_that_removes_its_partial_file_still_reports_the_cause(tmp_path, solution, monkeypatch):
    """pyarrow deletes its half-written file on a full disk; the error named the unlink that
    followed ('No such file or directory') instead of the full disk until 2026-11-29."""
    import errno
    import os

    import dpopt.export as export

    def full_disk(frame, meta, path, **kwargs):
        os.unlink(path)
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export, "_write_parquet", full_disk)
    with pytest.raises(InvalidParameterError, match="No space left on device"):
        solution.export(str(tmp_path / "m.parquet"))
    assert list(tmp_path.iterdir()) == []


def test_csv_export_is_all_or_nothing(tmp_path, solution):
    """The metadata beside y.csv cannot be written (a folder has its name): y.csv must not land."""
    (tmp_path / "y.csv.meta.json").mkdir()
    with pytest.raises(InvalidParameterError, match="'export'"):
        solution.export(str(tmp_path / "y.csv"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y.csv.meta.json"]


def test_csv_export_rolls_back_when_a_move_fails(tmp_path, solution, monkeypatch):
    import dpopt.export as export

    real = export.os.replace
    calls = []

    def second_fails(src, dst):
        calls.append(dst)
        if len(calls) == 2:
            raise OSError("device went away")
        real(src, dst)

    monkeypatch.setattr(export.os, "replace", second_fails)
    with pytest.raises(InvalidParameterError, match="'export'"):
        solution.export(str(tmp_path / "y.csv"))
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
    with pytest.raises(DPOptError, match="digest"):
        read_solution(path)
    with pytest.raises(DPOptError, match="certificate"):
        read_solution(path, recertify=True)


def test_edited_factored_file_fails_its_certificate_on_read(tmp_path, solution):
    """Any stochastic remap keeps G's privacy, so an edit is caught by the row sums."""
    path = tmp_path / "m.json"
    solution.export(str(path))
    data = json.loads(path.read_text())
    data["remap"]["probability"][0] = 5.0
    path.write_text(json.dumps(data))
    with pytest.raises(DPOptError, match="digest"):
        read_solution(path)
    with pytest.raises(DPOptError, match="row-stochastic"):
        read_solution(path, recertify=True)


@pytest.mark.parametrize("suffix", FORMATS)
def test_factored_exports_are_sparse_and_dense_on_request(tmp_path, solution, suffix):
    assert solution.factored is not None
    solution.export(str(tmp_path / f"sparse{suffix}"))
    solution.export(str(tmp_path / f"dense{suffix}"), dense=True)
    sparse_back, dense_back = read_solution(tmp_path / f"sparse{suffix}"), read_solution(tmp_path / f"dense{suffix}")
    assert sparse_back.factored is not None and dense_back.factored is None
    assert sparse_back.factored.remap.nnz == solution.factored.remap.nnz
    np.testing.assert_allclose(sparse_back.mechanism.to_numpy(), dense_back.mechanism.to_numpy(), atol=1e-15)


@pytest.mark.parametrize("method", ["geometric", "factored"])
def test_a_dense_export_that_would_fail_its_certificate_is_refused(tmp_path, method):
    """n epsilon = 800: G T passes its certificate in log space, but its dense float64 matrix has
    zeros beside non-zeros, which a reader re-measures as an infinite loss: only the factored
    form may leave."""
    solution = dpopt.solve(dpopt.CountQuery(n=80, epsilon=10.0), method)
    with pytest.raises(InvalidParameterError, match="'dense'"):
        solution.export(str(tmp_path / "dense.csv"), dense=True)
    assert list(tmp_path.iterdir()) == []
    solution.export(str(tmp_path / "sparse.csv"))
    back = read_solution(tmp_path / "sparse.csv")
    assert back.certificate.ok and back.objective == pytest.approx(solution.objective, rel=1e-12)


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
    with pytest.raises(DPOptError, match="digest"):
        read_solution(tmp_path / "edited.json")
    with pytest.raises(DPOptError, match="not the calibration"):
        read_solution(tmp_path / "edited.json", recertify=True)

    dx = dpopt.solve(load_problem(PROBLEMS / "dx_example1.toml"), "psa")
    dx.export(str(tmp_path / "dx.json"))
    back = read_solution(tmp_path / "dx.json")
    assert back.parameters["scales"] == dx.parameters["scales"] and back.certificate.ok
    data = json.loads((tmp_path / "dx.json").read_text())
    data["parameters"]["transformed_query"][0] = [2 * v for v in data["parameters"]["transformed_query"][0]]
    (tmp_path / "dx_edited.json").write_text(json.dumps(data))
    with pytest.raises(DPOptError, match="digest"):
        read_solution(tmp_path / "dx_edited.json")
    with pytest.raises(DPOptError, match="privacy certificate"):
        read_solution(tmp_path / "dx_edited.json", recertify=True)


# --- Files that were edited, truncated or corrupted (issue 12, defect classes 1, 3, 8) ---

from dpopt.export import ExportFileError  # noqa: E402


def _multi_level_json(tmp_path):
    solution = dpopt.solve(dpopt.MultiLevelRelease(n=4, alphas=[0.25, 0.5]))
    path = tmp_path / "chain.json"
    solution.export(str(path))
    return path, json.loads(path.read_text())


@pytest.mark.parametrize("edit", ["identity", "row_sum_6"])
def test_edited_multi_level_remap_is_refused_even_when_recertified(tmp_path, edit):
    """Remap 1 replaced by the identity makes level 2 equal level 1 (alpha = 0.25, not 0.5)."""
    path, data = _multi_level_json(tmp_path)
    table = data["tables"]["remaps"][0]["data"]
    size = len(table)
    if edit == "identity":
        data["tables"]["remaps"][0]["data"] = np.eye(size).tolist()
    else:
        table[0] = [6.0 / size] * size
    path.write_text(json.dumps(data))
    with pytest.raises(ExportFileError, match="digest"):
        read_solution(path)
    with pytest.raises(ExportFileError, match="not G at its alpha" if edit == "identity" else "row-stochastic"):
        read_solution(path, recertify=True)


def test_replaced_mechanism_is_refused_and_objective_is_recomputed(tmp_path, solution):
    path = tmp_path / "m.json"
    solution.export(str(path), dense=True)
    data = json.loads(path.read_text())
    size = len(data["mechanism"]["data"])
    data["mechanism"]["data"] = (np.ones((size, size)) / size).tolist()  # the uniform mechanism: private, useless
    path.write_text(json.dumps(data))
    with pytest.raises(ExportFileError, match="digest"):
        read_solution(path)
    back = read_solution(path, recertify=True)
    expected = max(sum(abs(i - r) / size for r in range(size)) for i in solution.problem.support)
    assert back.objective == pytest.approx(expected, rel=1e-12)  # not the stored objective
    assert back.objective > solution.objective + 0.1


def test_edited_alpha_cannot_loosen_the_target(tmp_path, solution):
    path = tmp_path / "m.json"
    solution.export(str(path), dense=True)
    data = json.loads(path.read_text())
    data["problem"]["alpha"] = 0.01
    path.write_text(json.dumps(data))
    with pytest.raises(ExportFileError, match="digest"):
        read_solution(path)


@pytest.mark.parametrize("suffix", FORMATS)
@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_corrupt_files_raise_one_error_naming_the_file(tmp_path, solution, suffix, damage):
    path = tmp_path / f"m{suffix}"
    solution.export(str(path), dense=True)
    raw = path.read_bytes()
    path.write_bytes({"truncate": raw[: len(raw) // 2], "garbage": b"\x00\xff" * 40, "empty": b""}[damage])
    with pytest.raises(ExportFileError) as info:
        read_solution(path)
    assert str(path) in str(info.value)


def test_csv_with_a_row_deleted_or_cut_is_refused(tmp_path, solution):
    path = tmp_path / "m.csv"
    solution.export(str(path), dense=True)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:-1]) + "\n")
    with pytest.raises(ExportFileError):
        read_solution(path)
    with pytest.raises(ExportFileError, match="shape"):
        read_solution(path, recertify=True)


def test_json_with_n_edited_is_refused(tmp_path, solution):
    path = tmp_path / "m.json"
    solution.export(str(path), dense=True)
    data = json.loads(path.read_text())
    data["problem"]["n"] = 2
    data["problem"].pop("side_information", None)
    path.write_text(json.dumps(data))
    with pytest.raises(ExportFileError):
        read_solution(path, recertify=True)


def test_parameter_solutions_refuse_csv_at_export(tmp_path):
    cal = dpopt.solve(dpopt.Calibration(mechanism="laplace", epsilon=1.0))
    with pytest.raises(InvalidParameterError, match="'export'"):
        cal.export(str(tmp_path / "cal.csv"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("suffix", FORMATS)
def test_noise_adding_round_trips_through_its_pmf(tmp_path, suffix):
    solution = dpopt.solve(dpopt.NoiseAdding(sensitivity=2, epsilon=1.0))
    solution.export(str(tmp_path / f"n{suffix}"))
    back = read_solution(tmp_path / f"n{suffix}")
    assert back.objective == solution.objective and back.certificate.ok
    np.testing.assert_array_equal(back.sample(5, 20, rng=3), solution.sample(5, 20, rng=3))


@pytest.mark.parametrize("suffix", FORMATS)
def test_a_single_level_chain_reads_back(tmp_path, suffix):
    """One level is a chain of no remaps, which the export leaves out; reading asked for a list."""
    for method in ("closed_form", "lp"):
        solution = dpopt.solve(dpopt.MultiLevelRelease(n=5, alphas=[0.5]), method)
        solution.export(str(tmp_path / f"{method}{suffix}"))
        back = read_solution(tmp_path / f"{method}{suffix}")
        assert back.certificate.ok and back.objective == solution.objective and back.exact == solution.exact
        np.testing.assert_array_equal(back.sample(2, 20, rng=3), solution.sample(2, 20, rng=3))


def test_reading_never_makes_a_closed_form_exact(tmp_path):
    """Geometric noise at Delta = 3 is not optimal: it was read back as exact (the noise reader set
    exact for every method); nor does an edited flag make it so."""
    solution = dpopt.solve(dpopt.NoiseAdding(sensitivity=3, epsilon=1.0), "geometric")
    path = tmp_path / "geometric.json"
    solution.export(str(path))
    assert not solution.exact and not read_solution(path).exact
    data = json.loads(path.read_text())
    data["summary"]["exact"] = True
    path.write_text(json.dumps(data))
    assert not read_solution(path, recertify=True).exact
    optimal = dpopt.solve(dpopt.NoiseAdding(sensitivity=3, epsilon=1.0), "staircase")
    optimal.export(str(tmp_path / "staircase.json"))
    assert optimal.exact and read_solution(tmp_path / "staircase.json").exact


def test_an_export_has_the_permissions_an_ordinary_write_gives(tmp_path, solution):
    # mkstemp's 0o600 reached every export: a mechanism meant to be published was readable by its owner only
    import os
    import stat

    mode = lambda p: stat.S_IMODE(os.stat(p).st_mode)  # noqa: E731
    previous = os.umask(0o022)
    try:
        solution.export(str(tmp_path / "a.csv"))
        assert mode(tmp_path / "a.csv") == mode(tmp_path / "a.csv.meta.json") == 0o644
        os.umask(0o077)
        solution.export(str(tmp_path / "b.parquet"))
        assert mode(tmp_path / "b.parquet") == 0o600
        os.chmod(tmp_path / "a.csv", 0o640)  # a file replaced keeps its own permissions
        solution.export(str(tmp_path / "a.csv"))
        assert mode(tmp_path / "a.csv") == 0o640 and mode(tmp_path / "a.csv.meta.json") == 0o644
    finally:
        os.umask(previous)


@pytest.mark.parametrize("problem", [
    dpopt.CountQuery(n=4, alpha=0.5, loss="absolute"),
    dpopt.FiniteQuery(universe={"type": "explicit", "values": [0, 1, 3, 4], "neighbours": [[0, 1], [1, 2], [2, 3]]}, epsilon=1.0),
], ids=["count_query", "finite_query"])
def test_an_edited_file_is_never_read_back_as_optimal(tmp_path, problem):
    """The uniform mechanism written over an optimal export is private, so re-certifying accepts
    it, but it was read back as ``exact`` with status "optimal" at 2-4x the optimum (2026-11-29)."""
    solution = dpopt.solve(problem, "lp")
    assert solution.exact
    path = tmp_path / "m.json"
    solution.export(str(path), dense=True)
    assert read_solution(path).exact and read_solution(path).status == solution.status
    data = json.loads(path.read_text())
    matrix = np.asarray(data["mechanism"]["data"], dtype=float)
    data["mechanism"]["data"] = np.full_like(matrix, 1 / matrix.shape[1]).tolist()
    path.write_text(json.dumps(data))
    back = read_solution(path, recertify=True)
    assert back.certificate.ok and back.objective > solution.objective
    assert not back.exact and back.status == "recertified"


def test_an_export_of_a_csv_universe_carries_the_universe_it_was_solved_on(tmp_path):
    """Until 2026-11-29 the export named the CSV file: after the file was edited (a value 1 -> 3)
    the mechanism read back as "optimal" at 1.86 for a universe whose optimum is 0.85."""
    from dpopt.problem_files import load_problem

    (tmp_path / "u.csv").write_text("value,neighbours\n0,1\n1,0 2\n2,1 3\n3,2\n")
    (tmp_path / "fq.toml").write_text('kind = "finite_query"\nepsilon = 1.0\n[universe]\ntype = "csv"\npath = "u.csv"\n')
    solution = dpopt.solve(load_problem(tmp_path / "fq.toml"), "lp")
    solution.export(str(tmp_path / "m.json"))
    (tmp_path / "u.csv").write_text("value,neighbours\n0,1\n3,0 2\n2,1 3\n3,2\n")
    back = read_solution(str(tmp_path / "m.json"))
    assert back.problem.universe.values.tolist() == [0, 1, 2, 3]
    assert back.exact and back.objective == solution.objective
    (tmp_path / "u.csv").unlink()  # the export stands on its own
    assert read_solution(str(tmp_path / "m.json")).objective == solution.objective


def test_an_export_whose_metric_would_not_fit_in_memory_is_refused_before_writing(tmp_path, monkeypatch):
    """A universe given by its metric is written out whole (m x m numbers, about 120 bytes each
    on the way): refused in one line naming the export, nothing written."""
    m = 300
    d = np.abs(np.subtract.outer(np.arange(m), np.arange(m))) * 0.5
    problem = dpopt.FiniteQuery(universe={"type": "explicit", "values": list(range(m)), "metric": d.tolist()}, epsilon=1.0,
                                outputs=[0, 100, 200, 299])
    solution = dpopt.solve(problem, "exponential")
    monkeypatch.setenv("DPOPT_MEMORY_LIMIT", str(5 * 2**20))  # 300 x 300 x 120 bytes = 10 MiB
    with pytest.raises(InvalidParameterError, match="'export'.*300 x 300 dataset metric"):
        solution.export(str(tmp_path / "m.npz"))
    assert list(tmp_path.iterdir()) == []
    monkeypatch.setenv("DPOPT_MEMORY_LIMIT", str(50 * 2**20))
    solution.export(str(tmp_path / "m.npz"))
    assert read_solution(str(tmp_path / "m.npz")).objective == solution.objective


def test_an_npz_declaring_arrays_beyond_the_limit_is_refused_before_any_is_read(tmp_path, solution, monkeypatch):
    """A few MB of compressed zeros declared a 30,000 x 30,000 mechanism: until 2026-11-29 it was
    allocated (7.2 GB) before its shape was checked. Now the headers are read first."""
    import io
    import zipfile

    import dpopt.export

    path = tmp_path / "m.npz"
    solution.export(str(path))
    forged = tmp_path / "forged.npz"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(forged, "w") as target:
        for member in source.infolist():
            if member.filename != "mechanism.npy":
                target.writestr(member, source.read(member))
        header = io.BytesIO()  # a header alone: the data is never reached
        np.lib.format.write_array_header_1_0(header, {"descr": "<f8", "fortran_order": False, "shape": (30_000, 30_000)})
        target.writestr("mechanism.npy", header.getvalue())
    monkeypatch.setattr(dpopt.export.np, "load", lambda *a, **k: pytest.fail("an array was read"))
    with pytest.raises(ExportFileError, match="its arrays would take 7,200,00"):
        read_solution(forged)


def test_a_csv_export_without_its_metadata_file_names_it(tmp_path, solution):
    """Until 2026-11-29: "not a readable dpopt export (FileNotFoundError)"."""
    path = tmp_path / "m.csv"
    solution.export(str(path))
    (tmp_path / "m.csv.meta.json").unlink()
    with pytest.raises(ExportFileError, match=r"its metadata file m\.csv\.meta\.json is missing"):
        read_solution(path)


def test_an_npz_export_stores_its_metadata_as_utf8_bytes_and_reads_the_older_string_form(tmp_path):
    """A numpy string array takes 4 bytes a character: until 2026-11-29 a metric universe's
    ``.npz`` export was four times its JSON metadata (175 MB beside 44 MB at 1,500 datasets).
    Files written the old way still read back, verified as before."""
    d = np.abs(np.subtract.outer(np.arange(40.0), np.arange(40.0))) / 3
    problem = dpopt.FiniteQuery(universe={"type": "explicit", "values": (np.arange(40) % 5).tolist(), "metric": d.tolist()},
                                epsilon=1.0)
    solved = dpopt.solve(problem, "privacy_first")
    new, old = tmp_path / "new.npz", tmp_path / "old.npz"
    solved.export(new)
    with np.load(new, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    assert arrays["metadata"].dtype == np.uint8
    text = arrays["metadata"].tobytes().decode()
    assert len(text) > 40 * 40 and new.stat().st_size < 2 * len(text)  # not 4 bytes a character
    np.savez(old, **{**arrays, "metadata": np.array(text)})  # the form written before
    assert old.stat().st_size > 3 * len(text)
    for path in (new, old):
        back = read_solution(path)
        np.testing.assert_array_equal(back.mechanism.to_numpy(), solved.mechanism.to_numpy())
        assert back.certificate.ok
    np.savez(old, **{**arrays, "metadata": np.frombuffer(text.replace('"ok": true', '"ok": false').encode(), dtype=np.uint8)})
    with pytest.raises(ExportFileError):
        read_solution(old)


@pytest.mark.parametrize("suffix", [".csv", ".json", ".npz", ".parquet"])
def test_an_export_name_too_long_for_its_folder_is_refused_before_solving(tmp_path, suffix, capsys):
    """A name past the file system's 255 bytes ended in "internal error" (pathlib raised
    ENAMETOOLONG); one that fit but left no room for the temporary and metadata files named after
    it was refused after the solve, blaming the folder. The longest name that fits writes and
    reads back; one byte more is refused before any solving, naming the length allowed."""
    import os

    from dpopt.cli import main
    from dpopt.export import _beside

    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    room = limit - (max(len(name) for name in _beside(tmp_path / f"x{suffix}")) - len(f"x{suffix}"))
    fits = tmp_path / ("a" * (room - len(suffix)) + suffix)
    from tests.conftest import PROBLEMS

    problem = str(PROBLEMS / "gupte_sundararajan_table1.toml")
    assert main(["solve", problem, "--export", str(fits)]) == 0 and read_solution(fits).certificate.ok
    capsys.readouterr()
    for name in ("b" * (room - len(suffix) + 1) + suffix, "c" * 300 + suffix):
        assert main(["solve", problem, "--export", str(tmp_path / name)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"a file name of at most {room} bytes" in err and "'export'" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([fits.name] + ([fits.name + ".meta.json"] if suffix == ".csv" else []))


def test_a_sweep_output_name_too_long_for_its_folder_is_refused(tmp_path):
    import os

    from dpopt.sweeps import run_sweep, sweep_from_dict

    spec = {"kind": "sweep", "methods": ["geometric"], "base": {"kind": "count_query", "n": 3}, "grid": {"alpha": [0.5]}}
    long = tmp_path / ("d" * (os.pathconf(tmp_path, "PC_NAME_MAX") - len(".parquet")) + ".parquet")  # fits; its ".parts" does not
    with pytest.raises(InvalidParameterError, match="'output'.*a file name of at most"):
        run_sweep(sweep_from_dict(spec), output=long, progress=False)
