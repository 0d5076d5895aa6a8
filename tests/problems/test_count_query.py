import dataclasses

import numpy as np
import pytest

import dpopt
from dpopt.validation import InvalidParameterError


def test_side_information_forms():
    assert dpopt.CountQuery(n=4, alpha=0.5).support == (0, 1, 2, 3, 4)
    assert dpopt.CountQuery(n=4, alpha=0.5, side_information={"lower": 2}).support == (2, 3, 4)
    assert dpopt.CountQuery(n=4, alpha=0.5, side_information=[3, 0, 3]).support == (0, 3)


def test_epsilon_or_alpha():
    p = dpopt.CountQuery(n=2, epsilon=np.log(4))
    assert p.alpha == pytest.approx(0.25) and p.privacy.epsilon == pytest.approx(np.log(4))


def test_immutable_and_read_only_loss():
    p = dpopt.CountQuery(n=2, alpha=0.5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.n = 3
    with pytest.raises(ValueError):
        p.loss_matrix[0, 0] = 1.0


def test_user_loss_table_and_callable():
    table = np.abs(np.subtract.outer(np.arange(4), np.arange(4))) ** 1.5
    a = dpopt.CountQuery(n=3, alpha=0.5, loss=table)
    b = dpopt.CountQuery(n=3, alpha=0.5, loss=lambda i, r: np.abs(i - r) ** 1.5)
    np.testing.assert_array_equal(a.loss_matrix, b.loss_matrix)
    assert a.loss_name == "table" and "table" in repr(a)


@pytest.mark.parametrize(
    "kwargs,parameter",
    [
        (dict(n=0, alpha=0.5), "n"),
        (dict(n=2.5, alpha=0.5), "n"),
        (dict(n=3, alpha=0.5, loss="l2"), "loss"),
        (dict(n=3, alpha=0.5, loss=[[0, 1], [1, 0]]), "loss"),
        (dict(n=3, alpha=0.5, side_information="all"), "side_information"),
        (dict(n=3, alpha=0.5, side_information={"lower": -1}), "side_information.lower"),
    ],
)
def test_invalid_input_named(kwargs, parameter):
    with pytest.raises(InvalidParameterError) as info:
        dpopt.CountQuery(**kwargs)
    assert info.value.parameter == parameter
