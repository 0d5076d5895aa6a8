"""dpopt.solvers.run_program: the first attempt's HiGHS options, and the retries after it."""

import pytest

from dpopt.lazy_modules import cvxpy as cp
from dpopt.solvers import run_program
from dpopt.validation import InvalidParameterError


def small_lp() -> tuple[cp.Problem, cp.Variable]:
    x = cp.Variable(3, nonneg=True)
    return cp.Problem(cp.Minimize(x[0] + 2 * x[1] + 3 * x[2]), [cp.sum(x) == 1, x[0] <= 0.25, x[1] <= 0.5]), x


@pytest.mark.parametrize("first", [None, {"solver": "ipm", "run_crossover": "on"}, {"solver": "simplex"}])
def test_every_first_attempt_reaches_the_optimum(first):
    program, x = small_lp()
    info = run_program(program, owner="test", highs_first=first)
    assert info.solver == "HIGHS" and info.objective == pytest.approx(0.25 + 2 * 0.5 + 3 * 0.25, rel=1e-9)


def test_a_first_attempt_that_fails_falls_back_to_the_retries():
    """HiGHS refuses an unknown value of its 'solver' option; the retries run with dpopt's own options."""
    program, _ = small_lp()
    assert run_program(program, owner="test", highs_first={"solver": "no_such_method"}).objective == pytest.approx(2.0, rel=1e-9)


def test_a_failed_qp_is_retried_first_with_a_larger_hessian_regularisation(monkeypatch):
    """An LP's retries are unchanged (the option only acts on QPs); a QP's first retry is QP_RETRY."""
    import dpopt.solvers as solvers

    real = solvers._attempt
    tried = []

    def first_fails(program, name, options):
        tried.append(options.get("highs_options", {}))
        return "solver_error: Solve error" if len(tried) == 1 else real(program, name, options)

    monkeypatch.setattr(solvers, "_attempt", first_fails)
    x = cp.Variable(2)
    qp = cp.Problem(cp.Minimize(cp.sum_squares(x - 1.0)), [x[0] + x[1] <= 1.0])
    assert run_program(qp, solver="HIGHS", owner="test").objective == pytest.approx(0.5, rel=1e-8)
    assert tried[1] == solvers.QP_RETRY["highs_options"]
    tried.clear()
    program, _ = small_lp()
    run_program(program, owner="test")
    assert solvers.QP_RETRY["highs_options"] not in tried


def test_highs_solves_the_hotspots_surrogate_qp_it_called_non_convex():
    """HiGHS 1.16 stopped on this convex QP (diagonal Hessian of 1s and 2s) with "Non-convex" at
    its default regularisation; the retry solves it, to Clarabel's optimum."""
    import dpopt
    from dpopt.problem_files import load_problem
    from tests.conftest import PROBLEMS

    problem = load_problem(PROBLEMS / "dx_hotspots.toml")
    highs = dpopt.solve(problem, "exact_surrogate", solver="HIGHS")
    clarabel = dpopt.solve(problem, "exact_surrogate", solver="CLARABEL")
    assert highs.solver == "HIGHS" and highs.certificate.ok and highs.exact
    assert highs.objective == pytest.approx(clarabel.objective, rel=1e-9)


def test_when_every_simplex_and_crossover_fail_the_interior_point_alone_is_the_last_retry(monkeypatch):
    """The count_query interaction LP at n = 200 under zero-one loss ended in "Solve error" for
    dual simplex, both simplex retries and the interior point with crossover (exit 3, 60 s);
    the interior point without crossover solves it. Here every attempt but that one fails."""
    import dpopt.solvers as solvers

    real = solvers._attempt
    tried = []

    def only_the_bare_interior_point(program, name, options):
        tried.append(options.get("highs_options", {}))
        if options.get("highs_options", {}).get("run_crossover") == "off":
            return real(program, name, options)
        return "solver_error: Solve error"

    monkeypatch.setattr(solvers, "_attempt", only_the_bare_interior_point)
    program, _ = small_lp()
    assert run_program(program, owner="test").objective == pytest.approx(2.0, rel=1e-8)
    assert len(tried) == 5 and tried[-1] == {"solver": "ipm", "run_crossover": "off"}


def test_the_most_feasible_attempt_is_kept_with_its_own_duals_and_the_last_resort_waits_for_failure(monkeypatch):
    """The GS LP at n = 200: a first attempt 1.01e-9 off, then three retries (45 s) that did no
    better; the kept point must carry its own duals (the certified bounds read them), and the
    bare interior point (a looser point, 2.7e-7 off there) runs only when nothing solved."""
    import numpy as np

    import dpopt.solvers as solvers

    real = solvers._attempt
    tried = []

    def first_slightly_off_then_worse(program, name, options):
        tried.append(options.get("highs_options", {}))
        if len(tried) == 1:
            status = real(program, name, options)
            x = program.variables()[0]
            x.value = x.value + 2e-9  # rows now sum to 1 + 6e-9: above VIOLATION_RETRY
            return status
        if options.get("highs_options", {}).get("solver") == "ipm":
            status = real(program, name, options)
            program.variables()[0].value = np.array([0.2, 0.5, 0.3 + 1e-3])
            for constraint in program.constraints:
                constraint.save_dual_value(np.full(np.shape(constraint.dual_value), 7.0))
            return status
        return "solver_error: Solve error"

    monkeypatch.setattr(solvers, "_attempt", first_slightly_off_then_worse)
    program, x = small_lp()
    info = run_program(program, owner="test")
    assert len(tried) == 4 and {"solver": "ipm", "run_crossover": "off"} not in tried
    assert info.max_violation == pytest.approx(6e-9, rel=1e-6)
    assert x.value == pytest.approx([0.25 + 2e-9, 0.5 + 2e-9, 0.25 + 2e-9], abs=1e-12)
    assert float(np.ravel(program.constraints[0].dual_value)[0]) != 7.0
    assert all(np.all(np.asarray(c.dual_value) >= 0) for c in program.constraints[1:])


def test_highs_options_do_not_reach_other_solvers():
    program, _ = small_lp()
    assert run_program(program, solver="CLARABEL", owner="test", highs_first={"solver": "ipm"}).objective == pytest.approx(2.0, rel=1e-6)


# -- run_interruptibly: Ctrl-C reaches a HiGHS run -------------------------------------------


def _atlas_dual() -> object:
    """The 5-node atlas LP's dual (a few hundred simplex iterations, about twenty interior-point ones)."""
    import dpopt
    from dpopt.programs.finite_query import build_dual_lp

    problem = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 5, "statistic": "triangles"}, epsilon=1.0)
    return build_dual_lp(problem).arrays


def _highs(lp: object, solver: str) -> object:
    from dpopt.programs.finite_query import HIGHS_OPTIONS
    from dpopt.solvers import new_highs

    highs = new_highs({**HIGHS_OPTIONS, "solver": solver})
    highs.passModel(lp.highs_lp())
    return highs


def _send_sigint_on_call(highs: object, call: int) -> None:
    """Make the run itself press Ctrl-C (SIGINT to this process) at its ``call``-th iteration callback."""
    import os
    import signal

    calls = []

    def press(event: object) -> None:
        calls.append(1)
        if len(calls) == call:
            os.kill(os.getpid(), signal.SIGINT)

    highs.cbSimplexInterrupt.subscribe(press)
    highs.cbIpmInterrupt.subscribe(press)


@pytest.fixture
def default_sigint():
    """Python's own SIGINT handler (a pytest-xdist worker may run with another), restored after."""
    import signal

    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, saved)


@pytest.mark.parametrize("solver", ["simplex", "ipm"])
def test_ctrl_c_stops_a_highs_run_and_the_instance_solves_again_as_new(solver, default_sigint):
    import signal

    from dpopt.solvers import run_interruptibly

    lp = _atlas_dual()
    fresh = _highs(lp, solver)
    run_interruptibly(fresh)
    assert fresh.modelStatusToString(fresh.getModelStatus()) == "Optimal"
    highs = _highs(lp, solver)
    _send_sigint_on_call(highs, 3)
    with pytest.raises(KeyboardInterrupt):
        run_interruptibly(highs)
    assert highs.modelStatusToString(highs.getModelStatus()) == "Interrupted by user"
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored
    highs.clearSolver()
    run_interruptibly(highs)  # no Ctrl-C this time: the flag was cleared
    assert highs.modelStatusToString(highs.getModelStatus()) == "Optimal"
    assert highs.getInfo().objective_function_value == fresh.getInfo().objective_function_value


def test_ctrl_c_is_left_to_a_callers_own_handler():
    import signal

    from dpopt.solvers import run_interruptibly

    highs = _highs(_atlas_dual(), "simplex")
    _send_sigint_on_call(highs, 3)
    saved = signal.signal(signal.SIGINT, signal.SIG_IGN)  # e.g. a caller that ignores Ctrl-C
    try:
        run_interruptibly(highs)
    finally:
        signal.signal(signal.SIGINT, saved)
    assert highs.modelStatusToString(highs.getModelStatus()) == "Optimal"


def test_off_the_main_thread_a_run_is_plain():
    # signal handlers can be set only in the main thread: elsewhere (the CLI's worker, Dask's)
    # run_interruptibly must neither try nor fail
    import threading

    from dpopt.solvers import run_interruptibly

    highs = _highs(_atlas_dual(), "ipm")
    errors = []

    def work() -> None:
        try:
            run_interruptibly(highs)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert not errors and highs.modelStatusToString(highs.getModelStatus()) == "Optimal"


def test_a_solver_that_cannot_take_the_programs_cones_is_named_not_retried():
    # cvxpy refuses a second-order cone for HiGHS before any solve; that is the user's choice of
    # solver (exit 2 naming it), not a solver failure to retry four times (exit 3, until 2026-11-28)
    x = cp.Variable(3)
    program = cp.Problem(cp.Minimize(cp.norm(x, 2)), [cp.sum(x) == 1])
    with pytest.raises(InvalidParameterError) as info:
        run_program(program, solver="HIGHS", owner="a test")
    assert info.value.parameter == "solver" and "CLARABEL" in str(info.value)
    assert run_program(program, solver="CLARABEL").objective == pytest.approx(1 / 3**0.5, rel=1e-7)
