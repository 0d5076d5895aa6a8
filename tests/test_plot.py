"""dpopt.plot: figures from a sweep table, labelled."""

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from dpopt import plot  # noqa: E402
from dpopt.sweeps import run_sweep, sweep_from_dict  # noqa: E402
from dpopt.validation import InvalidParameterError  # noqa: E402


@pytest.fixture(scope="module")
def table():
    spec = {"kind": "sweep", "methods": ["lp", "geometric"], "base": {"kind": "count_query", "loss": "absolute", "n": 4},
            "grid": {"alpha": [0.2, 0.5, 0.8], "n": [3, 6]}}
    return run_sweep(sweep_from_dict(spec), progress=False)


def test_metric_by_draws_one_labelled_line_per_method(table):
    ax = plot.metric_by(table, "alpha", "objective", label="worst-case expected loss")
    assert ax.get_xlabel() == "alpha" and ax.get_ylabel() == "worst-case expected loss"
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["geometric", "lp"]
    assert len(ax.get_lines()) == 2 and all(len(line.get_xdata()) == 3 for line in ax.get_lines())


def test_heatmap_has_integer_ticks_on_integer_axes_and_a_colourbar(table):
    ax = plot.heatmap(table, "alpha", "n", method="lp")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["3", "6"]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.2", "0.5", "0.8"]
    assert len(ax.figure.axes) == 2  # the colourbar
    assert ax.figure.axes[1].get_ylabel() == "objective"


def test_bad_arguments_are_refused_naming_them(table):
    with pytest.raises(InvalidParameterError, match="method"):
        plot.heatmap(table, "alpha", "n")  # two methods: say which
    with pytest.raises(InvalidParameterError, match="colour"):
        plot.metric_by(table, "colour")
    with pytest.raises(InvalidParameterError, match="table"):
        plot.metric_by([1, 2], "alpha")
    with pytest.raises(InvalidParameterError, match="'y'"):
        plot.heatmap(table, "alpha", "alpha", method="lp")  # one axis twice: pandas would fail inside pivot_table


@pytest.mark.parametrize("call,field", [
    (lambda t: plot.metric_by(t, ["alpha"]), "'x'"),  # unhashable: a raw TypeError until 2026-11-29
    (lambda t: plot.metric_by(t, "alpha", by={"a": 1}), "'by'"),
    (lambda t: plot.metric_by(t, "alpha", ax="axes"), "'ax'"),  # was AttributeError: no attribute 'plot'
    (lambda t: plot.metric_by(t, "alpha", logx="yes"), "'logx'"),
    (lambda t: plot.metric_by(t, "alpha", label=3), "'label'"),
    (lambda t: plot.heatmap(t, "alpha", "n", method="lp", value=["objective"]), "'value'"),
    (lambda t: plot.heatmap(t, "alpha", "n", method="lp", cmap="no such map"), "'cmap'"),  # was matplotlib's ValueError
    (lambda t: plot.heatmap(t, "alpha", "n", method="lp", cmap=None), "'cmap'"),
])
def test_every_bad_option_is_refused_naming_it(table, call, field):
    with pytest.raises(InvalidParameterError, match=field):
        call(table)
