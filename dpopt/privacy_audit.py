"""A built-in privacy audit: a statistically valid lower bound on epsilon from samples.

For a pair of neighbouring inputs (x, x'), any event A gives
``P(A | x) <= e^eps P(A | x') + delta`` for an (eps, delta)-DP mechanism, so

    eps >= log((P(A | x) - delta) / P(A | x')).

The audit (in the spirit of DP-Sniper and dp-auditorium) draws ``draws`` releases from each
input twice. On the first half it *selects* the event and direction with the largest
empirical ratio among a family of events (singletons and thresholds for discrete outputs,
thresholds and quantile bins for continuous ones, plus any given ``events``); on the fresh
second half it *estimates* that one event's probabilities with Clopper-Pearson intervals
and reports ``log((p_lower - delta) / q_upper)``. Selection and estimation use independent
draws, and the confidence is split (Bonferroni) over the pairs audited, so with
probability at least ``confidence`` the reported bound is below the sampler's true epsilon:
a bound above the certified epsilon is evidence, at that confidence, that the sampler
does not release what was certified.

:func:`textbook_laplace` and :func:`float_laplace_support` are Mironov's (CCS 2012)
example: the textbook floating-point Laplace sampler and the event "this output is exactly
producible from input x", which separates neighbouring inputs although every certificate
on real numbers says they are close. Never use :func:`textbook_laplace` for a release.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np
from scipy.special import betaincinv  # the beta quantile (scipy.stats.beta.ppf) without importing scipy.stats (1 s)

from dpopt.validation import check_int, check_real, fail

__all__ = ["AuditReport", "PairAudit", "audit", "audit_sampler", "audit_solution", "default_pairs", "textbook_laplace", "float_laplace_support",
           "AUDIT_LIMITS"]

OWNER = "audit"
Sampler = Callable[[Any, int, np.random.Generator], np.ndarray]
Event = Callable[[np.ndarray], np.ndarray]

#: Continuous outputs: thresholds at this many pooled quantiles (and the bins between them).
QUANTILES = 64
#: Discrete outputs with at most this many distinct values get singleton and threshold events.
MAX_DISCRETE_EVENTS = 2_000
#: Accepted ranges of the audit's arguments (checked before any draw).
AUDIT_LIMITS = {"draws": (100, 10_000_000)}
#: Most pairs drawn at random beside the default ones (each costs 4 x draws releases).
MAX_RANDOM_PAIRS = 1000


@dataclass(frozen=True)
class PairAudit:
    """One pair's result: the event chosen, its counts on the estimation half, and the bound."""

    inputs: tuple[Any, Any]
    event: str
    counts: tuple[int, int]
    draws: int
    epsilon_lower_bound: float
    epsilon: float
    """The loss certified for this pair (d_X(x, x') for d_X-private kinds)."""

    @property
    def passed(self) -> bool:
        return self.epsilon_lower_bound <= self.epsilon * (1 + 1e-9) + 1e-12

    def to_dict(self) -> dict[str, Any]:
        inputs = [np.asarray(v).tolist() if isinstance(v, np.ndarray) else _plain(v) for v in self.inputs]
        return {"inputs": inputs, "event": self.event, "counts": list(self.counts), "draws": self.draws,
                "epsilon_lower_bound": self.epsilon_lower_bound, "certified_epsilon": self.epsilon, "passed": self.passed}


@dataclass(frozen=True)
class AuditReport:
    """The largest lower bound over the pairs, against the certified epsilon."""

    epsilon_lower_bound: float
    certified_epsilon: float
    """The largest epsilon certified for an audited pair."""
    delta: float
    confidence: float
    pairs: tuple[PairAudit, ...] = field(default=())
    sampler: str = ""

    @property
    def passed(self) -> bool:
        """No pair's bound exceeds the epsilon certified for it (a pass is not a proof of privacy)."""
        return all(p.passed for p in self.pairs)

    def to_dict(self) -> dict[str, Any]:
        return {"passed": self.passed, "epsilon_lower_bound": self.epsilon_lower_bound, "certified_epsilon": self.certified_epsilon,
                "delta": self.delta, "confidence": self.confidence, "sampler": self.sampler,
                "pairs": [p.to_dict() for p in self.pairs]}


def _plain(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else value


def _few_distinct(a: np.ndarray, b: np.ndarray) -> bool:
    return np.unique(np.concatenate([a, b]), axis=0).shape[0] <= MAX_DISCRETE_EVENTS


def _tuple_labels(parts: list[np.ndarray]) -> list[np.ndarray]:
    """Rows (tuples) as labels, the same label for the same tuple in every part."""
    _, inverse = np.unique(np.concatenate(parts), axis=0, return_inverse=True)
    return np.split(inverse.ravel(), np.cumsum([len(p) for p in parts])[:-1])


def _candidate_events(a: np.ndarray, b: np.ndarray, tuples: bool, extra: Sequence[Event]) -> list[tuple[str, Callable[[np.ndarray], np.ndarray]]]:
    pooled = np.concatenate([a, b])
    values = np.unique(pooled)
    events: list[tuple[str, Callable[[np.ndarray], np.ndarray]]] = []
    discrete = values.size <= MAX_DISCRETE_EVENTS and (tuples or np.all(np.floor(values) == values))
    if discrete:
        for v in values:
            events.append((f"output == {v:g}" if not tuples else f"release #{int(v)}", lambda y, v=v: y == v))
        if not tuples:
            for v in values:
                events.append((f"output <= {v:g}", lambda y, v=v: y <= v))
                events.append((f"output >= {v:g}", lambda y, v=v: y >= v))
    else:
        finite = pooled[np.isfinite(pooled)]
        cuts = np.unique(np.quantile(finite, np.linspace(0, 1, QUANTILES + 1)[1:-1]))
        for c in cuts:
            events.append((f"output <= {c:.6g}", lambda y, c=c: y <= c))
            events.append((f"output > {c:.6g}", lambda y, c=c: y > c))
        for lo, hi in zip(cuts[:-1], cuts[1:]):
            events.append((f"{lo:.6g} < output <= {hi:.6g}", lambda y, lo=lo, hi=hi: (y > lo) & (y <= hi)))
    for k, event in enumerate(extra):
        events.append((getattr(event, "__name__", f"event {k}"), event))
    return events


def _select(first_a: np.ndarray, first_b: np.ndarray, events: list[tuple[str, Callable[[np.ndarray], np.ndarray]]],
            delta: float, alpha: float) -> tuple[str, Callable, bool]:
    """The event and direction whose bound, computed on the selection half, is largest
    (ties: the larger smoothed ratio), so rare events with a lucky ratio are not preferred."""
    best = ((-np.inf, -np.inf), events[0][0], events[0][1], True)
    n = len(first_a)
    for name, event in events:
        ca, cb = int(np.count_nonzero(event(first_a))), int(np.count_nonzero(event(first_b)))
        for forward, (num, den) in ((True, (ca, cb)), (False, (cb, ca))):
            score = (_bound(num, den, n, delta, alpha), np.log((num + 1.0) / (den + 1.0)))
            if score > best[0]:
                best = (score, name, event, forward)
    return best[1], best[2], best[3]


def _bound(hits: int, other: int, draws: int, delta: float, alpha: float) -> float:
    """``log((p_lower - delta) / q_upper)`` with two one-sided Clopper-Pearson limits at alpha / 2 each."""
    p_lower = betaincinv(hits, draws - hits + 1, alpha / 2) if hits > 0 else 0.0
    q_upper = betaincinv(other + 1, draws - other, 1 - alpha / 2) if other < draws else 1.0
    if p_lower - delta <= 0 or q_upper <= 0:
        return 0.0
    return float(max(np.log((p_lower - delta) / q_upper), 0.0))


def audit_sampler(
    sampler: Sampler,
    pairs: Sequence[tuple[Any, Any]],
    epsilon: float | Sequence[float],
    *,
    delta: float = 0.0,
    draws: int = 100_000,
    confidence: float = 0.95,
    seed: int = 0,
    events: Sequence[Event] = (),
    name: str = "",
) -> AuditReport:
    """Audit ``sampler(true_value, count, rng) -> releases`` on neighbouring ``pairs`` against ``epsilon``.

    Parameters
    ----------
    sampler : callable
        Draws ``count`` releases for a true input from a seeded Generator.
    pairs : sequence of (x, x')
        Neighbouring inputs to test (each in both directions).
    epsilon : float or sequence of float
        The claimed loss: one for every pair, or one per pair (d_X-privacy: d_X(x, x')).
    delta : float
        The claimed delta.
    draws : int
        Releases per input and half (selection and estimation each draw this many).
    confidence : float
        Probability that the reported bound is valid (split over the pairs).
    seed : int
        Seeds every draw (selection and estimation streams are independent).
    events : sequence of callables
        Extra events ``mask = event(outputs)`` offered to the selection.
    """
    if not pairs:
        raise fail("pairs", OWNER, "at least one pair of neighbouring inputs", pairs)
    epsilons = [check_real(e, "epsilon", OWNER, low=0.0) for e in (epsilon if isinstance(epsilon, (list, tuple, np.ndarray)) else [epsilon] * len(pairs))]
    if len(epsilons) != len(pairs):
        raise fail("epsilon", OWNER, f"one number, or one per pair ({len(pairs)})", epsilon)
    delta = check_real(delta, "delta", OWNER, low=0.0, high=1.0)
    draws = check_int(draws, "draws", OWNER, low=AUDIT_LIMITS["draws"][0], high=AUDIT_LIMITS["draws"][1])
    confidence = check_real(confidence, "confidence", OWNER, low=0.5, high=1.0, high_open=True)
    seed = check_int(seed, "seed", OWNER, low=0)
    alpha = (1 - confidence) / len(pairs)
    _check_audit_memory(sampler, pairs[0][0], draws, seed)
    streams = np.random.default_rng(seed).spawn(4 * len(pairs))
    results = []
    for k, (x, y) in enumerate(pairs):
        first_a, first_b = (_draw(sampler, v, draws, streams[4 * k + i]) for i, v in enumerate((x, y)))
        second_a, second_b = (_draw(sampler, v, draws, streams[4 * k + 2 + i]) for i, v in enumerate((x, y)))
        tuples = first_a.ndim > 1 and _few_distinct(first_a, first_b)
        if tuples:  # a release of several discrete values (a multi-level chain): one label per distinct tuple
            first_a, first_b, second_a, second_b = _tuple_labels([first_a, first_b, second_a, second_b])
        if first_a.ndim > 1:  # continuous vectors (d_X answers, marginals): events on each coordinate
            candidates = [(f"coordinate {j}: {name}", lambda y, j=j, e=e: e(y[:, j]))
                          for j in range(first_a.shape[1])
                          for name, e in _candidate_events(first_a[:, j], first_b[:, j], False, ())]
            candidates += [(getattr(e, "__name__", "event"), e) for e in events]
        else:
            candidates = _candidate_events(first_a, first_b, tuples, events)
        name_k, event, forward = _select(first_a, first_b, candidates, delta, alpha)
        hits_a, hits_b = int(np.count_nonzero(event(second_a))), int(np.count_nonzero(event(second_b)))
        hits, other = (hits_a, hits_b) if forward else (hits_b, hits_a)
        inputs = (x, y) if forward else (y, x)
        results.append(PairAudit(inputs, name_k, (hits, other), draws, _bound(hits, other, draws, delta, alpha), epsilons[k]))
    worst = max(r.epsilon_lower_bound for r in results)
    return AuditReport(worst, max(epsilons), float(delta), float(confidence), tuple(results), name)


def _draw(sampler: Sampler, value: Any, draws: int, stream: np.random.Generator) -> np.ndarray:
    """``draws`` releases from one stream, in batches a sampler takes (at most
    :data:`dpopt.limits.MAX_RELEASES` a call: until 2026-11-29 ``--samples`` above it, which
    :data:`AUDIT_LIMITS` allows, ended after the solve in the sampler's refusal of its 'count')."""
    from dpopt.limits import MAX_RELEASES

    batches = [np.asarray(sampler(value, min(MAX_RELEASES, draws - done), stream)) for done in range(0, draws, MAX_RELEASES)]
    return batches[0] if len(batches) == 1 else np.concatenate(batches)


def _check_audit_memory(sampler: Sampler, value: Any, draws: int, seed: int) -> None:
    """Refuse ``draws`` before the audit if its releases would not fit in memory: one release (from a
    stream of its own) gives their width; four sets of ``draws`` are held at once, with the
    events' masks and labels beside them (d_X answers are K numbers each)."""
    from dpopt.limits import check_memory

    width = max(1, np.asarray(sampler(value, 1, np.random.default_rng([seed, 2**32]))).size)
    check_memory(4.0 * draws * width * 8 * 3, "draws", OWNER, draws, what="the audit's releases")


# -- auditing a solved mechanism -------------------------------------------------------------

def _histogram_pairs(solution: Any, random_pairs: int, rng: np.random.Generator) -> list[tuple[Any, Any, float]]:
    """d_X linear queries: move one record from element i to j; the certified loss is d_X(i, j)."""
    problem = solution.problem
    h = problem.histogram
    if h is None:
        raise fail("histogram", OWNER, "given in the problem (the dataset whose neighbours are audited)", None)
    d = problem.metric.matrix
    movable = [(i, j) for i in np.flatnonzero(h > 0) for j in range(h.size) if j != i and np.isfinite(d[i, j])]
    if not movable:
        raise fail("histogram", OWNER, "a dataset with a record that can move to an element at finite distance", h.tolist())
    i, j = (int(v) for v in solution.certificate.worst_pair[:2])
    chosen = [(i, j)] if h[i] > 0 and i != j else [(j, i)] if h[j] > 0 and i != j else []
    chosen += [movable[int(k)] for k in rng.choice(len(movable), size=min(random_pairs, len(movable)), replace=False)]
    out = []
    for a, b in dict.fromkeys(chosen):
        moved = h.copy()
        moved[a] -= 1
        moved[b] += 1
        out.append((h, moved, float(d[a, b])))
    return out


def _row_pairs(solution: Any, random_pairs: int, rng: np.random.Generator) -> list[tuple[Any, Any, float]]:
    """Statistical queries: change one row's value in one attribute; the certified loss is d_i(u, v)."""
    problem = solution.problem
    rows = problem.rows
    if rows is None:
        raise fail("rows", OWNER, "given in the problem (the dataset whose neighbours are audited)", None)
    k, a, b = (int(v) for v in solution.certificate.worst_pair)
    changes = []
    values = problem.attribute_values
    holders = np.flatnonzero(rows[:, k] == values[k][a]) if k < len(values) and a < values[k].size else np.zeros(0, int)
    if holders.size and b < values[k].size and a != b:
        changes.append((int(holders[0]), k, b))
    for _ in range(random_pairs):
        r, attribute = int(rng.integers(rows.shape[0])), int(rng.integers(len(values)))
        current = int(np.flatnonzero(values[attribute] == rows[r, attribute])[0])
        other = int(rng.choice([v for v in range(values[attribute].size) if v != current]))
        changes.append((r, attribute, other))
    out = []
    for r, attribute, new in dict.fromkeys(changes):
        current = int(np.flatnonzero(values[attribute] == rows[r, attribute])[0])
        changed = rows.copy()
        changed[r, attribute] = values[attribute][new]
        out.append((rows, changed, float(problem.distances(attribute)[current, new])))
    return out


def default_pairs(solution: Any, random_pairs: int = 2, seed: int = 0) -> list[tuple[Any, Any, float]]:
    """``(x, x', certified loss)``: the certificate's worst neighbouring pair (when it names one) plus
    ``random_pairs`` random ones.

    Matrix mechanisms: neighbouring rows (adjacent inputs; for integer noise, whose rows are
    the shifts 0..Delta, (0, Delta) and any two rows); a finite universe's privacy pairs, each
    with its own bound (epsilon d̄(a, b) under metric privacy). Additive noise: (0, Delta) for the sensitivity, or (0, v) for the ends of a
    neighbouring set V; calibrations: (0, sensitivity). Dataset kinds: the problem's dataset
    and a neighbour (one record moved from i to j for d_X linear queries, loss d_X(i, j); one
    row's attribute changed for statistical queries, loss d_i(u, v)).
    """
    rng = np.random.default_rng(seed)
    if solution.kind == "dx_linear_query":
        return _histogram_pairs(solution, random_pairs, rng)
    if solution.kind == "statistical_query":
        return _row_pairs(solution, random_pairs, rng)
    if solution.kind == "finite_query":
        return _dataset_pairs(solution, random_pairs, rng)
    target = solution.certificate.target
    return [(x, y, target) for x, y in _value_pairs(solution, random_pairs, rng)]


def _value_pairs(solution: Any, random_pairs: int, rng: np.random.Generator) -> list[tuple[Any, Any]]:
    problem = solution.problem
    if solution.parameters is None:
        inputs = solution.inputs
        chosen: list[tuple[int, int]] = []
        if solution.kind == "noise_adding":
            # rows 0..Delta, every two of them neighbours; until 2026-11-29 only shifts of 1 were
            # audited (adjacent rows), never the sensitivity's, and the certificate's worst pair
            # (0, 2) at Delta = 3 was dropped as "not neighbours"
            neighbours = [(i, j) for i in range(len(inputs)) for j in range(i + 1, len(inputs))]
            chosen.append((0, len(inputs) - 1))
        else:
            neighbours = [(i, i + 1) for i in range(len(inputs) - 1)]
        worst = tuple(solution.certificate.worst_pair[:2])
        chosen = ([worst] if worst in neighbours or worst[::-1] in neighbours else []) + chosen
        extra = rng.choice(len(neighbours), size=min(random_pairs, len(neighbours)), replace=False)
        chosen += [neighbours[int(i)] for i in extra]
        return [(inputs[a], inputs[b]) for a, b in dict.fromkeys(chosen)]
    if getattr(problem, "neighbouring_set", None) is not None:
        ends = sorted({float(v) for interval in problem.neighbouring_set for v in interval if v != 0})
        return [(0.0, v) for v in ends[: max(random_pairs, 1) + 1]]
    shift = getattr(problem, "sensitivity", 1)
    return [(0, shift)]


def _dataset_pairs(solution: Any, random_pairs: int, rng: np.random.Generator) -> list[tuple[int, int, float]]:
    """A finite universe's pairs, each held to its own bound: epsilon for neighbours, or
    ``epsilon d̄(a, b)`` for every pair under ``privacy = "metric"`` (until 2026-11-29 every pair
    was held to epsilon and only neighbours were drawn, so a pair at distance 0.3 could leak 3x
    its bound, and pairs beyond distance 1 were never audited)."""
    pairs, bounds = solution.problem.privacy_pairs(implied=True)
    half = len(pairs) // 2  # the second half is the same pairs reversed
    index = {(int(a), int(b)): i for i, (a, b) in enumerate(pairs[:half])}
    worst = tuple(sorted(int(v) for v in solution.certificate.worst_pair[:2]))
    chosen = [index[worst]] if worst in index else []
    chosen += [int(i) for i in rng.choice(half, size=min(random_pairs, half), replace=False)]
    return [(int(pairs[i, 0]), int(pairs[i, 1]), float(bounds[i])) for i in dict.fromkeys(chosen)]


def _checked_pairs(pairs: Any) -> list[tuple[Any, Any]]:
    """``pairs`` as a list of (true value, true value); what each value may be is the sampler's to check."""
    allowed = "a non-empty list of pairs of true values"
    if isinstance(pairs, (str, bytes, Mapping)) or not isinstance(pairs, (Sequence, np.ndarray)) or len(pairs) == 0:
        raise fail("pairs", OWNER, allowed, pairs)
    if not all(isinstance(p, (Sequence, np.ndarray)) and not isinstance(p, (str, bytes)) and len(p) == 2 for p in pairs):
        raise fail("pairs", OWNER, allowed, pairs)
    return [(x, y) for x, y in pairs]


def audit_solution(solution: Any, *, draws: int = 100_000, confidence: float = 0.95, seed: int = 0, random_pairs: int = 2,
                   pairs: Sequence[tuple[Any, Any]] | None = None) -> AuditReport:
    """Audit a certified Solution's own sampler against its certified (epsilon, delta)."""
    if not solution.certificate.ok:
        raise fail("certificate", OWNER, "a certified solution (an uncertified one is never sampled)", solution.certificate.to_dict())
    seed = check_int(seed, "seed", OWNER, low=0)
    if pairs is not None:
        chosen = [(x, y, solution.certificate.target) for x, y in _checked_pairs(pairs)]
    else:
        chosen = default_pairs(solution, check_int(random_pairs, "random_pairs", OWNER, low=0, high=MAX_RANDOM_PAIRS), seed)

    def sampler(value: Any, count: int, rng: np.random.Generator) -> np.ndarray:
        return np.asarray(solution.sample(value, count, rng=rng, exact=False))  # audits simulate: any sampler

    return audit_sampler(sampler, [(x, y) for x, y, _ in chosen], [e for _, _, e in chosen], delta=solution.certificate.delta, draws=draws, confidence=confidence,
                 seed=seed, name=solution.sampler_description)


# -- Mironov's attack on the textbook floating-point Laplace ---------------------------------------

def textbook_laplace(scale: float) -> Sampler:
    """INSECURE, for audits only: ``x - b sign(u) log(1 - 2|u|)``, u a 53-bit uniform in [-1/2, 1/2)."""
    b = check_real(scale, "scale", OWNER, low=0.0, low_open=True)

    def sample(true_value: float, count: int, rng: np.random.Generator) -> np.ndarray:
        u = rng.integers(0, 2**53, size=count) * 2.0**-53 - 0.5
        with np.errstate(divide="ignore"):
            return float(true_value) - b * np.sign(u) * np.log(1 - 2 * np.abs(u))

    return sample


def float_laplace_support(scale: float, true_value: float) -> Event:
    """The event "the output is exactly what :func:`textbook_laplace` produces from ``true_value`` for some u".

    Inverts the noise to the nearest grid points of u (a few either side, both signs) and
    recomputes the output with the sampler's own floating-point expression (Mironov 2012).
    """
    b, x0 = float(scale), float(true_value)

    def producible_from(y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, dtype=float)
        z = y - x0
        centre = np.round(-np.expm1(-np.abs(z) / b) / 2 * 2.0**53)
        hit = np.zeros(y.size, dtype=bool)
        with np.errstate(divide="ignore", invalid="ignore"):
            for step in range(-3, 4):
                magnitude = (centre + step) * 2.0**-53
                for sign in (1.0, -1.0):
                    u = sign * magnitude
                    hit |= (x0 - b * np.sign(u) * np.log(1 - 2 * np.abs(u))) == y
        return hit

    producible_from.__name__ = f"output producible by float Laplace from {x0:g}"
    return producible_from


def audit(target: Any, pairs: Sequence[tuple[Any, Any]] | None = None, epsilon: float | None = None, **options: Any) -> AuditReport:
    """``dpopt.audit``: a Solution (its own sampler, certified epsilon and default pairs) or a
    sampler ``f(true_value, count, rng)`` with explicit ``pairs`` and ``epsilon``.

    Options are those of :func:`audit_sampler` (``delta``, ``draws``, ``confidence``, ``seed``,
    ``events``, ``name``) or, for a Solution, of :func:`audit_solution`.
    """
    from dpopt.solution import Solution

    if isinstance(target, Solution):
        if epsilon is not None:
            raise fail("epsilon", OWNER, "omitted for a Solution (its certificate's target is audited)", epsilon)
        return audit_solution(target, pairs=pairs, **options)
    if not callable(target):
        raise fail("target", OWNER, "a Solution or a sampler f(true_value, count, rng)", type(target).__name__)
    if pairs is None or epsilon is None:
        raise fail("pairs", OWNER, "given with epsilon when auditing a bare sampler", pairs)
    return audit_sampler(target, pairs, epsilon, **options)
