import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpopt.losses import first_monotonicity_violation, loss_table
from dpopt.validation import InvalidParameterError
from tests.strategies import monotone_losses


def test_named_losses():
    np.testing.assert_array_equal(loss_table("absolute", 2), [[0, 1, 2], [1, 0, 1], [2, 1, 0]])
    np.testing.assert_array_equal(loss_table("squared", 2)[0], [0, 1, 4])
    np.testing.assert_array_equal(loss_table("zero_one", 2)[1], [1, 0, 1])


def test_callable_vectorised_and_scalar_only():
    np.testing.assert_allclose(loss_table(lambda i, r: abs(i - r) ** 0.5, 3), np.abs(np.subtract.outer(range(4), range(4))) ** 0.5)
    np.testing.assert_array_equal(loss_table(lambda i, r: float(abs(i - r)), 3), loss_table("absolute", 3))


def test_first_offending_cell_is_named():
    table = loss_table("absolute", 4).copy()
    table[2, 0] = 0.5  # distance 2 cheaper than distance 1
    with pytest.raises(InvalidParameterError, match=r"l\(2, 0\) = 0.5 < l\(2, 1\) = 1"):
        loss_table(table, 4)


def test_sides_are_compared_with_each_other():
    # each side alone is increasing, but l(1, 3) (distance 2) < l(1, 0) (distance 1)
    table = np.array([[0, 1, 2, 3], [5, 0, 1, 2], [2, 1, 0, 1], [3, 2, 1, 0]], dtype=float)
    assert first_monotonicity_violation(table) == ((1, 0), (1, 3))


@pytest.mark.parametrize("bad", ["cubic", [[0, 1], [1, 0]], [[0, np.nan, 1]] * 3, lambda i, r: "x"])
def test_bad_losses_rejected(bad):
    with pytest.raises(InvalidParameterError, match="'loss'"):
        loss_table(bad, 2)


@given(st.integers(1, 8).flatmap(lambda n: monotone_losses(n)))
def test_generated_monotone_losses_are_accepted(table):
    assert first_monotonicity_violation(table) is None
