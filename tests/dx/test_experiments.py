"""Perrier et al.'s experiments as sweeps, on small sizes (notebook 02 runs the paper's)."""

import numpy as np
import pytest

import dpopt
from dpopt.dx.experiments import (
    blowfish_policies,
    multi_queries,
    single_queries,
    synthetic_universe,
    us_cities,
)
from dpopt.sweeps import sweep_from_dict


def _queries(spec):
    """seed -> the query its cell solved (read from the sweep's own cells)."""
    return {cell.parameters["seed"]: np.asarray(cell.problem["query"])[0] for cell in sweep_from_dict(spec).cells}


def test_single_queries_give_the_closed_form_and_its_improvement_factor():
    coords, hist = synthetic_universe(size=15, records=300, seed=1)
    assert hist.sum() == 300
    spec = single_queries({"type": "euclidean", "coordinates": coords.tolist()}, 15, queries=6)
    table = dpopt.sweep(spec, progress=False)
    assert len(table) == 6 and table["certificate_ok"].all()
    d = np.sqrt(((coords[:, None] - coords[None]) ** 2).sum(-1))
    off = ~np.eye(15, dtype=bool)
    for seed, q in _queries(spec).items():  # independently: c = max |q_i - q_j| / d_ij, baseline = range / min d
        row = table[table["seed"] == seed].iloc[0]
        c = (np.abs(q[:, None] - q[None])[off] / d[off]).max()
        assert row["norm_c_squared"] == pytest.approx(c**2, rel=1e-12)
        assert row["improvement_factor"] == pytest.approx(np.ptp(q) / d[off].min() / c, rel=1e-12)
        assert row["improvement_factor"] >= 1 - 1e-12  # a Euclidean universe never loses to plain DP


def test_multi_queries_exact_optima_dominate_the_strategies():
    coords, _ = synthetic_universe(size=12, records=100, seed=2)
    table = dpopt.sweep(multi_queries(coords, entries="binary", seeds=3, ks=[1, 3]), progress=False)
    assert table["certificate_ok"].all()
    wide = table.pivot_table(index=["random.query.rows", "seed"], columns="method", values="norm_c_squared")
    assert (wide["exact"].to_numpy()[:, None] <= wide[["strategy1", "strategy2", "psa"]].to_numpy() * (1 + 1e-6)).all()
    with pytest.raises(dpopt.InvalidParameterError, match="entries"):
        multi_queries(coords, entries="gaussian")


def test_blowfish_policies_scale_as_one_over_epsilon_and_grow_with_the_threshold():
    coords, _ = synthetic_universe(size=12, records=100, seed=3)
    table = dpopt.sweep(blowfish_policies(coords, thresholds=[10, 40], epsilons=[0.5, 2.0], queries=4), progress=False)
    assert len(table) == 2 * 2 * 2 * 4 and table["certificate_ok"].all()
    c = np.sqrt(table.set_index(["metric.type", "metric.threshold", "metric.epsilon", "seed"])["norm_c_squared"])
    # both policies are epsilon times a fixed metric, so c(eps) eps does not depend on eps
    np.testing.assert_allclose(c.xs(0.5, level="metric.epsilon") * 0.5, c.xs(2.0, level="metric.epsilon") * 2.0, rtol=1e-12)
    # a larger threshold protects more pairs: never less noise
    assert (c.xs(40.0, level="metric.threshold") >= c.xs(10.0, level="metric.threshold") * (1 - 1e-12)).all()


def test_us_cities_from_geonames():
    cities = us_cities()
    assert len(cities) == 841  # GeoNames cities15000 as shipped by geotext; the paper had 741
    assert cities["elevation"].notna().all() and (cities["population"] > 50_000).all()
    some = cities.iloc[:60]
    spec = single_queries({"type": "euclidean", "coordinates": some[["longitude", "latitude"]].to_numpy().tolist()}, 60, queries=3)
    assert (dpopt.sweep(spec, progress=False)["improvement_factor"] >= 1 - 1e-12).all()


@pytest.mark.slow
def test_full_section_4_2_sweep_exact_optima_dominate():
    """Fig. 2(c)/(d) at the paper's size: 100 matrices per K, K = 1..10, both coefficient types."""
    coords, _ = synthetic_universe(size=50, records=10_000, seed=0)
    for entries in ("uniform", "binary"):
        table = dpopt.sweep(multi_queries(coords, entries=entries, seeds=100), workers=2, progress=False)
        assert (table["error"] == "").all() and table["certificate_ok"].all()
        wide = table.pivot_table(index=["random.query.rows", "seed"], columns="method", values=["improvement_factor", "norm_c_squared"])
        others = ["strategy1", "strategy2", "psa"]
        assert (wide["norm_c_squared"]["exact"].to_numpy()[:, None] <= wide["norm_c_squared"][others].to_numpy() * (1 + 1e-6)).all()
        ifs = wide["improvement_factor"].replace([np.inf], np.nan).dropna()  # a constant binary row has no IF
        assert (ifs["exact_improvement"].to_numpy()[:, None] >= ifs[others].to_numpy() * (1 - 1e-6)).all()
