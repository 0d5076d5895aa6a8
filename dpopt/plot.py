"""Standard figures from a sweep table (:func:`dpopt.sweep`): a metric per method, and heatmaps.

Both take the tidy table (one row per cell and method), label every axis with the column it
shows, and return the matplotlib Axes so a notebook can add to them. matplotlib is needed
(``pip install matplotlib``; it is in dpopt's ``test`` and ``notebooks`` extras).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dpopt.lazy_modules import pandas as pd
from dpopt.validation import fail

__all__ = ["metric_by", "heatmap"]

OWNER = "dpopt.plot"


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError:
        raise fail("matplotlib", OWNER, "installed (pip install matplotlib)", None) from None
    return plt


def _columns(table: Any, **names: Any) -> pd.DataFrame:
    """The table's rows that did not fail, once every ``parameter=column`` names one of its columns."""
    if not isinstance(table, pd.DataFrame):
        raise fail("table", OWNER, "a pandas DataFrame (a sweep's table)", type(table).__name__)
    for parameter, name in names.items():
        if not isinstance(name, str) or name not in table.columns:  # a list is unhashable: a raw TypeError before
            raise fail(parameter, OWNER, "a column of the table (" + ", ".join(map(str, table.columns)) + ")", name)
    return table[table["error"].fillna("") == ""] if "error" in table.columns else table


def _options(ax: Any, label: Any, **flags: Any) -> None:
    """Refuse an ``ax`` that is not a matplotlib Axes, a ``label`` that is not a string, and flags that are not bools."""
    if ax is not None:
        from matplotlib.axes import Axes

        if not isinstance(ax, Axes):
            raise fail("ax", OWNER, "a matplotlib Axes or None", type(ax).__name__)
    if label is not None and not isinstance(label, str):
        raise fail("label", OWNER, "a string or None", label)
    for name, flag in flags.items():
        if not isinstance(flag, bool):
            raise fail(name, OWNER, "True or False", flag)


def metric_by(table: pd.DataFrame, x: str, y: str = "objective", *, by: str = "method", ax: Any = None,
              logx: bool = False, logy: bool = False, label: str | None = None) -> Any:
    """``y`` against ``x``, one line per value of ``by`` (failed cells left out); averaged over other columns."""
    rows = _columns(table, x=x, y=y, by=by)
    _options(ax, label, logx=logx, logy=logy)
    ax = ax if ax is not None else _pyplot().subplots(figsize=(6, 4))[1]
    for name, group in rows.groupby(by, sort=True):
        line = group.groupby(x, sort=True)[y].mean()
        ax.plot(line.index, line.to_numpy(), marker="o", label=str(name))
    ax.set_xlabel(x)
    ax.set_ylabel(label or y)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.legend(title=by)
    return ax


def heatmap(table: pd.DataFrame, x: str, y: str, value: str = "objective", *, method: str | None = None, ax: Any = None,
            label: str | None = None, cmap: str = "viridis") -> Any:
    """``value`` over a grid of two parameters (one method: ``method``, or the only one), with a colourbar.

    Integer-valued parameters get integer tick labels; cells are placed by rank, so uneven
    grids stay readable.
    """
    rows = _columns(table, x=x, y=y, value=value)
    _options(ax, label)
    if not isinstance(cmap, str) or cmap not in _pyplot().colormaps:
        raise fail("cmap", OWNER, "the name of a matplotlib colormap (e.g. 'viridis')", cmap)
    if len({x, y, value}) < 3:
        raise fail("y", OWNER, f"a column other than x ({x!r}) and value ({value!r}): a heatmap needs three", y)
    if "method" in rows.columns:
        methods = sorted(rows["method"].unique())
        if method is None and len(methods) > 1:
            raise fail("method", OWNER, "one of " + ", ".join(methods) + " (the table holds several)", None)
        if method is not None:
            if method not in methods:
                raise fail("method", OWNER, "one of " + ", ".join(methods), method)
            rows = rows[rows["method"] == method]
    grid = rows.pivot_table(index=y, columns=x, values=value, aggfunc="mean").sort_index().sort_index(axis=1)
    plt = _pyplot()
    ax = ax if ax is not None else plt.subplots(figsize=(6, 4.5))[1]
    image = ax.imshow(grid.to_numpy(), origin="lower", aspect="auto", cmap=cmap)
    ax.set_xticks(range(grid.shape[1]), [_tick(v) for v in grid.columns])
    ax.set_yticks(range(grid.shape[0]), [_tick(v) for v in grid.index])
    ax.set_xlabel(x)
    ax.set_ylabel(y)
    ax.figure.colorbar(image, ax=ax, label=label or value)
    return ax


def _tick(value: Any) -> str:
    number = float(value) if isinstance(value, (int, float, np.number)) else None
    if number is not None and number.is_integer():
        return str(int(number))
    return f"{number:.3g}" if number is not None else str(value)
