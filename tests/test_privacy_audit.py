"""The built-in privacy audit (dpopt.privacy_audit): no false alarms on certified samplers, broken ones caught."""

import dataclasses
import json
import math

import numpy as np
import pytest

import dpopt
from dpopt.cli import main
from dpopt.mechanisms.integer_noise import PeriodicNoise
from dpopt.privacy_audit import AuditReport, PairAudit, _bound, audit_sampler, float_laplace_support, textbook_laplace
from dpopt.registry import REGISTRY
from dpopt.validation import InvalidParameterError
from tests.conftest import PROBLEMS
from tests.test_registry import EXAMPLES, METHOD_EXAMPLES

dpopt.registry._load_methods()
CASES = [(kind, name) for kind in sorted(REGISTRY) for name in sorted(REGISTRY[kind])]


@pytest.mark.parametrize("kind,name", CASES)
def test_every_registered_sampler_passes_at_its_certified_epsilon(kind, name):
    solution = dpopt.solve(METHOD_EXAMPLES.get((kind, name), EXAMPLES[kind])(), name)
    report = dpopt.audit(solution, draws=20_000, confidence=0.999, seed=7)
    assert report.passed, report.to_dict()
    assert report.epsilon_lower_bound >= 0 and len(report.pairs) >= 1


def test_the_audit_is_tight_enough_to_see_most_of_a_small_epsilon():
    """Randomized response at eps = 1 with 200k draws: the bound comes within 10% of the certified epsilon."""
    report = dpopt.audit(dpopt.solve(dpopt.CountQuery(n=1, epsilon=1.0, loss="zero_one"), "randomized_response"), draws=200_000, seed=1)
    assert report.passed and report.epsilon_lower_bound > 0.9


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_sampler_with_half_the_noise_is_caught(seed):
    """Geometric noise at 2 eps claimed as eps: the bound exceeds eps (at 95% per run; fixed seeds)."""
    epsilon = 0.5
    noise = PeriodicNoise.geometric(1, math.exp(-2 * epsilon))

    def half_noise(x, n, rng):
        return x + noise.sample(n, rng=rng)

    report = audit_sampler(half_noise, [(0, 1)], epsilon, draws=50_000, seed=seed)
    assert not report.passed and report.epsilon_lower_bound > epsilon


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_textbook_float_laplace_fails_under_mironovs_attack(seed):
    """On inputs 0 and 1 the textbook float sampler at eps = 1 leaks through the doubles it can produce; the
    same audit without the attack event does not see it (the leak is not in any threshold)."""
    sampler = textbook_laplace(1.0)
    attacked = audit_sampler(sampler, [(0.0, 1.0)], 1.0, draws=50_000, seed=seed, events=[float_laplace_support(1.0, 0.0)])
    assert not attacked.passed and "producible" in attacked.pairs[0].event
    assert audit_sampler(sampler, [(0.0, 1.0)], 1.0, draws=50_000, seed=seed).passed


def test_clopper_pearson_extremes_match_their_closed_forms():
    """All n hits against none: p_lower = (a/2)^(1/n) and q_upper = 1 - (a/2)^(1/n)."""
    n, alpha = 1000, 0.05
    low = (alpha / 2) ** (1 / n)
    assert _bound(n, 0, n, 0.0, alpha) == pytest.approx(math.log(low / (1 - low)), rel=1e-9)
    assert _bound(0, 5, n, 0.0, alpha) == 0.0
    assert _bound(500, 100, n, 0.6, alpha) == 0.0  # delta swallows the event: no evidence


def test_audit_arguments_are_checked_before_any_draw():
    calls = []

    def sampler(x, n, rng):
        calls.append(n)
        return np.zeros(n)

    for kwargs, field in ((dict(draws=10), "draws"), (dict(confidence=1.0), "confidence"), (dict(delta=2.0), "delta"), (dict(seed=-1), "seed")):
        with pytest.raises(InvalidParameterError, match=field):
            audit_sampler(sampler, [(0, 1)], 1.0, **kwargs)
    with pytest.raises(InvalidParameterError, match="pairs"):
        audit_sampler(sampler, [], 1.0)
    with pytest.raises(InvalidParameterError, match="pairs"):
        dpopt.audit(sampler)
    assert calls == []


@pytest.mark.parametrize(("options", "field"), [
    (dict(seed=2.0), "seed"), (dict(seed=-1), "seed"), (dict(random_pairs=[1, 2]), "random_pairs"), (dict(random_pairs=1.5), "random_pairs"),
    (dict(pairs=-1), "pairs"), (dict(pairs=[1]), "pairs"), (dict(pairs=[]), "pairs"), (dict(pairs="01"), "pairs"), (dict(pairs=[(0, 1, 2)]), "pairs"),
    (dict(pairs=[(0, 99)]), "true_value"),
])
def test_a_solutions_audit_options_are_checked_before_any_draw(options, field):
    solution = dpopt.solve(dpopt.CountQuery(n=3, alpha=0.5))
    with pytest.raises(InvalidParameterError, match=f"'{field}'"):
        dpopt.audit(solution, draws=100, **options)


def test_cli_audit_reports_and_exits_by_the_verdict(capsys, monkeypatch):
    assert main(["audit", str(PROBLEMS / "gupte_sundararajan_table1.toml"), "--samples", "5000"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["passed"] and out["sampler"].startswith("exact") and len(out["pairs"]) >= 1
    assert main(["audit", str(PROBLEMS / "dx_hotspots.toml"), "--draws", "2000"]) in (0, 2)
    capsys.readouterr()
    assert main(["audit", str(PROBLEMS / "gupte_sundararajan_table1.toml"), "--samples", "5"]) == 2
    assert "samples" in capsys.readouterr().err
    failing = AuditReport(3.0, 1.0, 0.0, 0.95, (PairAudit((0, 1), "output == 1", (900, 10), 1000, 3.0, 1.0),), "test")
    monkeypatch.setattr("dpopt.privacy_audit.audit_solution", lambda *a, **k: failing)
    assert main(["audit", str(PROBLEMS / "gupte_sundararajan_table1.toml")]) == 5
    captured = capsys.readouterr()
    assert json.loads(captured.out)["passed"] is False and "audit failed" in captured.err


def test_dataset_kinds_are_audited_against_d_x_of_each_neighbouring_pair():
    """d_X linear queries: a record moved from i to j may cost d_X(i, j); each pair is held to its own bound,
    and the same releases with half the noise are caught on the worst pair."""
    from dpopt.problem_files import load_problem

    solution = dpopt.solve(load_problem(PROBLEMS / "dx_example1.toml"), "strategy2")
    report = dpopt.audit(solution, draws=40_000, seed=3)
    assert report.passed and {p.epsilon for p in report.pairs} >= {0.5}
    transformed, scales = solution.details["transformed"], solution.details["scales"]

    def half_noise(histogram, n, rng):
        centre = scales * (transformed @ np.asarray(histogram))
        return centre + rng.laplace(scale=scales / 2, size=(n, scales.size))

    pairs = [(p.inputs[0], p.inputs[1]) for p in report.pairs]
    broken = audit_sampler(half_noise, pairs, [p.epsilon for p in report.pairs], draws=40_000, seed=3)
    assert not broken.passed


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_integer_noise_is_audited_at_its_sensitivity(seed):
    """Noise for Delta = 1 claimed for Delta = 3 (loss 0.5 per step, 1.5 at the sensitivity): until
    2026-11-29 the default pairs were adjacent rows only, shifts of 1, so the audit passed it, and
    with no random pairs it had no pair at all (the certificate's worst, (0, 2), was dropped)."""
    solution = dpopt.solve(dpopt.NoiseAdding(sensitivity=3, epsilon=0.5), "geometric")
    noise = PeriodicNoise.geometric(1, math.exp(-0.5))
    broken = dataclasses.replace(solution, sampler=lambda x, n, rng: x + noise.sample(n, rng=rng))
    assert dpopt.audit(solution, draws=20_000, seed=seed).passed
    report = dpopt.audit(broken, draws=20_000, seed=seed)
    assert not report.passed and report.epsilon_lower_bound > 0.5
    assert {0, 3} in [set(pair.inputs) for pair in dpopt.audit(solution, draws=1000, seed=seed, random_pairs=0).pairs]


@pytest.mark.parametrize("seed", [0, 1])
def test_metric_privacy_is_audited_pair_by_pair(seed):
    """Under privacy = "metric" each pair has its own bound eps d̄(a, b). Until 2026-11-29 the audit
    held every pair to eps and drew only neighbours, so a mechanism private for neighbours only
    (loss 1 at distance 0.3, bound 0.3) passed, and the pairs at distance 2 were never drawn."""
    universe = {"type": "explicit", "values": [0, 1, 2], "metric": [[0, 0.3, 2.0], [0.3, 0, 2.0], [2.0, 2.0, 0]]}
    solution = dpopt.solve(dpopt.FiniteQuery(universe=universe, epsilon=1.0, privacy="metric"), "lp")
    neighbours_only = dpopt.solve(dpopt.FiniteQuery(universe=universe, epsilon=1.0), "lp")
    report = dpopt.audit(solution, draws=20_000, seed=seed, random_pairs=3)
    assert report.passed
    assert sorted((sorted(p.inputs), p.epsilon) for p in report.pairs) == [([0, 1], 0.3), ([0, 2], 2.0), ([1, 2], 2.0)]
    broken = dataclasses.replace(solution, sampler=lambda row, n, rng: neighbours_only.sample(row, n, rng=rng))
    caught = {tuple(sorted(p.inputs)): p for p in dpopt.audit(broken, draws=20_000, seed=seed, random_pairs=3).pairs}
    assert not caught[0, 1].passed and caught[0, 1].epsilon_lower_bound > 0.3


def test_more_draws_than_one_sampler_call_takes_are_drawn_in_batches():
    """AUDIT_LIMITS allows 10**7 draws but a sampler takes at most MAX_RELEASES a call: until
    2026-11-29 ``dpopt audit --samples 2000000`` ended, after the solve, in the sampler's
    refusal of its 'count'."""
    from dpopt.limits import MAX_RELEASES

    calls = []

    def randomized_response(x, n, rng):  # epsilon = 1
        assert n <= MAX_RELEASES
        calls.append(n)
        return np.where(rng.random(n) < math.e / (1 + math.e), x, 1 - x)

    draws = MAX_RELEASES + MAX_RELEASES // 2
    report = audit_sampler(randomized_response, [(0, 1)], 1.0, draws=draws, seed=3)
    assert report.pairs[0].draws == draws and sum(calls) == 4 * draws + 1  # four sets, and one release to size them
    assert report.passed and report.epsilon_lower_bound > 0.98  # 1.5 million draws see nearly all of epsilon


def test_an_audit_too_large_for_memory_is_refused_before_drawing(monkeypatch):
    monkeypatch.setenv("DPOPT_MEMORY_LIMIT", str(100 * 2**20))
    calls = []

    def wide(x, n, rng):
        calls.append(n)
        return np.zeros((n, 1000)) + x

    with pytest.raises(InvalidParameterError, match="'draws'.*memory limit"):
        audit_sampler(wide, [(0, 1)], 1.0, draws=100_000)
    assert calls == [1]
