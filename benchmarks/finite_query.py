"""Finite-universe mechanisms (Wu-Xia-He): the LP and every construction, timed and measured.

    python benchmarks/finite_query.py [--nodes 4 5 6] [--epsilons 0.5 1 2 4] [--baseline-timeout 300]
                                      [--atlas7-epsilons 0.5 1 2 4] [--atlas7-baseline-timeout 900]
                                      [--atlas7-without-quotients] [--atlas7-in-turn]
                                      [--random-ipx-seconds 0] [--parts 1 2 3]

Prints three tables:

1. The minimax LP on the graph-atlas universes (triangle counts, all non-isomorphic graphs
   on k nodes, edge-DP between classes) for each epsilon: dpopt's ``lp`` route (HiGHS
   interior point + crossover on the LP's dual, built from sparse arrays) against the
   baseline, the same LP written as a cvxpy program and solved by cvxpy's HiGHS interface
   with its defaults; wall seconds, peak memory and their ratios.
2. The 1044 seven-node graphs: the LP (29,232 variables, 367,248 privacy rows; goal
   <= 10 s) for each epsilon with its certified lower bound (``bound_datasets`` > 0: from
   the LP relaxed to that many datasets, ``relaxation_lower_bound``; ``quotient_classes`` > 0:
   the mechanism came from the LP on that many classes of datasets, ``solve_by_quotients``),
   the baseline at the first epsilon under a time limit, with ``--atlas7-without-quotients``
   the same ``lp`` with quotients switched off (the full LP through its dual, in the same
   process: ``full_seconds``), with ``--atlas7-in-turn`` the same ``lp`` with its quotients
   solved one after another in this process instead of at once in child processes
   (``in_turn_seconds``; ``in_turn_same_bits``: the same mechanism), ``value_lp`` (the LP with
   one row per value) at each epsilon with its price (objective over the LP optimum), and
   every construction's seconds, minimax objective and price (goal: <= 1 s each).
3. A random universe with m = 5000 datasets, |R| = 50 outputs and average degree 10
   (``lp`` refuses it; with ``--random-ipx-seconds S`` its dual LP is handed to HiGHS's
   interior point for S seconds anyway, to show how far the route is from the goal), every
   construction on it (seconds and peak memory), and Theorem 3's index rule against the
   definition's m x m x |R| array (what made every construction refuse m = 5000 until
   session 18) on random universes of 500, 1000 and 5000 datasets.
"""

from __future__ import annotations

import argparse
import time

import cvxpy as cp
import numpy as np
import pandas as pd
from count_query import measure, run_with_timeout  # same folder: one way to measure and time out

import dpopt
from dpopt.mechanisms import set_sequences
from dpopt.programs import finite_query
from dpopt.programs.finite_query import HIGHS_OPTIONS, MAX_PRIVACY_ROWS, build_dual_lp, build_finite_program
from dpopt.solvers import new_highs
from dpopt.universes import Universe


def atlas_problem(nodes: int, epsilon: float) -> dpopt.FiniteQuery:
    return dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": nodes, "statistic": "triangles"}, epsilon=epsilon)


def _baseline_child(nodes: int, epsilon: float, queue) -> None:
    problem = atlas_problem(nodes, epsilon)
    def run():
        program = build_finite_program(problem)
        program.program.solve(solver=cp.HIGHS)
        return float(program.program.value)
    objective, seconds, peak = measure(run)
    queue.put((objective, seconds, peak))


def lp_table(nodes: list[int], epsilons: list[float], timeout: float) -> pd.DataFrame:
    rows = []
    dpopt.solve(atlas_problem(4, 1.0), "lp")  # imports and first-call caches
    for k in nodes:
        for epsilon in epsilons:
            problem = atlas_problem(k, epsilon)
            solution, seconds, peak = measure(lambda: dpopt.solve(problem, "lp"))
            baseline = run_with_timeout(_baseline_child, (k, epsilon), timeout)
            b_objective, b_seconds, b_peak = baseline[0] if baseline else (np.nan, np.inf, np.nan)
            rows.append({
                "nodes": k, "datasets": problem.size[0], "outputs": problem.size[1], "epsilon": epsilon,
                "privacy_rows": solution.details["privacy_rows"], "lp_seconds": seconds, "lp_peak_MiB": peak,
                "baseline_seconds": b_seconds, "baseline_peak_MiB": b_peak, "time_ratio": b_seconds / seconds,
                "memory_ratio": b_peak / peak, "objective": solution.objective,
                "relative_gap_to_baseline": abs(solution.objective - b_objective) / solution.objective,
                "optimality_gap": solution.details["optimality_gap"], "bound_datasets": solution.details["lower_bound_datasets"],
                "certificate_ok": solution.certificate.ok,
            })
    return pd.DataFrame(rows)


def constructions_table(problem: dpopt.FiniteQuery) -> pd.DataFrame:
    rows = []
    for method in dpopt.methods_for(problem):
        if method.name == "lp":
            continue
        solution, seconds, peak = measure(lambda: dpopt.solve(problem, method.name))
        rows.append({"method": method.name, "seconds": seconds, "peak_MiB": peak, "objective": solution.objective,
                     "parameter": solution.details.get("parameter", np.nan), "measured_loss": solution.certificate.max_privacy_loss,
                     "certificate_ok": solution.certificate.ok})
    return pd.DataFrame(rows).set_index("method")


def value_lp_table(lp_table: pd.DataFrame) -> pd.DataFrame:
    """``value_lp`` on the 1044 graphs at each epsilon of ``lp_table`` (the ``lp`` rows), priced against the LP optimum."""
    rows = []
    for epsilon, optimum in zip(lp_table["epsilon"], lp_table["objective"]):
        solution, seconds, peak = measure(lambda: dpopt.solve(atlas_problem(7, float(epsilon)), "value_lp"))
        rows.append({"epsilon": epsilon, "seconds": seconds, "peak_MiB": peak, "objective": solution.objective,
                     "price": solution.objective / optimum, "certificate_ok": solution.certificate.ok})
    return pd.DataFrame(rows)


def index_by_definition(hops: np.ndarray, values: np.ndarray, outputs: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """Theorem 3's index as the definition reads (and as dpopt computed it until session 18):
    an (x, y, r) array minimised over y. The baseline for ``set_sequences.compositional_index``."""
    reach = np.abs(values[:, None] - outputs[None, :]) <= delta[:, None] + 1e-12
    return np.where(reach[None, :, :], hops[:, :, None], set_sequences.UNREACHABLE).min(axis=1)


def index_table(sizes: list[int]) -> pd.DataFrame:
    """Theorem 3's index (delta = 1) on random universes: by value-and-radius groups against the definition's array."""
    rows = []
    for m in sizes:
        problem = dpopt.FiniteQuery(universe=random_universe(m, 10, 50), epsilon=1.0, outputs=list(range(50)), delta=1.0)
        u = problem.universe
        args = (u.hops, u.values, problem.outputs, problem.delta)
        grouped, seconds, peak = measure(lambda: set_sequences.compositional_index(*args))
        row = {"datasets": m, "seconds": seconds, "peak_MiB": peak}
        if 8.0 * m * m * 50 <= 2**31:  # the definition's array: 10 GB at m = 5000
            literal, b_seconds, b_peak = measure(lambda: index_by_definition(*args))
            row.update({"definition_seconds": b_seconds, "definition_peak_MiB": b_peak, "same": bool(np.array_equal(grouped, literal)),
                        "time_ratio": b_seconds / seconds, "memory_ratio": b_peak / max(peak, 1e-3)})
        else:
            row.update({"definition_seconds": "not run", "definition_peak_MiB": f"needs {8.0 * m * m * 50 / 2**30:.0f} GiB"})
        rows.append(row)
    return pd.DataFrame(rows)


def lp_with(problem: dpopt.FiniteQuery, **settings: object) -> tuple[dpopt.Solution, float, float]:
    """``lp`` measured with module constants of :mod:`dpopt.programs.finite_query` set to ``settings``
    (restored afterwards): ``QUOTIENT_ROWS=MAX_PRIVACY_ROWS`` switches quotients off (the full LP),
    ``QUOTIENT_CHILDREN=False`` solves the quotients one after another in this process."""
    saved = {name: getattr(finite_query, name) for name in settings}
    for name, value in settings.items():
        setattr(finite_query, name, value)
    try:
        return measure(lambda: dpopt.solve(problem, "lp"))
    finally:
        for name, value in saved.items():
            setattr(finite_query, name, value)


def atlas7_table(epsilons: list[float], timeout: float, compare: bool, in_turn: bool) -> pd.DataFrame:
    rows = []
    for position, epsilon in enumerate(epsilons):
        problem = atlas_problem(7, epsilon)
        solution, seconds, peak = measure(lambda: dpopt.solve(problem, "lp"))
        turn = lp_with(problem, QUOTIENT_CHILDREN=False) if in_turn else None
        full = lp_with(problem, QUOTIENT_ROWS=MAX_PRIVACY_ROWS) if compare else None
        baseline = run_with_timeout(_baseline_child, (7, epsilon), timeout) if position == 0 else None
        b_seconds = baseline[0][1] if baseline else (f"> {timeout:.0f}" if position == 0 else "not run")
        rows.append({
            "epsilon": epsilon, "lp_seconds": seconds, "lp_peak_MiB": peak, "objective": solution.objective,
            "certified_lower_bound": solution.details["lower_bound"], "optimality_gap": solution.details["optimality_gap"],
            "bound_datasets": solution.details["lower_bound_datasets"], "quotient_classes": solution.details["quotient_classes"],
            "certificate_ok": solution.certificate.ok,
            **({"in_turn_seconds": turn[1], "in_turn_peak_MiB": turn[2],
                "in_turn_same_bits": bool(np.array_equal(turn[0].mechanism.to_numpy(), solution.mechanism.to_numpy()))}
               if turn else {}),
            **({"full_seconds": full[1], "full_peak_MiB": full[2], "full_objective": full[0].objective,
                "full_optimality_gap": full[0].details["optimality_gap"]} if full else {}),
            "baseline_seconds": b_seconds,
            "time_ratio": (baseline[0][1] / seconds if baseline else (f"> {timeout / seconds:.3g}" if position == 0 else "")),
        })
    return pd.DataFrame(rows)


def random_universe(m: int, degree: int, outputs: int, seed: int = 0) -> Universe:
    rng = np.random.default_rng(seed)
    tree = [(int(rng.integers(0, i)), i) for i in range(1, m)]  # connected
    extra = rng.integers(0, m, size=(m * degree // 2 - (m - 1), 2))
    edges = np.array(tree + [tuple(e) for e in extra if e[0] != e[1]])
    values = rng.integers(0, outputs, size=m)
    return Universe.from_edges(values, edges, source=f"random(m={m}, degree={degree}, seed={seed})")


def interior_point_for(problem: dpopt.FiniteQuery, seconds: float) -> str:
    """Run HiGHS's interior point on the problem's dual LP (the ``lp`` route, bypassing its size
    limit) for at most ``seconds``; say how far it got."""
    start = time.perf_counter()
    dual = build_dual_lp(problem)
    built = time.perf_counter() - start
    highs = new_highs({**HIGHS_OPTIONS, "solver": "ipm", "run_crossover": "off", "time_limit": seconds})
    highs.passModel(dual.lp)
    start = time.perf_counter()
    highs.run()
    info = highs.getInfo()
    return (f"dual LP {dual.matrix.shape[0]:,} x {dual.matrix.shape[1]:,} ({dual.matrix.nnz:,} non-zeros) built in {built:.1f} s; "
            f"HiGHS interior point: {highs.modelStatusToString(highs.getModelStatus())} after {time.perf_counter() - start:.0f} s, "
            f"{info.ipm_iteration_count} iterations")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[4, 5, 6])
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--baseline-timeout", type=float, default=300.0)
    parser.add_argument("--atlas7-epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--atlas7-baseline-timeout", type=float, default=900.0)
    parser.add_argument("--atlas7-without-quotients", action="store_true",
                        help="also solve each 1044-graph LP with quotients switched off (the full LP)")
    parser.add_argument("--atlas7-in-turn", action="store_true",
                        help="also solve each 1044-graph LP with its quotients solved one after another in this process")
    parser.add_argument("--parts", type=int, nargs="+", choices=[1, 2, 3], default=[1, 2, 3], help="which tables to print")
    parser.add_argument("--random-ipx-seconds", type=float, default=0.0,
                        help="also run the interior point on the random universe's LP for this long")
    args = parser.parse_args()
    pd.set_option("display.width", 200)
    pd.set_option("display.max_columns", 30)
    if 1 in args.parts:
        print("1. Minimax LP on graph-atlas universes (triangle counts): dpopt lp vs the cvxpy program on HiGHS")
        print(lp_table(args.nodes, args.epsilons, args.baseline_timeout).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    if 2 in args.parts:
        atlas7(args)
    if 3 in args.parts:
        random_part(args)


def atlas7(args: argparse.Namespace) -> None:
    atlas = atlas_problem(7, 1.0)
    rows = len(atlas.privacy_pairs()[0]) * atlas.size[1]
    print(f"\n2. The 1044 seven-node graphs: LP of {atlas.size[0] * atlas.size[1]:,} variables and {rows:,} privacy rows "
          f"(the lp route takes <= {MAX_PRIVACY_ROWS:,}); baseline at the first epsilon only:")
    table = atlas7_table(args.atlas7_epsilons, args.atlas7_baseline_timeout, args.atlas7_without_quotients,
                         args.atlas7_in_turn)
    print(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    print("value_lp (the best mechanism of the value alone: one LP row per triangle count) at each epsilon; "
          "price = objective / LP optimum:")
    print(value_lp_table(table).to_string(index=False, float_format=lambda v: f"{v:.4g}"))
    constructions = constructions_table(atlas)
    optimum = table.set_index("epsilon")["objective"].get(1.0, np.nan)
    constructions["price"] = constructions["objective"] / optimum
    print("Constructions at epsilon = 1, calibrated to a measured loss of epsilon; price = objective / LP optimum:")
    print(constructions.to_string(float_format=lambda v: f"{v:.4g}"))


def random_part(args: argparse.Namespace) -> None:
    start = time.perf_counter()
    universe = random_universe(5000, 10, 50)
    problem = dpopt.FiniteQuery(universe=universe, epsilon=1.0, outputs=list(range(50)))
    built = time.perf_counter() - start
    rows = len(problem.privacy_pairs()[0]) * problem.size[1]
    print(f"\n3. Random universe m = 5000, |R| = 50, average degree 10 (built in {built:.1f} s): "
          f"{len(universe.neighbours):,} neighbouring pairs, {rows:,} privacy rows: lp refused (limit {MAX_PRIVACY_ROWS:,}).")
    if args.random_ipx_seconds > 0:
        print(f"   Bypassing the limit: {interior_point_for(problem, args.random_ipx_seconds)}")
    print("Constructions at epsilon = 1, calibrated to a measured loss of epsilon (no LP optimum to price them against):")
    print(constructions_table(problem).to_string(float_format=lambda v: f"{v:.4g}"))
    print("Theorem 3's index (delta = 1) by value-and-radius groups against the definition's (x, y, r) array:")
    print(index_table([500, 1000, 5000]).to_string(index=False, float_format=lambda v: f"{v:.4g}"))


if __name__ == "__main__":
    main()
