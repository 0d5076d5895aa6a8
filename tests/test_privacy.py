import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dpopt.privacy import resolve_privacy
from dpopt.validation import InvalidParameterError


@given(st.floats(1e-6, 1 - 1e-6))
def test_alpha_and_epsilon_are_two_views_of_one_level(alpha):
    level = resolve_privacy(alpha, None, "t")
    again = resolve_privacy(None, level.epsilon, "t")
    assert again.alpha == pytest.approx(alpha, rel=1e-12)
    assert level.epsilon == pytest.approx(-math.log(alpha))


@pytest.mark.parametrize("alpha,epsilon", [(None, None), (0.5, 1.0), (0.0, None), (1.0, None), (None, 0.0), (None, -1.0), (None, 1e6)])
def test_exactly_one_valid_parameter(alpha, epsilon):
    with pytest.raises(InvalidParameterError):
        resolve_privacy(alpha, epsilon, "t")
