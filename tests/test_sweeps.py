"""Sweeps (dpopt.sweeps): the issue's smallest file, workers, resuming, failures, refusals."""

import http.server
import json
import socketserver
import sys
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

from dpopt import sweeps
from dpopt.cli import main
from dpopt.sweeps import load_sweep, run_sweep, sweep_from_dict
from dpopt.validation import InvalidParameterError

SMALLEST = (Path(__file__).resolve().parents[1] / "sweeps" / "count_alpha_n.toml").read_text()  # the smallest file
STABLE = ["alpha", "n", "method", "solver", "status", "exact", "objective", "lower_bound", "upper_bound",
          "certificate_ok", "max_privacy_loss", "target", "error", "key"]


@pytest.fixture
def smallest(tmp_path):
    path = tmp_path / "sweep.toml"
    path.write_text(SMALLEST)
    return path


def test_the_smallest_file_gives_twelve_tidy_rows(smallest, tmp_path):
    table = run_sweep(load_sweep(smallest), output=tmp_path / "out.parquet", progress=False)
    assert len(table) == 12
    assert {"alpha", "n", "method", "status", "objective", "seconds", "certificate_ok", "error"} <= set(table.columns)
    assert table["certificate_ok"].all() and (table["error"] == "").all()
    # lp and factored reach the same optimum in every cell (two exact routes)
    pivot = table.pivot_table(index=["alpha", "n"], columns="method", values="objective")
    assert (abs(pivot["lp"] - pivot["factored"]) <= 1e-9 * pivot["lp"]).all()
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "out.parquet"), table)
    assert not (tmp_path / "out.parquet.parts").exists()


def test_serial_and_two_worker_processes_give_the_same_table(smallest):
    serial = run_sweep(load_sweep(smallest), progress=False)
    parallel = run_sweep(load_sweep(smallest), workers=2, progress=False)
    pd.testing.assert_frame_equal(serial[STABLE], parallel[STABLE])


def test_an_interrupted_sweep_resumes_with_the_missing_cells_only(smallest, tmp_path, monkeypatch):
    output = tmp_path / "out.parquet"
    monkeypatch.setattr(sweeps, "BATCH", 2)
    real = sweeps.solve_cell
    calls = []

    def interrupted(problem, method, key):
        if len(calls) == 7:
            raise KeyboardInterrupt  # the driver stopped mid-way
        calls.append(key)
        return real(problem, method, key)

    monkeypatch.setattr(sweeps, "solve_cell", interrupted)
    with pytest.raises(KeyboardInterrupt):
        run_sweep(load_sweep(smallest), output=output, progress=False)
    assert len(calls) == 7 and not output.exists()
    saved = pd.concat([pd.read_parquet(p) for p in (tmp_path / "out.parquet.parts").glob("part-*.parquet")])
    assert len(saved) == 7  # every finished cell was written before the interruption
    resumed = []
    monkeypatch.setattr(sweeps, "solve_cell", lambda problem, method, key: resumed.append(key) or real(problem, method, key))
    table = run_sweep(load_sweep(smallest), output=output, progress=False)
    assert len(resumed) == 5 and not set(resumed) & set(calls)
    fresh = run_sweep(load_sweep(smallest), progress=False)
    pd.testing.assert_frame_equal(table[STABLE], fresh[STABLE])


def test_a_full_disk_is_refused_in_one_line_and_the_rows_written_before_resume(smallest, tmp_path, monkeypatch, capsys):
    """Until 2026-11-29 a full disk ended a sweep in an internal error (exit 1) and left a
    temporary part file behind."""
    import errno

    output = tmp_path / "out.parquet"
    monkeypatch.setattr(sweeps, "BATCH", 2)
    real = pd.DataFrame.to_parquet
    writes = []

    def full_after_two_parts(self, path, *args, **kwargs):
        writes.append(path)
        if len(writes) > 2:
            Path(path).write_bytes(b"PAR1")  # a partial file, as a full disk leaves
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(pd.DataFrame, "to_parquet", full_after_two_parts)
    assert main(["sweep", str(smallest), "--output", str(output), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'output'" in err and "No space left on device" in err
    parts = tmp_path / "out.parquet.parts"
    assert sorted(p.name.startswith("part-") for p in parts.iterdir()) == [True, True]  # no temporary file left
    monkeypatch.setattr(pd.DataFrame, "to_parquet", real)
    table = run_sweep(load_sweep(smallest), output=output, progress=False)
    pd.testing.assert_frame_equal(table[STABLE], run_sweep(load_sweep(smallest), progress=False)[STABLE])


def test_a_failing_cell_is_a_row_with_its_error_and_the_sweep_goes_on():
    spec = {"kind": "sweep", "methods": ["lp"], "base": {"kind": "count_query", "alpha": 0.5, "loss": "absolute"},
            "grid": {"n": [3, 9_000_000]}}
    table = run_sweep(sweep_from_dict(spec), progress=False)
    assert len(table) == 2 and table.loc[0, "error"] == "" and table.loc[0, "certificate_ok"]
    assert "InvalidParameterError" in table.loc[1, "error"] and pd.isna(table.loc[1, "objective"])


def test_zip_varies_fields_together_and_crosses_the_grid():
    spec = {"kind": "sweep", "methods": ["closed_form"], "base": {"kind": "calibration", "mechanism": "laplace"},
            "zip": {"epsilon": [0.5, 1.0], "sensitivity": [1.0, 2.0]}, "grid": {"mechanism": ["laplace", "staircase"]}}
    table = run_sweep(sweep_from_dict(spec), progress=False)
    assert len(table) == 4
    assert sorted(zip(table["epsilon"], table["sensitivity"])) == [(0.5, 1.0), (0.5, 1.0), (1.0, 2.0), (1.0, 2.0)]


def test_cli_sweep_writes_the_table_and_refuses_bad_input(smallest, tmp_path, capsys):
    output = tmp_path / "cli.parquet"
    assert main(["sweep", str(smallest), "--output", str(output), "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == {"kind": "sweep", "rows": 12, "failed": 0, "output": str(output)}
    assert main(["sweep", str(smallest), "--output", str(tmp_path / "x.csv"), "--no-progress"]) == 2
    assert "output" in capsys.readouterr().err
    assert main(["sweep", str(smallest), "--output", str(output), "--workers", "0"]) == 2
    assert "workers" in capsys.readouterr().err
    assert main(["sweep", str(smallest), "--output", str(tmp_path / "t.parquet"), "--timeout", "nan"]) == 2
    assert "timeout" in capsys.readouterr().err
    try:
        import dask.distributed  # noqa: F401
    except ImportError:
        assert main(["sweep", str(smallest), "--output", str(tmp_path / "d.parquet"), "--scheduler", "tcp://127.0.0.1:1"]) == 2
        assert "Dask is not installed" in capsys.readouterr().err


def _spec():
    return {"kind": "sweep", "methods": ["lp", "factored"], "base": {"kind": "count_query", "loss": "absolute", "n": 10},
            "grid": {"alpha": [0.3, 0.5, 0.7], "n": [5, 10]}}


# Every test cluster takes a free port for its dashboard (":0"): dashboard_address=None still
# binds 8787, and a second cluster started meanwhile in the other test process warned that the
# port was taken, an error under this suite's filterwarnings ("Cluster failed to start").


def test_a_dask_local_cluster_gives_the_serial_table():
    distributed = pytest.importorskip("dask.distributed")
    serial = run_sweep(sweep_from_dict(_spec()), progress=False)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as client:
        on_dask = run_sweep(sweep_from_dict(_spec()), scheduler=client, progress=False)
    pd.testing.assert_frame_equal(serial[STABLE], on_dask[STABLE])


def test_a_real_dask_scheduler_and_two_worker_processes_give_the_serial_table(tmp_path):
    """``dask scheduler`` and two ``dask worker`` processes on localhost, started here; the sweep goes by address."""
    import subprocess
    import sys
    import time

    distributed = pytest.importorskip("dask.distributed")
    info = tmp_path / "scheduler.json"
    dask = [sys.executable, "-m", "distributed.cli.dask_scheduler"]
    worker = [sys.executable, "-m", "distributed.cli.dask_worker"]
    processes = [subprocess.Popen([*dask, "--scheduler-file", str(info), "--port", "0", "--dashboard-address", ":0", "--host", "127.0.0.1"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        deadline = time.time() + 60
        while not info.exists() and time.time() < deadline:
            time.sleep(0.1)
        for _ in range(2):
            processes.append(subprocess.Popen([*worker, "--scheduler-file", str(info), "--nthreads", "1", "--nworkers", "1",
                                               "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        address = json.loads(info.read_text())["address"]
        with distributed.Client(address) as client:
            client.wait_for_workers(2, timeout=60)
        on_cluster = run_sweep(sweep_from_dict(_spec()), scheduler=address, progress=False)
    finally:
        for process in reversed(processes):
            process.terminate()
        for process in processes:
            process.wait(timeout=30)
    serial = run_sweep(sweep_from_dict(_spec()), progress=False)
    pd.testing.assert_frame_equal(serial[STABLE], on_cluster[STABLE])


def test_a_worker_process_that_dies_once_leaves_the_uninterrupted_table(tmp_path, monkeypatch):
    """A worker process dies mid-sweep (os._exit in its third cell, once). Until 2026-11-29 the
    driver stopped there (BrokenProcessPool) with what had finished written, and a rerun
    completed the table; now the cells the broken pool did not return are solved each in a
    process of its own, and the one run ends with the uninterrupted table."""
    import os

    output, marker = tmp_path / "out.parquet", tmp_path / "killed"
    monkeypatch.setattr(sweeps, "BATCH", 2)
    real = sweeps.solve_cell
    seen = []

    def dying(problem, method, key):
        seen.append(key)
        if len(seen) == 3 and not marker.exists():
            marker.write_text("x")
            os._exit(1)
        return real(problem, method, key)

    monkeypatch.setattr(sweeps, "solve_cell", dying)  # inherited by the forked workers
    table = run_sweep(sweep_from_dict(_spec()), output=output, workers=2, progress=False)
    assert marker.exists()
    monkeypatch.setattr(sweeps, "solve_cell", real)
    fresh = run_sweep(sweep_from_dict(_spec()), progress=False)
    pd.testing.assert_frame_equal(table[STABLE], fresh[STABLE])
    pd.testing.assert_frame_equal(pd.read_parquet(output)[STABLE], fresh[STABLE])


@pytest.mark.parametrize("name", ["count_alpha_n.toml", "calibrations.toml", "perrier_fig2_small.toml"])
def test_the_shipped_sweep_files_run(name):
    from pathlib import Path

    table = run_sweep(load_sweep(Path(__file__).resolve().parents[1] / "sweeps" / name), progress=False)
    assert len(table) >= 12 and (table["error"] == "").all() and table["certificate_ok"].all()


def test_random_instances_are_generated_from_each_cells_seed_reproducibly():
    """Perrier's Fig. 2 shape: random K x N workloads (K varied through the generator's rows), every route."""
    spec = {"kind": "sweep", "methods": ["strategy2", "exact_l1"], "seeds": 3,
            "base": {"kind": "dx_linear_query", "n": 20, "metric": {"type": "uniform", "epsilon": 0.5}},
            "random": {"query": {"generator": "uniform_matrix", "columns": 6}},
            "grid": {"random.query.rows": [1, 2]}}
    first = sweep_from_dict(spec)
    assert len(first.cells) == 2 * 3 * 2 and "seed" in first.varied
    again = sweep_from_dict(spec)
    assert [c.problem["query"] for c in first.cells] == [c.problem["query"] for c in again.cells]
    assert len({json.dumps(c.problem["query"]) for c in first.cells}) == 6  # one workload per (rows, seed)
    table = run_sweep(first, progress=False)
    assert (table["error"] == "").all() and table["certificate_ok"].all()
    assert set(table["seed"]) == {0, 1, 2} and set(table["random.query.rows"]) == {1, 2}


def test_random_universes_build_connected_finite_query_problems():
    spec = {"kind": "sweep", "methods": ["lp"], "seeds": [5, 6],
            "base": {"kind": "finite_query", "epsilon": 1.0},
            "random": {"universe": {"generator": "random_universe", "datasets": 12, "degree": 3, "values": 4}}}
    table = run_sweep(sweep_from_dict(spec), progress=False)
    assert len(table) == 2 and (table["error"] == "").all() and table["certificate_ok"].all()


def test_peak_memory_is_measured_on_request_only():
    spec = {"kind": "sweep", "methods": ["lp"], "base": {"kind": "count_query", "loss": "absolute", "alpha": 0.5},
            "grid": {"n": [5, 60]}}
    plain = run_sweep(sweep_from_dict(spec), progress=False)
    assert plain["peak_mib"].isna().all()
    measured = run_sweep(sweep_from_dict(spec), progress=False, memory=True)
    assert (measured["peak_mib"] > 0).all() and measured.loc[1, "peak_mib"] > measured.loc[0, "peak_mib"]


def test_recorded_solution_parameters_become_columns():
    spec = {"kind": "sweep", "methods": ["strategy2", "exact"], "seeds": 2, "record": ["improvement_factor", "norm_c_squared"],
            "base": {"kind": "dx_linear_query", "n": 20, "metric": {"type": "uniform", "epsilon": 0.5}},
            "random": {"query": {"generator": "uniform_matrix", "columns": 6}}, "grid": {"random.query.rows": [2]}}
    table = run_sweep(sweep_from_dict(spec), progress=False)
    assert (table["improvement_factor"] >= 1 - 1e-12).all() and (table["norm_c_squared"] > 0).all()
    exact = table[table["method"] == "exact"]["norm_c_squared"].to_numpy()
    assert (exact <= table[table["method"] == "strategy2"]["norm_c_squared"].to_numpy() * (1 + 1e-9)).all()
    with pytest.raises(InvalidParameterError, match="record"):
        sweep_from_dict(spec | {"record": ["objective"]})


def test_input_losses_are_recorded_as_lists_and_survive_parquet(tmp_path):
    spec = {"kind": "sweep", "methods": ["ladder", "lp"], "record": ["input_losses", "parameter"],
            "base": {"kind": "finite_query", "universe": {"type": "graph_atlas", "nodes": 4, "statistic": "edges"}, "loss": "absolute"},
            "grid": {"epsilon": [1.0]}}
    table = run_sweep(sweep_from_dict(spec), output=tmp_path / "t.parquet", progress=False)
    stored = pd.read_parquet(tmp_path / "t.parquet")
    for frame in (table, stored):
        losses = [list(v) for v in frame["input_losses"]]
        assert all(len(v) == 11 for v in losses)  # 11 graphs on 4 nodes
        # the minimax objective is the worst input's expected loss, computed independently here
        assert frame["objective"].tolist() == pytest.approx([max(v) for v in losses], rel=1e-12)
    assert pd.isna(table.loc[table["method"] == "lp", "parameter"]).all() and (table.loc[table["method"] == "ladder", "parameter"] > 0).all()
    count = {"kind": "sweep", "methods": ["closed_form"], "record": ["input_losses"],
             "base": {"kind": "calibration", "mechanism": "laplace", "epsilon": 1.0}}
    assert run_sweep(sweep_from_dict(count), progress=False)["input_losses"].isna().all()  # parameters, no matrix: empty


def test_a_dotted_grid_key_varies_a_field_of_a_base_table_without_touching_the_base():
    base = {"kind": "dx_linear_query", "n": 10, "query": [[0.0, 1.0, 3.0]], "metric": {"type": "uniform", "epsilon": 1.0}}
    spec = {"kind": "sweep", "methods": ["closed_form"], "base": base, "grid": {"metric.epsilon": [0.5, 2.0]}, "record": ["norm_c_squared"]}
    table = run_sweep(sweep_from_dict(spec), progress=False)
    # one query, plain DP on a uniform metric: c = range / epsilon
    assert table.set_index("metric.epsilon")["norm_c_squared"].to_dict() == pytest.approx({0.5: 36.0, 2.0: 2.25})
    assert base["metric"]["epsilon"] == 1.0
    with pytest.raises(InvalidParameterError, match=r"grid\.n\.size"):
        sweep_from_dict(spec | {"grid": {"n.size": [1]}})


def test_a_timeout_stops_a_slow_cell_records_it_and_the_sweep_goes_on(tmp_path):
    # the direct GS LP at n = 150, alpha = 0.9 takes about a minute; the factored route milliseconds
    spec = {"kind": "sweep", "methods": ["factored", "lp"], "base": {"kind": "count_query", "loss": "absolute", "alpha": 0.9, "n": 8},
            "grid": {"n": [8, 150]}}
    table = run_sweep(sweep_from_dict(spec), output=tmp_path / "t.parquet", progress=False, timeout=2.0, memory=True, workers=2)
    slow = table[(table["n"] == 150) & (table["method"] == "lp")].iloc[0]
    assert slow["status"] == "timeout" and "TimeoutError" in slow["error"] and 2.0 <= slow["seconds"] < 10
    fine = table.drop(slow.name)
    assert (fine["error"] == "").all() and fine["certificate_ok"].all() and (fine["peak_mib"] > 0).all()
    serial = run_sweep(sweep_from_dict(spec | {"grid": {"n": [8]}}), progress=False)
    assert fine[fine["n"] == 8]["objective"].tolist() == serial["objective"].tolist()  # the same solve in its own process


@pytest.mark.parametrize("options", [{"timeout": 0.0}, {"timeout": float("nan")}, {"timeout": True},
                                     {"timeout": 5.0, "scheduler": "tcp://127.0.0.1:1"}])
def test_bad_timeouts_are_refused_before_any_work(smallest, options, monkeypatch):
    monkeypatch.setattr(sweeps, "solve_cell", lambda *a, **k: pytest.fail("a cell was solved"))
    with pytest.raises(InvalidParameterError, match="timeout"):
        run_sweep(load_sweep(smallest), progress=False, **options)


def test_slow_cells_reach_disk_before_the_batch_is_full(smallest, tmp_path, monkeypatch):
    # a driver killed outright (no finally) keeps every cell written by then
    output = tmp_path / "out.parquet"
    monkeypatch.setattr(sweeps, "FLUSH_SECONDS", 0.0)
    real, seen = sweeps.solve_cell, []

    def counting(problem, method, key):
        seen.append(len(list((tmp_path / "out.parquet.parts").glob("part-*.parquet"))))
        return real(problem, method, key)

    monkeypatch.setattr(sweeps, "solve_cell", counting)
    run_sweep(load_sweep(smallest), output=output, progress=False)
    assert seen == list(range(12))  # one part per finished cell, each on disk before the next cell starts


def test_a_cell_process_ends_when_its_driver_is_killed(tmp_path):
    # SIGKILL leaves no finally in the driver: the cell's own watchdog must stop it
    import os
    import signal
    import subprocess
    import sys
    import time

    marker = tmp_path / "cell.pid"
    script = tmp_path / "driver.py"
    script.write_text(f"""
import os, time
import dpopt.sweeps as sweeps
def slow(problem, method, key, *args):
    open({str(marker)!r}, "w").write(str(os.getpid()))
    time.sleep(120)
sweeps.solve_cell = slow
if __name__ == "__main__":
    spec = {{"kind": "sweep", "methods": ["factored"], "base": {{"kind": "count_query", "n": 5, "alpha": 0.5}}}}
    sweeps.run_sweep(sweeps.sweep_from_dict(spec), timeout=100, progress=False)
""")
    driver = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while not marker.exists() or not marker.read_text():
            assert time.monotonic() < deadline and driver.poll() is None
            time.sleep(0.1)
        cell = int(marker.read_text())
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait()
        deadline = time.monotonic() + 10
        while True:
            try:
                os.kill(cell, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, "the cell's process outlived its driver"
            time.sleep(0.1)
    finally:
        if driver.poll() is None:
            driver.kill()


def test_a_second_sweep_on_the_same_output_is_refused_while_the_first_runs(smallest, tmp_path, monkeypatch):
    # two sweeps on one output used to race: the first one's gather removed the parts folder
    # under the second, an internal error
    output = tmp_path / "out.parquet"
    real = sweeps.solve_cell
    second: list[object] = []

    def with_a_rival(problem, method, key):
        if not second:  # while the first sweep holds the output, a second one starts
            with pytest.raises(InvalidParameterError, match="output.*no other sweep is writing"):
                run_sweep(load_sweep(smallest), output=output, progress=False)
            second.append(key)
        return real(problem, method, key)

    monkeypatch.setattr(sweeps, "solve_cell", with_a_rival)
    table = run_sweep(load_sweep(smallest), output=output, progress=False)
    assert second and len(table) == 12 and table["certificate_ok"].all()
    pd.testing.assert_frame_equal(pd.read_parquet(output), table)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.parquet", "sweep.toml"]  # no lock file left behind


def test_the_cli_refuses_an_output_another_process_is_writing_and_a_killed_holder_frees_it(smallest, tmp_path, capsys):
    import subprocess
    import sys

    output = tmp_path / "cli.parquet"
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time\n"
                               f"h = open({str(output) + '.lock'!r}, 'a+'); fcntl.flock(h.fileno(), fcntl.LOCK_EX)\n"
                               "print('held', flush=True); time.sleep(120)"], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert main(["sweep", str(smallest), "--output", str(output), "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "'output'" in err and "cli.parquet.lock" in err
        assert not output.exists() and not output.with_name("cli.parquet.parts").exists()  # refused before any work
    finally:
        holder.kill()  # SIGKILL: no clean-up in the holder; the kernel drops its lock
        holder.wait()
        holder.stdout.close()
    assert main(["sweep", str(smallest), "--output", str(output), "--no-progress"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == 12


@pytest.mark.parametrize("occupant", ["another_table", "bytes", "folder", "parts_file"])
def test_an_output_that_is_not_an_earlier_sweeps_table_is_refused_and_left_alone(smallest, tmp_path, occupant):
    # it used to be deleted as a damaged part (a user's own Parquet table included), or end in an internal error
    output = tmp_path / "out.parquet"
    if occupant == "another_table":
        pd.DataFrame({"alpha": [0.5], "objective": [1.0]}).to_parquet(output)
    elif occupant == "bytes":
        output.write_bytes(b"PAR1 not really")
    elif occupant == "folder":
        output.mkdir()
    else:
        (tmp_path / "out.parquet.parts").write_text("mine")
    before = {p.name: (p.read_bytes() if p.is_file() else None) for p in tmp_path.iterdir()}
    with pytest.raises(InvalidParameterError, match="'output'"):
        run_sweep(load_sweep(smallest), output=output, progress=False)
    assert {p.name: (p.read_bytes() if p.is_file() else None) for p in tmp_path.iterdir()} == before


def test_a_damaged_part_file_is_solved_again(smallest, tmp_path):
    output = tmp_path / "out.parquet"
    parts = tmp_path / "out.parquet.parts"
    parts.mkdir()
    (parts / "part-1.parquet").write_bytes(b"cut short")
    table = run_sweep(load_sweep(smallest), output=output, progress=False)
    assert len(table) == 12 and table["certificate_ok"].all() and not parts.exists()


def _pid_after(seconds: float) -> int:
    import os
    import time

    time.sleep(seconds)
    return os.getpid()


def test_stopping_a_pool_kills_the_workers_running_cells():
    # what a sweep does on Ctrl-C: the cells running are not waited for
    import time
    from concurrent.futures import ProcessPoolExecutor

    pool = ProcessPoolExecutor(max_workers=2)
    pids = {f.result() for f in [pool.submit(_pid_after, 0.5) for _ in range(2)]}  # both workers, busy at once
    running = [pool.submit(_pid_after, 60.0) for _ in range(4)]
    time.sleep(0.5)
    start = time.monotonic()
    sweeps._stop_pool(pool)

    def alive(pid: int) -> bool:
        try:
            return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
        except FileNotFoundError:
            return False

    while any(alive(pid) for pid in pids) and time.monotonic() - start < 10:
        time.sleep(0.05)
    assert len(pids) == 2 and not any(alive(pid) for pid in pids)
    assert all(f.cancelled() or f.done() for f in running[2:])


def test_the_command_line_shows_the_progress_bar_on_a_terminal_only(smallest, tmp_path, capsys, monkeypatch):
    """Until 2026-11-29 ``dpopt sweep`` wrote tqdm's carriage-return updates into any stderr: a
    log file or a CI job's output got the bar's every redraw. ``compare`` already showed its
    bar on terminals only."""
    assert main(["sweep", str(smallest), "--output", str(tmp_path / "a.parquet")]) == 0
    assert "cell" not in capsys.readouterr().err  # capsys's stderr is not a terminal
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    assert main(["sweep", str(smallest), "--output", str(tmp_path / "b.parquet")]) == 0
    assert "12/12" in capsys.readouterr().err
    assert main(["sweep", str(smallest), "--output", str(tmp_path / "c.parquet"), "--no-progress"]) == 0
    assert capsys.readouterr().err == ""


class _Replies(socketserver.BaseRequestHandler):
    """A server that is not Dask and speaks first: an HTTP error, as a proxy sends it."""

    def handle(self) -> None:
        self.request.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")


@pytest.mark.parametrize("server_class,handler", [
    (http.server.ThreadingHTTPServer, http.server.BaseHTTPRequestHandler),  # silent until a request: the dashboard
    (socketserver.ThreadingTCPServer, _Replies),
])
def test_an_address_that_does_not_answer_as_dask_is_refused_naming_the_scheduler(server_class, handler, monkeypatch):
    """The Dask dashboard's address (an HTTP server) taken for the scheduler's: the sweep waited for
    ever (Dask's timeout does not cover its handshake); a server that replied at once had its
    "HTTP/1.1" read as a frame length of 3 EiB, and the sweep ended in a MemoryError (exit 1)."""
    pytest.importorskip("dask.distributed")
    monkeypatch.setattr(sweeps, "SCHEDULER_SECONDS", 2.0)
    server = server_class(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    start = time.perf_counter()
    try:
        with pytest.raises(InvalidParameterError, match="'scheduler'.*answers within 2 s"):
            run_sweep(sweep_from_dict(_spec()), scheduler=f"tcp://127.0.0.1:{server.server_address[1]}", progress=False)
    finally:
        server.shutdown()
        server.server_close()
    assert time.perf_counter() - start < 30


def test_the_table_says_which_method_auto_ran_and_resumes_a_table_written_before_it_did(tmp_path):
    """An ``auto`` row said "auto" and nothing more (its status and solver do not name a method);
    ``ran`` is the method that gave the row, the one ``dpopt.solve`` picks for that cell alone."""
    import dpopt

    spec = {"kind": "sweep", "methods": ["auto", "lp"], "base": {"kind": "count_query", "loss": "absolute", "n": 6},
            "grid": {"alpha": [0.3, 0.6]}}
    table = run_sweep(sweep_from_dict(spec), progress=False)
    for _, row in table.iterrows():
        alone = dpopt.solve(dpopt.CountQuery(n=6, alpha=row["alpha"], loss="absolute"), row["method"])
        assert row["ran"] == alone.method and row["ran"] != "auto"
    failing = {**spec, "grid": {"alpha": [0.3]}, "methods": ["auto"], "base": {**spec["base"], "n": 10**7}}
    assert run_sweep(sweep_from_dict(failing), progress=False)["ran"].tolist() == [""]  # refused: nothing ran
    output = tmp_path / "t.parquet"
    first = {**spec, "grid": {"alpha": [0.3]}}
    run_sweep(sweep_from_dict(first), output=output, progress=False)
    pd.read_parquet(output).drop(columns="ran").to_parquet(output)  # as an earlier dpopt wrote it
    resumed = run_sweep(sweep_from_dict(spec), output=output, progress=False)
    assert len(resumed) == 4 and set(resumed.loc[resumed["alpha"] == 0.6, "ran"]) == {"factored", "lp"}


def test_a_scheduler_address_works_where_an_event_loop_is_running_as_in_jupyter():
    """The address check runs its own event loop; in the main thread, where Jupyter's loop is
    running, ``asyncio.run`` would refuse to start and a good address would read as a bad one."""
    distributed = pytest.importorskip("dask.distributed")
    import asyncio

    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        async def in_a_notebook():
            return run_sweep(sweep_from_dict(_spec()), scheduler=cluster.scheduler_address, progress=False)

        table = asyncio.run(in_a_notebook())
    serial = run_sweep(sweep_from_dict(_spec()), progress=False)
    pd.testing.assert_frame_equal(serial[STABLE], table[STABLE])


def test_a_scheduler_without_workers_is_said_and_the_sweep_runs_once_one_joins():
    """A scheduler with no workers made the sweep wait with nothing said (0 of N on the bar, for
    ever if none came): now a RuntimeWarning says why, and the cells run once a worker joins."""
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(n_workers=0, threads_per_worker=1, processes=False, dashboard_address=":0") as cluster:
        joins = threading.Timer(2.0, cluster.scale, args=(1,))
        joins.start()
        try:
            with pytest.warns(RuntimeWarning, match="has no workers yet"):
                table = run_sweep(sweep_from_dict(_spec()), scheduler=cluster.scheduler_address, progress=False)
        finally:
            joins.cancel()
    serial = run_sweep(sweep_from_dict(_spec()), progress=False)
    pd.testing.assert_frame_equal(serial[STABLE], table[STABLE])


def test_a_worker_killed_mid_sweep_leaves_its_cell_a_row_and_the_sweep_goes_on(tmp_path, monkeypatch):
    """A pool worker killed while solving (out of memory, a signal) broke the pool, and the sweep
    ended "internal error"; a rerun met the same cell and ended again. Now the cells not returned
    run each in its own process: a cell that kills that one too is a row, the rest are solved."""
    import multiprocessing
    import os
    import signal

    kills = tmp_path / "kills"
    real = sweeps.solve_cell

    def killing(problem, method, key, *extra):
        if problem["alpha"] == 0.5 and problem["n"] == 10 and method == "lp":
            with kills.open("a") as handle:
                handle.write("x")
            os.kill(os.getpid(), signal.SIGKILL)
        return real(problem, method, key, *extra)

    monkeypatch.setattr(sweeps, "solve_cell", killing)  # forked pool workers see it; so do the
    monkeypatch.setattr(sweeps, "isolation_context", lambda: multiprocessing.get_context("fork"))  # isolated cells, forked
    table = run_sweep(sweep_from_dict(_spec()), workers=2, progress=False)
    assert kills.read_text() == "xx"  # once in the pool, once alone
    culprit = (table["alpha"] == 0.5) & (table["n"] == 10) & (table["method"] == "lp")
    assert table.loc[culprit, "error"].str.startswith("ProcessError").all() and "exit code -9" in table.loc[culprit, "error"].iloc[0]
    monkeypatch.setattr(sweeps, "solve_cell", real)
    serial = run_sweep(sweep_from_dict(_spec()), progress=False)
    pd.testing.assert_frame_equal(serial.loc[~culprit, STABLE], table.loc[~culprit, STABLE])


def test_a_scheduler_lost_mid_sweep_is_one_line_naming_it(tmp_path, capfd):
    """The scheduler going away mid-sweep ended in "internal error (please report it):
    FutureCancelledError" after 30 lines of Dask's logged tracebacks; it is one line naming the
    scheduler (exit 2), and the rows finished are kept."""
    distributed = pytest.importorskip("dask.distributed")
    spec = tmp_path / "s.toml"
    spec.write_text('kind = "sweep"\nmethods = ["lp"]\n[base]\nkind = "count_query"\nloss = "absolute"\nn = 60\n'
                    f"[grid]\nalpha = {[round(0.05 + 0.035 * i, 3) for i in range(24)]}\n")  # ~20 s of cells: far past the 1.5 s
    cluster = distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=":0")
    address = cluster.scheduler_address
    threading.Timer(1.5, cluster.close).start()
    code = main(["sweep", str(spec), "--output", str(tmp_path / "t.parquet"), "--scheduler", address, "--no-progress"])
    err = capfd.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "'scheduler'" in err and address in err and "a rerun resumes" in err
