import math
from fractions import Fraction

import numpy as np
import pytest

from dpopt.validation import (InvalidParameterError, SolverError, check_array, check_choice, check_index_set, check_int, check_real,
                              fraction_text)


def test_message_format_names_parameter_owner_allowed_and_value():
    with pytest.raises(InvalidParameterError) as info:
        check_real(1.5, "alpha", "count_query", low=0, high=1, low_open=True, high_open=True)
    assert str(info.value) == "The 'alpha' parameter of count_query must be a float in (0, 1). Got 1.5 instead."
    assert info.value.parameter == "alpha"


@pytest.mark.parametrize("bad", [True, "1", None, math.nan, math.inf, [1.0], pytest.param(10**400, id="10**400"), pytest.param(-(10**400), id="-10**400")])  # 10**400: an OverflowError until 2026-11-28
def test_check_real_rejects_non_numbers(bad):
    with pytest.raises(InvalidParameterError):
        check_real(bad, "x", "owner")


def test_check_real_bounds_open_and_closed():
    assert check_real(0, "x", "o", low=0) == 0.0
    with pytest.raises(InvalidParameterError):
        check_real(0, "x", "o", low=0, low_open=True)
    assert check_real(np.float32(0.5), "x", "o", high=1) == 0.5


@pytest.mark.parametrize("bad", [1.0, True, "3", -1])
def test_check_int(bad):
    with pytest.raises(InvalidParameterError):
        check_int(bad, "n", "count_query", low=0)
    assert check_int(np.int64(3), "n", "count_query", low=1) == 3


@pytest.mark.parametrize(("value", "expected"), [
    ({"lower": 2, "upper": 4}, (2, 3, 4)), ({"upper": 1}, (0, 1)), ({"lower": 5}, (5,)), ({}, (0, 1, 2, 3, 4, 5)),
    ([3, 1, 3], (1, 3)), (np.array([0, 5]), (0, 5)), (range(2), (0, 1)),
])
def test_check_index_set_reads_a_range_or_a_list(value, expected):
    assert check_index_set(value, "side", "owner", 5) == expected


@pytest.mark.parametrize(("value", "field"), [
    ({"lower": 4, "upper": 3}, "side.upper"), ({"lower": 6}, "side.lower"), ({"lower": 1.5}, "side.lower"),
    ({"from": 1}, "side"), ([], "side"), ([6], "side"), ([-1], "side"), ([True], "side"), ([1.0], "side"),
    ("1,2", "side"), (b"12", "side"), (3, "side"), (None, "side"),
])
def test_check_index_set_refuses_naming_the_field(value, field):
    with pytest.raises(InvalidParameterError, match=rf"'{field}' parameter of owner"):
        check_index_set(value, "side", "owner", 5)


def test_check_choice_lists_options():
    with pytest.raises(InvalidParameterError, match="'a', 'b'"):
        check_choice("c", "method", "x", ["a", "b"])


def test_solver_error_names_solver_and_status():
    err = SolverError("HIGHS", "infeasible")
    assert "HIGHS" in str(err) and "infeasible" in str(err)


def test_a_field_name_with_a_quote_is_shown_unambiguously():
    """A problem file's key "'title" (found by the fuzzer) read "The ''title' parameter"."""
    from dpopt.validation import InvalidParameterError

    assert str(InvalidParameterError("'title", "x.toml", "absent", 1)).startswith("The \"'title\" parameter of x.toml")
    assert str(InvalidParameterError("title", "x.toml", "absent", 1)).startswith("The 'title' parameter of x.toml")


def test_dpopt_errors_survive_pickling_whole():
    # a method's process sends its error back (dpopt solve --timeout); a refused value travels as its text
    import pickle

    refused = InvalidParameterError("n", "count_query", "small", np.arange(3))
    for error in (refused, SolverError("HIGHS", "infeasible", "(a program)")):
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error) and str(copy) == str(error)
    assert pickle.loads(pickle.dumps(refused)).parameter == "n"


def test_a_refused_value_is_shown_on_one_line():
    import pandas as pd

    message = str(InvalidParameterError("n", "count_query", "an integer", pd.Categorical(["a"])))
    assert "\n" not in message and "Categories" in message


def test_check_exact_real_keeps_ints_and_fractions_exact():
    from fractions import Fraction

    from dpopt.validation import check_exact_real

    assert check_exact_real(2**53 + 1, "x", "owner") == 2**53 + 1
    assert check_exact_real(np.int64(-(2**62) - 1), "x", "owner") == -(2**62) - 1
    assert check_exact_real(Fraction(1, 3), "x", "owner") == Fraction(1, 3)
    assert type(check_exact_real(np.float32(0.5), "x", "owner")) is float
    for bad in (True, math.nan, 10**400, "1"):
        with pytest.raises(InvalidParameterError):
            check_exact_real(bad, "x", "owner")


def test_a_decimal_is_an_exact_real_and_is_bounded_before_it_is_converted():
    """A Decimal true value was refused as "not a float" until 2026-11-29; it is now the Fraction it
    is, refused in one line where Fraction(value) would build 10**(10**8)."""
    import time
    from decimal import Decimal
    from fractions import Fraction

    from dpopt.validation import check_exact_real

    assert check_exact_real(Decimal("0.05"), "true_value", "x") == Fraction(1, 20)
    assert check_exact_real(Decimal("-3"), "true_value", "x") == -3
    for bad in ("NaN", "-Infinity", "1e-1101", "1e-100000000", "1e100000000"):
        start = time.perf_counter()
        with pytest.raises(InvalidParameterError, match="'true_value'"):
            check_exact_real(Decimal(bad), "true_value", "x")
        assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(("value", "text"), [(Fraction(3, 2), "1.5"), (Fraction(-1, 8), "-0.125"), (Fraction(7), "7"),
                                             (Fraction(1, 3), "1/3"), (Fraction(-5, 6), "-5/6"),
                                             (Fraction(10**30 + 1, 10**30), "1.000000000000000000000000000001")])
def test_a_fraction_is_written_exactly_as_a_decimal_where_it_has_one(value, text):
    assert fraction_text(value) == text
    assert Fraction(text) == value
    assert str(InvalidParameterError("x", "owner", "allowed", value)).endswith(f"Got {text} instead.")


@pytest.mark.parametrize("value", [[True, 2], [[0, 1], [2, False]], ([0, 1], (np.True_, 2)), [1.5, np.bool_(False)]])
def test_a_boolean_among_numbers_is_not_read_as_a_number(value):
    """numpy reads [True, 2] as the integers [1, 2]; until 2026-11-29 check_array took it so."""
    with pytest.raises(InvalidParameterError, match="'x'"):
        check_array(value, "x", "owner")
