"""Drawing releases from certified mechanisms.

Randomness always comes from a source the caller controls: a seeded
:class:`numpy.random.Generator` or a seed (reproducible draws: tests, simulation studies),
or, when neither is given, the operating system's secure source (:mod:`secrets`). There is
no global RNG anywhere in dpopt.
"""

from __future__ import annotations

import secrets
from typing import Any, Union

import numpy as np

from dpopt.certificates import Certificate
from dpopt.validation import check_int, fail

__all__ = ["check_count", "require_simulation", "RandomSource", "SecureRandom", "resolve_rng", "uniforms", "open_uniforms", "inverse_cdf", "sample_row"]


class SecureRandom:
    """Uniform draws from the operating system's secure source (``secrets``).

    Each uniform uses 53 random bits, so it is an exact multiple of 2**-53 in [0, 1).
    """

    def words(self, size: int) -> np.ndarray:
        """``size`` uniform 64-bit words (what :func:`dpopt.exact_sampling.random_words` draws)."""
        return np.frombuffer(secrets.token_bytes(8 * size), dtype=np.uint64).copy()

    def random(self, size: int) -> np.ndarray:
        return (self.words(size) >> np.uint64(11)).astype(float) / 2.0**53  # the top 53 bits: exact in float64

    def __repr__(self) -> str:
        return "SecureRandom()"


RandomSource = Union[np.random.Generator, SecureRandom]


def check_count(count: Any, owner: str) -> int:
    """The number of releases to draw: an integer in [1, :data:`dpopt.limits.MAX_RELEASES`]."""
    from dpopt.limits import MAX_RELEASES

    return check_int(count, "count", owner, low=1, high=MAX_RELEASES)


def resolve_rng(rng: Any = None, *, secure: bool = False) -> RandomSource:
    """Turn ``rng`` into a random source.

    Parameters
    ----------
    rng : Generator, int, or None
        A Generator is used as is; an int seeds a new PCG64 Generator; ``None`` is
        :class:`SecureRandom`, the operating system's secure source.
    secure : bool
        Use :class:`SecureRandom` (``rng`` must then be None): what ``None`` gives, said
        explicitly.

    Notes
    -----
    Until 2026-11-29 ``None`` meant a PCG64 Generator seeded from the OS, so a release drawn
    without a seed (``dpopt sample`` with neither ``--seed`` nor ``--secure``) came from a
    generator that is not cryptographic: its state can in principle be recovered from its
    outputs (Bouillaguet, Martinez & Sauvage 2020 did so for PCG64 from 512 words), and with
    it the noise and the true value. Noise for a release should be unpredictable, as
    OpenDP's is; a seed is for draws that must be reproducible.
    """
    if not isinstance(secure, (bool, np.bool_)):  # None or [] meant "not secure" silently until 2026-11-29
        raise fail("secure", "sampling", "True or False", secure)
    if secure:
        if rng is not None:
            raise fail("rng", "sampling", "None when secure=True", rng)
        return SecureRandom()
    if rng is None:
        return SecureRandom()
    if isinstance(rng, (np.random.Generator, SecureRandom)):
        return rng
    seed = check_int(rng, "seed", "sampling", low=0)
    return np.random.default_rng(seed)


def require_simulation(exact: Any, owner: str) -> None:
    """Refuse a floating-point sampler unless the caller said ``exact=False`` (simulation only).

    A continuous sampler's doubles leak the true value (Mironov, CCS 2012): releases go through
    an exact sampler (:mod:`dpopt.exact_sampling`, :mod:`dpopt.mechanisms.grid_release`).
    """
    if not isinstance(exact, bool):
        raise fail("exact", owner, "True or False", exact)
    if exact:
        raise fail("exact", owner, "False to draw from this floating-point sampler (simulation studies, not releases; release "
                   "real values with dpopt.mechanisms.grid_release.GridLaplace / GridGaussian)", exact)


def uniforms(source: RandomSource, size: int) -> np.ndarray:
    """``size`` uniforms in [0, 1) from ``source``."""
    return source.random(size)


def open_uniforms(source: RandomSource, size: int) -> np.ndarray:
    """``size`` uniforms strictly inside (0, 1): the 53-bit grid shifted by half a step.

    Both sources return multiples of 2**-53 in [0, 1); adding 2**-54 keeps the grid
    symmetric about 1/2 and lets inverse CDFs with infinite tails (Laplace, Gaussian)
    take every draw without producing +-inf.
    """
    return uniforms(source, size) + 2.0**-54


def inverse_cdf(probabilities: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Indices drawn by inverse CDF: for each uniform in ``u``, from one distribution.

    ``probabilities`` is one row (shared by every ``u``) or one row per ``u``. Negative
    round-off is clipped and the CDF normalised, so a zero-probability index is
    never drawn and the last step is exact.
    """
    p = np.clip(np.asarray(probabilities, dtype=float), 0.0, None)
    cdf = np.cumsum(p, axis=-1)
    if p.ndim == 1:
        return np.searchsorted(cdf / cdf[-1], u, side="right")
    cdf /= cdf[:, -1:]
    return (cdf > u[:, None]).argmax(axis=1)


def sample_row(
    matrix: np.ndarray,
    row: int,
    count: int,
    certificate: Certificate,
    source: RandomSource,
) -> np.ndarray:
    """Draw ``count`` outputs for true input ``row`` exactly from that row (:mod:`dpopt.exact_sampling`).

    Refuses to sample unless ``certificate.ok``: an uncertified mechanism never
    releases anything. A zero-probability output is never drawn, and every positive
    entry, however small, keeps its exact probability.
    """
    from dpopt.exact_sampling import exact_choice

    if not certificate.ok:
        raise fail("certificate", "sampling", "a passing privacy certificate (ok = true)", certificate.to_dict())
    count = check_count(count, "sampling")
    return exact_choice(np.asarray(matrix, dtype=float)[row], count, source)
