"""The optimal mechanism for a query on a finite dataset universe (Wu-Xia-He's metric spaces).

A mechanism maps each of m datasets x to a distribution over a finite output set R.
Privacy: for neighbours x, x' (d̄ <= 1) and every output r,
``x[a, r] <= e^epsilon x[b, r]`` (``privacy = "neighbours"``, the default), or for every
pair ``x[a, r] <= e^(epsilon d̄(a, b)) x[b, r]`` (``privacy = "metric"``, d_X-style).
Utility: a loss l(f(x), r) (``absolute``, ``squared``, ``zero_one``) or a table over
(dataset, output) -- Wu-Xia-He Section 4.4 notes Theorems 2, 3 and 6 need no metric
properties of it. Objective: ``minimax`` (the worst dataset of the side information,
as Gupte-Sundararajan) or ``average`` under a prior (uniform by default; the Bayesian
consumer of Ghosh et al.). On the path 0..n with f = identity this is exactly the GS
count-query LP.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dpopt.limits import MAX_MAGNITUDE, check_memory
from dpopt.privacy import PrivacyLevel, not_implied, resolve_privacy
from dpopt.universes import Universe, universe_from_spec
from dpopt.validation import check_array, check_choice, check_index_set, check_real, fail

__all__ = ["FiniteQuery", "FINITE_LOSSES", "OBJECTIVES", "unimplied_pairs"]

KIND = "finite_query"
FINITE_LOSSES = ("absolute", "squared", "zero_one")
OBJECTIVES = ("minimax", "average")
PRIVACY_MODES = ("neighbours", "metric")
CALIBRATIONS = ("measured", "proof")


@dataclass(frozen=True, eq=False, kw_only=True)
class FiniteQuery:
    """A validated finite-universe mechanism design problem.

    Parameters
    ----------
    universe : Universe or dict
        The datasets, their query values and the dataset metric (see :mod:`dpopt.universes`).
        A dict (a problem file's ``[universe]`` table) may also hold ``outputs``, in place of
        the parameter below.
    epsilon, alpha : float
        Exactly one.
    loss : str or table
        ``"absolute"``, ``"squared"``, ``"zero_one"`` (of f(x) and r), or an m x |R| table.
    outputs : sequence of float, optional
        The output set R (default: the distinct values of f, sorted).
    objective : {"minimax", "average"}
    prior : sequence of float, optional
        Weights over datasets for ``average`` (normalised; default uniform).
    side_information : sequence of int or dict, optional
        The datasets the consumer knows the truth is among (default: all): the minimax
        objective ranges over them, the average one weighs the prior given them. A list of
        indices, or an inclusive range in universe order ``{"lower": a, "upper": b}`` as for
        count queries.
    privacy : {"neighbours", "metric"}
    calibrate_shortcuts : {"measured", "proof"}
        Shortcut constructions get the largest parameter whose *measured* privacy loss
        meets epsilon, or (``"proof"``) the parameter their 2 epsilon proof needs: epsilon / 2.
    delta : float or sequence, optional
        Theorem 3's ball radius (one for all datasets, or one per dataset); default 1.
    gamma : float, optional
        Example 9's staircase offset, 0 <= gamma < global sensitivity; default 0.
    important : sequence of float, optional
        Theorems 5-6's important outputs E (default: the values of the datasets in the
        side information that are outputs).
    penalty : float, optional
        Theorems 5-6's t >= 0 (default 1).
    """

    universe: Any
    epsilon: float | None = None
    alpha: float | None = None
    loss: Any = "absolute"
    outputs: Any = None
    objective: str = "minimax"
    prior: Any = None
    side_information: Any = None
    privacy: str = "neighbours"
    calibrate_shortcuts: str = "measured"
    delta: Any = None
    gamma: float | None = None
    important: Any = None
    penalty: float | None = None
    level: PrivacyLevel = field(init=False, repr=False)

    kind = KIND

    def __post_init__(self) -> None:
        outputs_field = self._take_universe_outputs()
        universe = universe_from_spec(self.universe)
        level = resolve_privacy(self.alpha, self.epsilon, KIND)
        outputs = self._outputs(universe, outputs_field)
        check_memory(8.0 * 40 * universe.size * outputs.size, "universe", KIND, universe.source,
                     what=f"a {universe.size} x {outputs.size} mechanism and its program")
        values = {
            "universe": universe,
            "level": level,
            "epsilon": level.epsilon,
            "alpha": level.alpha,
            "outputs": outputs,
            "objective": check_choice(self.objective, "objective", KIND, OBJECTIVES),
            "privacy": check_choice(self.privacy, "privacy", KIND, PRIVACY_MODES),
            "calibrate_shortcuts": check_choice(self.calibrate_shortcuts, "calibrate_shortcuts", KIND, CALIBRATIONS),
            "side_information": self._support(universe.size),
            "prior": self._prior(universe.size),
            "delta": self._delta(universe.size),
            "gamma": 0.0 if self.gamma is None else check_real(self.gamma, "gamma", KIND, low=0.0, high=MAX_MAGNITUDE),
            "penalty": 1.0 if self.penalty is None else check_real(self.penalty, "penalty", KIND, low=0.0, high=1e6),
        }
        if self.objective == "minimax" and self.prior is not None:
            raise fail("prior", KIND, "omitted for the minimax objective (it weighs datasets for 'average')", self.prior)
        if isinstance(self.loss, str):
            values["loss"] = check_choice(self.loss, "loss", KIND, FINITE_LOSSES)
        else:
            table = check_array(self.loss, "loss", KIND, ndim=2, low=0.0, max_abs=MAX_MAGNITUDE)
            if table.shape != (universe.size, outputs.size):
                raise fail("loss", KIND, f"a table of shape ({universe.size}, {outputs.size}) (datasets x outputs)", table.shape)
            values["loss"] = table
        for name, value in values.items():
            object.__setattr__(self, name, value)
        if self.objective == "average" and self.prior is not None and not self.prior[list(self.side_information)].any():
            raise fail("side_information", KIND, "datasets some of which the prior weighs (the average is over the prior "
                       "given the side information)", list(self.side_information))
        important = self._important()
        object.__setattr__(self, "important", important)
        if self.gamma >= max(self.sensitivity, 1e-300):
            raise fail("gamma", KIND, f"a float in [0, {self.sensitivity:g}) (below the global sensitivity)", self.gamma)

    # -- validation helpers -------------------------------------------------------------
    def _take_universe_outputs(self) -> str:
        """Move an ``outputs`` key of a ``[universe]`` table (where issue 13's file format puts an
        explicit universe's optional R) to the problem's ``outputs``, refused if both are given;
        returns the field that holds R, for messages."""
        if not isinstance(self.universe, dict) or "outputs" not in self.universe:
            return "outputs"
        if self.outputs is not None:
            raise fail("universe.outputs", KIND, "given once: in [universe] or as the problem's 'outputs', not both",
                       self.universe["outputs"])
        spec = dict(self.universe)
        object.__setattr__(self, "outputs", spec.pop("outputs"))
        object.__setattr__(self, "universe", spec)
        return "universe.outputs"

    def _outputs(self, universe: Universe, field_name: str) -> np.ndarray:
        if self.outputs is None:
            return np.unique(universe.values)
        r = check_array(self.outputs, field_name, KIND, ndim=1, max_abs=MAX_MAGNITUDE)
        if r.size < 1 or np.unique(r).size != r.size:
            raise fail(field_name, KIND, "a non-empty list of distinct numbers", self.outputs)
        return r

    def _support(self, m: int) -> tuple[int, ...]:
        if self.side_information is None:
            return tuple(range(m))
        return check_index_set(self.side_information, "side_information", KIND, m - 1)

    def _prior(self, m: int) -> np.ndarray | None:
        if self.prior is None:
            return None
        p = check_array(self.prior, "prior", KIND, ndim=1, low=0.0, max_abs=MAX_MAGNITUDE)
        if p.size != m or p.sum() <= 0:
            raise fail("prior", KIND, f"{m} non-negative weights, not all zero", self.prior)
        return p / p.sum()

    def _delta(self, m: int) -> np.ndarray:
        if self.delta is None:
            return np.ones(m)
        if isinstance(self.delta, (int, float)) and not isinstance(self.delta, bool):
            return np.full(m, check_real(self.delta, "delta", KIND, low=0.0, high=MAX_MAGNITUDE))
        d = check_array(self.delta, "delta", KIND, ndim=1, low=0.0, max_abs=MAX_MAGNITUDE)
        if d.size != m:
            raise fail("delta", KIND, f"one radius, or {m} (one per dataset)", d.size)
        return d

    def _important(self) -> np.ndarray:
        if self.important is None:  # the watched datasets' values that are outputs (only those can be important)
            return np.intersect1d(self.universe.values[list(self.side_information)], self.outputs)
        e = check_array(self.important, "important", KIND, ndim=1, max_abs=MAX_MAGNITUDE)
        if not np.isin(e, self.outputs).all():
            raise fail("important", KIND, "a list of outputs (values in R)", self.important)
        return np.unique(e)

    # -- derived quantities ---------------------------------------------------------------
    @property
    def size(self) -> tuple[int, int]:
        """(m, |R|)."""
        return self.universe.size, int(self.outputs.size)

    @functools.cached_property
    def sensitivity(self) -> float:
        """Global sensitivity: the largest |f(x) - f(x')| over neighbours."""
        a, b = self.universe.neighbours.T
        return float(np.abs(self.universe.values[a] - self.universe.values[b]).max())

    @functools.cached_property
    def loss_matrix(self) -> np.ndarray:
        """``L[x, r]``: the loss of releasing output r for dataset x (m x |R|, read-only)."""
        if isinstance(self.loss, np.ndarray):
            return self.loss
        gap = np.abs(self.universe.values[:, None] - self.outputs[None, :])
        table = {"absolute": gap, "squared": gap**2, "zero_one": (gap > 0).astype(float)}[self.loss]
        table.setflags(write=False)
        return table

    @functools.cached_property
    def weights(self) -> np.ndarray:
        """The average objective's weights over datasets: the prior (or uniform) given the side
        information, i.e. restricted to it and normalised (the Bayesian consumer who also knows
        that the dataset is in S). Until 2026-11-29 the side information was ignored here."""
        m = self.universe.size
        weights = self.prior.copy() if self.prior is not None else np.full(m, 1.0)
        if len(self.side_information) < m:
            outside = np.ones(m, dtype=bool)
            outside[list(self.side_information)] = False
            weights[outside] = 0.0
        weights /= weights.sum()
        weights.setflags(write=False)
        return weights

    def objective_of(self, mechanism: np.ndarray) -> float:
        """The objective evaluated on any m x |R| mechanism."""
        # C order whatever the caller's layout: einsum sums in layout order, and a matrix read back
        # from a file (column-major) gave an objective 1 ulp away from the solve's until 2026-11-29
        expected = np.einsum("xr,xr->x", self.loss_matrix, np.ascontiguousarray(mechanism, dtype=float))
        if self.objective == "minimax":
            return float(expected[list(self.side_information)].max())
        return float(self.weights @ expected)

    def privacy_pairs(self, implied: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """Directed pairs (a, b) and their log-bounds eps_ab with ``x[a, r] <= e^eps_ab x[b, r]``.

        For ``privacy = "metric"`` a program needs only the pairs no others imply
        (:func:`unimplied_pairs`); ``implied=True`` returns every pair (what the certificate
        measures, so that it does not rely on that argument).
        """
        if self.privacy == "neighbours":
            pairs = self.universe.neighbours
        elif implied:
            pairs = np.column_stack(np.nonzero(np.triu(np.ones((self.universe.size,) * 2, dtype=bool), 1)))
        else:
            pairs = self._unimplied
        bound = np.full(len(pairs), self.epsilon) if self.privacy == "neighbours" else self.epsilon * self.universe.distances[pairs[:, 0], pairs[:, 1]]
        both = np.vstack([pairs, pairs[:, ::-1]])
        return both, np.concatenate([bound, bound])

    @functools.cached_property
    def _unimplied(self) -> np.ndarray:
        return unimplied_pairs(self.universe.distances)

    def to_dict(self) -> dict[str, Any]:
        """A TOML/JSON-ready description that :func:`dpopt.problem_files.problem_from_dict` reads back."""
        data: dict[str, Any] = {
            "kind": KIND,
            "epsilon": self.epsilon,
            "loss": self.loss if isinstance(self.loss, str) else self.loss.tolist(),
            "objective": self.objective,
            "privacy": self.privacy,
            "calibrate_shortcuts": self.calibrate_shortcuts,
            "outputs": self.outputs.tolist(),
            "universe": dict(self.universe.spec),
            "delta": self.delta.tolist(),
            "gamma": self.gamma,
            "penalty": self.penalty,
            "important": self.important.tolist(),
        }
        if len(self.side_information) != self.universe.size:
            data["side_information"] = list(self.side_information)
        if self.prior is not None:
            data["prior"] = self.prior.tolist()
        return data

    def __repr__(self) -> str:
        m, k = self.size
        return (f"FiniteQuery({self.universe.source}, m={m}, |R|={k}, epsilon={self.epsilon:.6g}, "
                f"loss={self.loss if isinstance(self.loss, str) else 'table'!r}, objective={self.objective!r})")


#: Largest universe whose implied metric pairs are found (an O(m^3) pass: about 1.4 s at m = 1044);
#: a larger metric universe keeps every pair, and the LP refuses it by its row count.
MAX_PRUNED_UNIVERSE = 1500


def unimplied_pairs(distances: np.ndarray) -> np.ndarray:
    """Pairs (a, b), a < b, whose metric privacy row no other rows imply (:func:`dpopt.privacy.not_implied`).

    On a graph's hop metric only the neighbours remain (the 1044 seven-node graphs: 6,558 of
    545,646 pairs); without this a path of 40 datasets at epsilon = 1 wrote e^39 into the LP,
    above the largest entry HiGHS accepts (1e15), and failed. Universes above
    :data:`MAX_PRUNED_UNIVERSE` keep every pair.
    """
    d = np.asarray(distances, dtype=float)
    if len(d) > MAX_PRUNED_UNIVERSE:
        return np.column_stack(np.nonzero(np.triu(np.ones(d.shape, dtype=bool), 1)))
    return np.column_stack(np.nonzero(np.triu(not_implied(d), 1)))
