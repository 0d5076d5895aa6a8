"""The result of solving a problem: what, how, the decoded mechanism and its certificate."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Callable

import numpy as np

from dpopt.certificates import Certificate
from dpopt.lazy_modules import pandas as pd
from dpopt.mechanisms.factored import FactoredMechanism
from dpopt.sampling import RandomSource, check_count, resolve_rng, sample_row
from dpopt.validation import check_exact_real, check_int, fail

__all__ = ["Solution", "mechanism_frame", "DATA_KINDS"]

#: Kinds released on a dataset rather than a true value: kind -> the problem field holding it.
DATA_KINDS: dict[str, str] = {"dx_linear_query": "histogram", "statistical_query": "rows"}

Sampler = Callable[[int, int, RandomSource], np.ndarray]


def _release_labels(labels: np.ndarray) -> np.ndarray:
    """The outputs a release draws from: float labels that are all whole numbers (of magnitude below
    2^53, so each converts exactly) as int64, so a finite universe's integer outputs release as integers,
    as a count query's do (until 2026-11-29 a triangle count was released as 3.0). Decided by the
    labels, not the draws, so one mechanism always releases one type."""
    if labels.dtype.kind == "f" and labels.size and np.isfinite(labels).all() and (np.abs(labels) < 2.0**53).all() \
            and (labels == np.round(labels)).all():
        return labels.astype(np.int64)
    return labels


def mechanism_frame(matrix: np.ndarray, rows: Any = None, columns: Any = None) -> pd.DataFrame:
    """Label a mechanism matrix: index = true value, columns = released value."""
    x = np.asarray(matrix, dtype=float)
    index = pd.Index(range(x.shape[0]) if rows is None else rows, name="true")
    cols = pd.Index(range(x.shape[1]) if columns is None else columns, name="released")
    return pd.DataFrame(x, index=index, columns=cols)


@dataclass(frozen=True, eq=False)
class Solution:
    """A solved problem.

    Attributes
    ----------
    problem : the problem solved
    method : str
        Registered method that produced it (``"lp"``, ``"interaction"``, ...).
    exact : bool
        Whether ``objective`` is the optimum (else an upper bound on it).
    solver, status : str
        Solver used (``"none"`` for closed forms) and its final status.
    seconds : float
        Wall time of the method (build, solve, decode, certify).
    objective : float
        The exact objective of the *returned* mechanism (after any repair).
    certificate : Certificate
        Measured privacy of the returned mechanism.
    mechanism : pandas.DataFrame
        Index: true value; columns: released value. For a factored solution it is
        formed from the factors on first access (``(n+1)^2`` floats); for a deferred
        matrix (``matrix``), built by it on first access.
    factored : FactoredMechanism or None
        ``G T`` kept as alpha and the sparse remap T (the column-generation route);
        sampling and export use the factors.
    row_loss : pandas.Series or None
        Expected loss per true value in the side information.
    details : dict
        Method-specific extras (``solver_objective``, ``remap``, ``levels`` ...).
    """

    problem: Any
    method: str
    exact: bool
    solver: str
    status: str
    seconds: float
    objective: float
    certificate: Certificate
    dense: pd.DataFrame | None = field(default=None, repr=False)
    matrix: Callable[[], pd.DataFrame] | None = field(default=None, repr=False)
    """Builds the dense mechanism on first access, for methods whose certificate, objective and
    sampler need no matrix (additive integer noise: (Delta + 1) x (2M + 3 Delta + 1) floats,
    1.4 GB at Delta = 5000, which a solve or a release should not pay for)."""
    factored: FactoredMechanism | None = field(default=None, repr=False)
    row_loss: pd.Series | None = None
    details: dict[str, Any] = field(default_factory=dict)
    sampler: Sampler | None = field(default=None, repr=False)
    parameters: dict[str, Any] | None = None
    integer_inputs: bool = False
    sampling: str | None = None
    """How releases are drawn (reported as ``sampler``): the exact sampler for a matrix, a
    factored mechanism, or a ``sampler`` its method declares exact; else the float path."""

    def __post_init__(self) -> None:
        held = sum(x is not None for x in (self.dense, self.matrix, self.factored, self.parameters))
        if held != 1:
            raise ValueError("a Solution holds exactly one of a dense mechanism, a deferred one, a factored one, or parameters")
        if self.parameters is not None and self.sampler is None:
            raise ValueError("a parameter Solution needs its sampler")

    @cached_property
    def mechanism(self) -> pd.DataFrame:
        """The mechanism matrix, labelled (index: true value, columns: released value)."""
        if self.dense is not None:
            return self.dense
        if self.matrix is not None:
            return self.matrix()
        if self.factored is None:
            raise fail("mechanism", self.kind, "requested of a solution with a mechanism matrix (this one is parameters)", self.method)
        return mechanism_frame(self.factored.dense())

    @property
    def inputs(self) -> list[Any]:
        """Row labels of the mechanism (true values)."""
        if self.dense is not None or self.matrix is not None:
            return list(self.mechanism.index)
        if self.factored is None:
            raise fail("inputs", self.kind, "requested of a solution with a mechanism matrix (this one is parameters: any "
                       "true value its sample() accepts)", self.method)
        return list(range(self.factored.n + 1))

    @property
    def kind(self) -> str:
        return self.problem.kind

    @property
    def alpha(self) -> float:
        return self.problem.alpha

    @property
    def epsilon(self) -> float:
        return self.problem.epsilon

    @property
    def sampler_description(self) -> str:
        """Which sampler :meth:`sample` runs (:data:`dpopt.exact_sampling.EXACT_SAMPLER` or the float one)."""
        from dpopt.exact_sampling import EXACT_SAMPLER, FACTORED_SAMPLER, FLOAT_SAMPLER

        if self.sampling is not None:
            return self.sampling
        if self.factored is not None:
            return FACTORED_SAMPLER
        return EXACT_SAMPLER if self.sampler is None else FLOAT_SAMPLER

    @property
    def certified_distribution(self) -> str:
        """Which distribution the certificate speaks for, given the sampler (reported as ``certificate.covers``)."""
        if self.sampler_description.startswith("exact: float64"):
            return ("the mechanism's float64 entries, sampled exactly as rationals with each row normalised exactly "
                    "(the normalisation moves a ratio by at most the certificate's max_row_sum_error)")
        if self.factored is not None:
            return ("G T with the float64 alpha and T, measured in log space; G's row is drawn as G itself (its normal "
                    "float64 entries are within an ulp of it), then T's row exactly")
        if self.sampler_description.startswith("exact: mean + Laplace"):
            return ("the Laplace mechanism, measured; releases round it to release_grid (a calibration's grid; post-processing) with each "
                    "cell's probability within a few ulps of the continuous mechanism's")
        if self.sampler_description.startswith("exact: x + Z rounded"):
            return ("the real density, measured in log space; releases round x + Z to release_grid (a calibration's grid; post-processing) with "
                    "each piece's weight within a few ulps of that density")
        if self.sampler_description.startswith("exact"):
            return "the exact release the sampler draws"
        return "the real-valued mechanism, not its floating-point sampler (simulation only; releases refuse it)"

    def with_timing(self, *, method: str, exact: bool, seconds: float) -> "Solution":
        """Record how the registry ran it; ``exact`` stays False if the method itself fell short."""
        return dataclasses.replace(self, method=method, exact=exact and self.exact, seconds=seconds)

    def summary(self) -> dict[str, Any]:
        """JSON-ready summary (the CLI's output): kind, method, solver, status, objective, ..."""
        data: dict[str, Any] = {
            "kind": self.kind,
            "method": self.method,
            "exact": self.exact,
            "solver": self.solver,
            "status": self.status,
            "objective": _json_float(self.objective),
            "seconds": self.seconds,
            "alpha": self.alpha,
            "epsilon": self.epsilon,
            "certificate": {**self.certificate.to_dict(), "covers": self.certified_distribution},
            "sampler": self.sampler_description,
        }
        if self.parameters is not None:
            data.update({k: _json_float(v) if isinstance(v, float) else v for k, v in self.parameters.items()})
        for key, value in self.details.items():
            if isinstance(value, (int, float, str, bool)) or (
                isinstance(value, list) and all(isinstance(v, (int, float, str, bool, dict)) for v in value)
            ):
                data[key] = _json_float(value) if isinstance(value, float) else value
        return data

    def sample(
        self, true_value: int, count: int = 1, *, rng: Any = None, secure: bool = False, exact: bool = True
    ) -> np.ndarray:
        """Draw ``count`` releases for ``true_value``.

        Parameters
        ----------
        true_value : int
            The true input (a row label of ``mechanism``).
        count : int
            Number of independent releases.
        rng : numpy.random.Generator or int, optional
            Seeded source, for draws that must be reproducible; ``None`` (the default) draws
            from the operating system's secure source (:mod:`secrets`).
        secure : bool
            Draw from :mod:`secrets` (``rng`` must then be None): the default, said explicitly.
        exact : bool
            Releases (the default) must come from an exact sampler
            (:mod:`dpopt.exact_sampling`); a mechanism sampled by floating point (continuous
            Laplace, Gaussian, ...) is refused unless ``exact=False``, which is for
            simulation studies, never for releases.

        Returns
        -------
        numpy.ndarray
            Released values (column labels); for multi-level releases an array
            of shape (count, k), one column per level. Integer releases are int64, or
            Python integers (an object array) where a value leaves int64's range.
        """
        if self.kind in DATA_KINDS:
            row = true_value  # a dataset (None: the problem's own); the sampler validates it
            rows: list[Any] = []
        elif self.parameters is not None or self.integer_inputs:
            # additive mechanisms accept any true value (an integer for integer noise); an int or
            # Fraction stays exact for the grid samplers, which place it in rational arithmetic
            checker = check_int if self.integer_inputs else check_exact_real
            row = checker(true_value, "true_value", self.kind)
            rows = []
        else:
            rows = self.inputs
            if isinstance(true_value, (bool, np.bool_)) or not _is_row_label(true_value, rows):
                what = "a dataset's index in the universe" if self.kind == "finite_query" else "one of the inputs"
                raise fail("true_value", self.kind, f"{what} {rows[0]}..{rows[-1]}", true_value)
            row = rows.index(true_value)
        count = check_count(count, self.kind)
        if not isinstance(exact, bool):
            raise fail("exact", self.kind, "True or False", exact)
        if exact and not self.sampler_description.startswith("exact"):
            raise fail("exact", self.kind, "False to draw from this mechanism: it has no exact sampler, and its floating-point draws "
                       "are for simulation studies, not releases (release real values on a grid: the discrete_laplace or "
                       "discrete_gaussian calibration, a grid for the laplace or staircase calibration, or release_grid in a neighbouring-set "
                       "noise, d_X or statistical query problem)", exact)
        source = resolve_rng(rng, secure=secure)
        if not self.certificate.ok:
            raise fail("certificate", self.kind, "a passing privacy certificate before sampling", self.certificate.to_dict())
        if self.sampler is not None:
            return self.sampler(row, count, source)
        if self.factored is not None:
            return self.factored.sample(row, count, source)
        drawn = sample_row(self.mechanism.to_numpy(), row, count, self.certificate, source)
        return _release_labels(self.mechanism.columns.to_numpy())[drawn]

    def export(self, path: str, *, dense: bool = False) -> None:
        """Write the mechanism with its certificate; the format follows the suffix.

        ``.csv`` (matrix, with metadata in ``<path>.meta.json``), ``.json``,
        ``.parquet`` (metadata in the schema), ``.npz``. A factored solution writes
        its sparse remap T (long format: from, to, probability) unless ``dense``.
        Refuses an uncertified mechanism; writes atomically (nothing is left behind
        on failure).
        """
        from dpopt.export import export_solution

        export_solution(self, path, dense=dense)


def _json_float(value: float) -> float | None:
    return float(value) if np.isfinite(value) else None


def _is_row_label(value: Any, rows: list[Any]) -> bool:
    """Whether ``value`` is one of ``rows`` (arrays and Series compare element-wise, pd.NA refuses to compare)."""
    try:
        return np.ndim(value) == 0 and not isinstance(value, np.ndarray) and bool(value in rows)
    except (ValueError, TypeError):
        return False
