"""Writes notebooks/04_metric_space_mechanisms.ipynb (outputs are not committed; CI executes it)."""

from pathlib import Path

import nbformat as nbf

cells = []
md = lambda text: cells.append(nbf.v4.new_markdown_cell(text.strip()))  # noqa: E731
code = lambda text: cells.append(nbf.v4.new_code_cell(text.strip()))  # noqa: E731

md(r"""
# Mechanisms between metric spaces (Wu, Xia & He) against the optimum

Wu, Xia & He build mechanisms as randomized maps from a dataset metric space
$(\mathcal D, \bar d)$ to a value metric space $(\mathcal R, d)$ by partitioning
$\mathcal R$ into set sequences, and prove them $2\epsilon$-DP. They never ask how far
those mechanisms are from the best possible one. On a finite universe the best one is
an LP (`finite_query`, method `lp`), and for a sum query with a neighbouring set $V$ the
best *density* can be approached by an LP over piecewise-constant densities
(`noise_adding` with `neighbouring_set`, method `lp`). This notebook reproduces the
paper's Figs. 6-8 and adds that missing reference:

1. **Triangle counts on graphs** (Section 6.1, Fig. 6): the privacy-first mechanism
   (Theorem 2), the compositional one (Theorem 3) and the ladder mechanism on all 1044
   seven-node graphs, *with the LP optimum* on them at $\epsilon = 1$, and the price of
   every construction against it, on those and (across $\epsilon$) on the 156 six-node graphs.
2. **Sum queries with a non-convex neighbouring set** (Section 6.2, Fig. 7): Theorem
   3 against the staircase over $(\delta, \epsilon)$ for $V_1..V_4$, with the grid LP.
3. **The densities** (Fig. 8).

Every number quoted below is computed in this notebook.
""")
code(r"""
import json
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from tqdm import tqdm

import dpopt
from dpopt.mechanisms.laplace import LaplaceMechanism
from dpopt.universes import graph_atlas

plt.rcParams["figure.dpi"] = 90
warnings.filterwarnings("ignore", category=FutureWarning)
""")

md(r"""
## 1. Triangle counting under edge-DP (Fig. 6)

The universe is every isomorphism class of graphs on 7 nodes (networkx's atlas: 1044
classes); two classes are neighbours when representatives differ in one edge. The paper
runs each mechanism at its construction parameter $\epsilon$ and proves $2\epsilon$; to
reproduce it we use `calibrate_shortcuts = "proof"`, which sets the parameter to half the
target so the *proven* loss meets it. $\mathrm{Rate}(g)$ is the mean error of a
mechanism on graph $g$ over the ladder mechanism's.
""")
code(r"""
atlas = graph_atlas(7, "triangles")
print(f"{atlas.size} classes, {len(atlas.neighbours)} neighbouring pairs, diameter {int(atlas.distances.max())}, "
      f"{np.unique(atlas.values).size} distinct triangle counts")

epsilons = [0.1, 0.5, 1.0, 2.0, 5.0]
delta_first_100 = np.r_[np.ones(100), np.zeros(atlas.size - 100)]
# Fig. 6 as one sweep: every epsilon x {ladder, Theorem 2, Theorem 3 with delta = 1 on the first 100 graphs};
# each cell is solved and certified by dpopt.solve and records its per-graph expected error (input_losses)
base = {"kind": "finite_query", "universe": {"type": "graph_atlas", "nodes": 7, "statistic": "triangles"},
        "loss": "absolute", "calibrate_shortcuts": "proof", "delta": delta_first_100.tolist()}
fig6_table = dpopt.sweep({"kind": "sweep", "base": base, "grid": {"epsilon": epsilons},
                          "methods": ["ladder", "privacy_first", "compositional"], "record": ["input_losses"]},
                         workers=2, progress=False)
assert (fig6_table["error"] == "").all() and fig6_table["certificate_ok"].all()
per_graph_error = {(row.epsilon, row.method): np.asarray(row.input_losses) for row in fig6_table.itertuples()}
rates = {eps: (per_graph_error[eps, "privacy_first"] / per_graph_error[eps, "ladder"],
               per_graph_error[eps, "compositional"] / per_graph_error[eps, "ladder"]) for eps in epsilons}

fig, axes = plt.subplots(2, 1, figsize=(11, 6.5), sharex=True)
for eps, (first, comp) in rates.items():
    axes[0].plot(first[:100], marker=".", lw=0.8, label=f"eps = {eps}")
    axes[1].plot(comp[:100], marker=".", lw=0.8, label=f"eps = {eps}")
for ax, title in zip(axes, ["Theorem 2 (privacy first) / ladder", "Theorem 3 (delta = 1 on these graphs) / ladder"]):
    ax.axhline(1.0, color="k", lw=0.8)
    ax.set(yscale="log", ylabel="Rate(g) = mean error / ladder's", title=title)
    ax.legend(ncol=5, fontsize=8)
axes[1].set_xlabel("graph g (atlas order, first 100 of 1044)")
plt.tight_layout()

fig6 = pd.DataFrame({
    "Thm 2 better than ladder (share of 1044 graphs)": {e: float(np.mean(r[0] < 1)) for e, r in rates.items()},
    "Thm 3 (delta=1) better than ladder (share of the first 100)": {e: float(np.mean(r[1][:100] < 1)) for e, r in rates.items()},
}).rename_axis("epsilon")
fig6.round(3)
""")
code(r"""
better = fig6.iloc[:, 0]
claim_holds = bool((better[better.index >= 0.5] > 0.5).all())
print("Paper: 'Theorem 2 is better than the ladder for most graphs when eps >= 0.5'. Measured: better on "
      + ", ".join(f"{100 * v:.0f}% at eps = {e}" for e, v in better.items()) + f" -> the claim {'holds' if claim_holds else 'does not hold'} here.")
comp_better = fig6.iloc[:, 1]
paper_holds = bool((comp_better < 0.5).sum() > len(comp_better) / 2)
print("Paper: 'Theorem 3 is worse than the ladder for those graphs of delta = 1 and for most eps'. Measured share of them "
      "where Theorem 3 is better: " + ", ".join(f"{100 * v:.0f}% at eps = {e}" for e, v in comp_better.items())
      + f" -> the claim {'holds' if paper_holds else 'does not hold'} here (both at the proof's parameter eps / 2).")
""")

md(r"""
### What the paper could not show: the optimum

On a finite universe the best mechanism is an LP; for the 1044 seven-node classes it has
29,232 variables and 367,248 privacy rows. dpopt's `lp` route solves it on quotients of
the classes (datasets merged by what they see within a few hops) and keeps an answer only
when a certified lower bound meets it, so every answer carries
`lower_bound <= optimum <= objective` (`benchmarks/finite_query.py` times it at every
$\epsilon$). Here it is at $\epsilon = 1$ on Fig. 6's axes: the optimum's
$\mathrm{Rate}(g)$ against the ladder at the same guarantee.
""")
code(r"""
from dpopt.metrics import expected_loss

seven = dpopt.FiniteQuery(universe={"type": "graph_atlas", "nodes": 7, "statistic": "triangles"}, epsilon=1.0, loss="absolute")
optimum7 = dpopt.solve(seven, "lp")
assert optimum7.certificate.ok and optimum7.exact
gap7 = (optimum7.objective - optimum7.details["lower_bound"]) / optimum7.objective
ladder1 = per_graph_error[1.0, "ladder"]
lp_rate = expected_loss(optimum7.mechanism, seven.loss_matrix) / ladder1
print(f"1044 graphs, eps = 1: LP optimum (minimax E|error|) {optimum7.objective:.4f}, certified within {gap7:.1e} "
      f"(relative), solved in {optimum7.seconds:.0f} s")

fig, ax = plt.subplots(figsize=(11, 3.8))
ax.plot(rates[1.0][0][:100], marker=".", lw=0.8, label="Theorem 2 (proof's parameter)")
ax.plot(rates[1.0][1][:100], marker=".", lw=0.8, label="Theorem 3, delta = 1 (proof's parameter)")
ax.plot(lp_rate[:100], marker=".", lw=1.2, color="k", label="minimax LP optimum")
ax.axhline(1.0, color="grey", lw=0.8)
ax.set(yscale="log", xlabel="graph g (atlas order, first 100 of 1044)", ylabel="Rate(g) = mean error / ladder's",
       title="Fig. 6 at eps = 1, with the optimum (all epsilon-DP)")
ax.legend(fontsize=8)
plt.tight_layout()
below, above = int((lp_rate < 1).sum()), int((lp_rate > 1).sum())
print(f"The minimax optimum's error is below the ladder's on {below} of the 1044 graphs and above it on {above} "
      f"(Rate up to {lp_rate.max():.3f}); its worst case is {ladder1.max() / optimum7.objective:.2f} times below the ladder's.")
theorem2_below = int((rates[1.0][0] < lp_rate).sum())
print(f"Theorem 2 (at the proof's parameter, so also epsilon-DP) has a smaller error than the optimum on {theorem2_below} "
      f"of the 1044 graphs, and a worst case {per_graph_error[1.0, 'privacy_first'].max() / optimum7.objective:.2f} times the optimum's.")
first_100_below = int(((rates[1.0][0][:100] < lp_rate[:100]) & (rates[1.0][1][:100] < lp_rate[:100])).sum())
print(f"On the first 100 graphs both Theorems have a smaller error than the optimum on {first_100_below}.")
assert 0 < above < below and theorem2_below >= 100 and first_100_below >= 90  # what the next paragraph says
""")
md(r"""
The LP minimises only the worst case, so it need not win graph by graph: even the ladder
beats it somewhere, and Theorem 2 on hundreds of graphs (counted above; on the first 100,
graphs with few edges, both Theorems sit below it nearly everywhere), while its worst case
is far below theirs: the minimax optimum spends its privacy budget on the hardest graphs.
The price of each construction on the 1044 graphs, each at the parameter whose
**measured** loss meets $\epsilon$ (the default `calibrate_shortcuts = "measured"`), is
its worst-case error over the LP's:
""")
code(r"""
constructions = ["staircase", "privacy_first", "compositional", "utility_first", "ladder", "exponential"]
price7 = pd.Series({name: dpopt.solve(seven, name).objective / optimum7.objective for name in constructions},
                   name="price at eps = 1 (worst-case error / the LP optimum's)")
price7.round(3).to_frame()
""")
md(r"""
The 156 six-node classes (18,272 privacy rows) solve in seconds at any
$\epsilon$, so there the price is followed across $\epsilon$:
""")
code(r"""
six = {"type": "graph_atlas", "nodes": 6, "statistic": "triangles"}
priced = dpopt.sweep({"kind": "sweep", "base": {"kind": "finite_query", "universe": six, "loss": "absolute"},
                      "grid": {"epsilon": [0.5, 1.0, 2.0, 4.0]}, "methods": ["lp", *constructions], "record": ["input_losses"]},
                     workers=2, progress=False)
assert (priced["error"] == "").all() and priced["certificate_ok"].all() and priced.loc[priced["method"] == "lp", "exact"].all()
wide = priced.pivot(index="epsilon", columns="method", values="objective")
assert (wide[constructions].to_numpy() >= wide[["lp"]].to_numpy() - 1e-9).all()  # the optimum is never beaten
price = wide[constructions].div(wide["lp"], axis=0)
price.insert(0, "LP optimum (minimax E|error|)", wide["lp"])
at_one = priced[priced["epsilon"] == 1.0].set_index("method")["input_losses"]
per_graph = {("LP optimum" if m == "lp" else m): np.asarray(v) for m, v in at_one.items()}
price.round(3)
""")
code(r"""
fig, ax = plt.subplots(figsize=(11, 3.8))
order = np.argsort(graph_atlas(6, "triangles").values, kind="stable")
for name in ["LP optimum", "privacy_first", "ladder", "staircase"]:
    ax.plot(per_graph[name][order], lw=1.2 if name == "LP optimum" else 0.8, label=name)
ax.set(xlabel="graph (156 six-node classes, sorted by triangle count)", ylabel="E|M(g) - f(g)| at eps = 1",
       title="Per-graph error of the constructions and of the minimax LP optimum")
ax.legend()
plt.tight_layout()
best = price[constructions].idxmin(axis=1)
print("Cheapest construction per epsilon (ratio to the LP optimum): "
      + ", ".join(f"eps = {e}: {best[e]} ({price.loc[e, best[e]]:.3f})" for e in price.index))
""")

md(r"""
## 2. Sum queries with a neighbouring set $V$ (Fig. 7)

A sum query's neighbouring set $V$ holds the changes one record can make:
$V_1 = [0,1]\cup[1000,1001]$, $V_2 = [0,100]\cup[1000,1001]$, $V_3 = [0,500]\cup[1000,1001]$,
$V_4 = [0,1001]$, all with sensitivity $\Delta = 1001$. Theorem 3's density is
$e^{-i\epsilon}/\alpha$ on the ring $B_i \setminus B_{i-1}$ with $B_i$ the $i$-fold Minkowski
sum of $V\cup -V$ widened by $\delta$; dpopt builds it exactly (rings merged as interval
lists until they become bands of width $\Delta$, the tail summed in closed form) and
measures its privacy loss: $\epsilon$ exactly, as Corollary 1 says. Rate $=$ E|X| of Theorem 3
over the staircase's ($\Delta = 1001$, optimal $\gamma$).
""")
code(r"""
V = {"V1": [[0, 1], [1000, 1001]], "V2": [[0, 100], [1000, 1001]], "V3": [[0, 500], [1000, 1001]], "V4": [[0, 1001]]}
deltas = [0, 1, 5, 10, 20, 50, 100, 200]
fig7_eps = [0.5, 1, 2, 3, 5, 7, 10]
# Fig. 7 as two sweeps: Theorem 3 over V x epsilon x delta, the staircase over V x epsilon (it has no delta)
fig7 = {"kind": "sweep", "base": {"kind": "noise_adding", "neighbouring_set": V["V4"], "epsilon": 1.0},
        "grid": {"neighbouring_set": list(V.values()), "epsilon": fig7_eps}}
theorem3 = dpopt.sweep({**fig7, "grid": {**fig7["grid"], "delta": deltas}, "methods": ["compositional"]}, workers=2, progress=False)
staircase = dpopt.sweep({**fig7, "methods": ["staircase"]}, workers=2, progress=False)
for table in (theorem3, staircase):
    assert (table["error"] == "").all() and table["certificate_ok"].all()
    table["V"] = table["neighbouring_set"].map({json.dumps(v): name for name, v in V.items()})
rated = theorem3.merge(staircase[["V", "epsilon", "objective"]], on=["V", "epsilon"], suffixes=("", "_staircase"))
rated["rate"] = rated["objective"] / rated["objective_staircase"]
rate = {name: sub.pivot(index="epsilon", columns="delta", values="rate").loc[fig7_eps, deltas].to_numpy()
        for name, sub in rated.groupby("V")}
losses = (theorem3["max_privacy_loss"] / theorem3["epsilon"]).tolist()
print(f"measured privacy loss / eps over all {len(losses)} Theorem 3 densities: min {min(losses):.12f}, max {max(losses):.12f} (Corollary 1)")

fig, axes = plt.subplots(1, 4, figsize=(15, 3.8), sharey=True)
for ax, (name, grid) in zip(axes, rate.items()):
    image = ax.imshow(np.log2(grid), origin="lower", cmap="RdBu_r", vmin=-1.5, vmax=1.5, aspect="auto")
    ax.set(xticks=range(len(deltas)), xticklabels=deltas, yticks=range(len(fig7_eps)), yticklabels=fig7_eps,
           xlabel="delta", title=f"{name}: log2 Rate")
axes[0].set_ylabel("epsilon")
fig.colorbar(image, ax=axes, label="log2(E|X| Theorem 3 / E|X| staircase); blue = Theorem 3 better")
plt.show()
""")
code(r"""
region = [(i, j) for i, e in enumerate(fig7_eps) for j, d in enumerate(deltas) if e >= 3 and 5 <= d <= 50]
summary = pd.DataFrame({
    "Delta / vol(V)": {n: 1001 / sum(b - a for a, b in v) for n, v in V.items()},
    "share Rate < 1 in eps >= 3, 5 <= delta <= 50": {n: np.mean([rate[n][i, j] < 1 for i, j in region]) for n in V},
    "best Rate": {n: rate[n].min() for n in V},
    "Rate at delta = 0 (K-norm), min over eps": {n: rate[n][:, 0].min() for n in V},
})
summary.round(3)
""")
code(r"""
ordered = summary.sort_values("Delta / vol(V)", ascending=False)
monotone = bool(np.all(np.diff(ordered.iloc[:, 1].to_numpy()) <= 1e-12))
knorm_worse = bool((summary.iloc[:, 3] > 1).all())
print(f"Paper: 'the larger Delta/vol(V), the better Theorem 3 against the staircase when eps >= 3 and 5 <= delta <= 50' -> "
      f"{'holds' if monotone else 'does not hold'} on these numbers (share of that region where Theorem 3 wins: "
      + ", ".join(f"{n} {v:.2f}" for n, v in ordered.iloc[:, 1].items()) + ").")
print(f"Paper: 'the K-norm mechanism (delta = 0) is worse than the staircase for the four queries' -> "
      f"{'holds' if knorm_worse else 'does not hold'} (smallest Rate at delta = 0: "
      + ", ".join(f"{n} {v:.3f}" for n, v in summary.iloc[:, 3].items()) + ").")
""")

md(r"""
### The grid LP: how far from the best density?

Neither the staircase nor Theorem 3 is known to be optimal when $V$ has a gap. The grid LP
optimises over every density that is constant on cells of width $h = \Delta/\text{grid}$ over
`window` periods, continued by a periodic tail. A density constant on cells is
$\epsilon$-DP for *every real* shift in $V$ iff its cells satisfy the LP's rows (a cell shifted
by $v$ meets cell $a+j$ with positive length iff $|v - jh| < h$), so each LP point is a
certified mechanism and its optimum an upper bound on the best density; refining the cells
or lengthening the window can only lower it. For $V_4$ the staircase is optimal
(Geng-Viswanath) and the LP approaches it from above.
""")
code(r"""
refine = []
for name, grid, window in tqdm([("V4", 10, 4), ("V4", 40, 4), ("V4", 200, 4), ("V1", 50, 4), ("V1", 1001, 4), ("V1", 1001, 12)],
                               desc="grid LP"):
    p = dpopt.NeighbouringSetNoise(neighbouring_set=V[name], epsilon=1.0, grid=grid, window=window)
    s = dpopt.solve(p, "lp")
    assert s.certificate.ok
    best_thm3 = min(dpopt.solve(dpopt.NeighbouringSetNoise(neighbouring_set=V[name], epsilon=1.0, delta=d), "compositional").objective
                    for d in deltas)
    refine.append({"V": name, "h": 1001 / grid, "window (periods)": window, "grid LP E|X|": s.objective,
                   "staircase": dpopt.solve(p, "staircase").objective, "best Theorem 3 over delta": best_thm3,
                   "LP repair weight": s.certificate.mixing_weight, "seconds": s.seconds})
refine = pd.DataFrame(refine)
refine.round(4)
""")
code(r"""
v4 = refine[refine["V"] == "V4"].reset_index(drop=True)
print("V4 at eps = 1: the grid LP " + ", ".join(f"{e:.4f} (h = {h:.2f})" for e, h in zip(v4["grid LP E|X|"], v4["h"]))
      + f" against the optimal staircase's {v4.loc[0, 'staircase']:.4f}: "
      + (f"never below it, and closing in as the cells shrink ({v4['grid LP E|X|'].iloc[-1] / v4.loc[0, 'staircase'] - 1:.1e} "
         "above it at the finest grid)." if (v4["grid LP E|X|"] >= v4["staircase"] * (1 - 1e-9)).all()
         and v4["grid LP E|X|"].is_monotonic_decreasing else "NOT as Geng-Viswanath predicts."))
""")
code(r"""
v1 = refine[refine["V"] == "V1"].reset_index(drop=True)
print(f"V1 at eps = 1: the grid LP falls from {v1.loc[0, 'grid LP E|X|']:.1f} (h = {v1.loc[0, 'h']:.0f}, 4 periods) to "
      f"{v1.loc[2, 'grid LP E|X|']:.1f} (h = 1, 12 periods); the staircase is {v1.loc[0, 'staircase']:.1f} and the best "
      f"Theorem 3 {v1.loc[0, 'best Theorem 3 over delta']:.1f}. With cells coarser than V1's unit interval the LP cannot see the "
      "gap and lands on the staircase; with unit cells and a short window its periodic tail cannot follow rings that drift by one "
      "per period, so the window matters as much as h.")
""")

md(r"""
## 3. The densities (Fig. 8)

Theorem 3 ($\delta = 10$), the staircase and the Laplace mechanism ($b = \Delta/\epsilon$) at
$\epsilon = 1$. For $V_1..V_3$ Theorem 3's density is not monotone in $|x|$: it puts mass
near multiples of 1000, where a neighbour's sum can be, as the paper observes.
""")
code(r"""
x = np.linspace(-3500, 3500, 7001)
fig, axes = plt.subplots(1, 4, figsize=(15, 3.6), sharey=True)
for ax, (name, v) in zip(axes, V.items()):
    p = dpopt.NeighbouringSetNoise(neighbouring_set=v, epsilon=1.0, delta=10)
    ax.plot(x, dpopt.solve(p, "compositional").details["noise"].pdf(x), label="Theorem 3, delta = 10")
    ax.plot(x, dpopt.solve(p, "staircase").details["noise"].pdf(x), label="staircase")
    ax.plot(x, LaplaceMechanism(sensitivity=1001.0, epsilon=1.0).pdf(x), label="Laplace")
    ax.set(yscale="log", ylim=(1e-8, 1e-1), xlabel="noise x", title=name)
axes[0].set_ylabel("density")
axes[0].legend(fontsize=8)
plt.tight_layout()
""")

md(r"""
## What differs from the paper, and why

* **Corollary 1** (Theorems 2 and 3 are $\epsilon$-DP for linear queries, not only $2\epsilon$)
  holds: the measured loss of every density above is $\epsilon$ to the last digits.
* **Definition 13 / Proposition 3.** Proposition 3 bounds when the outer interval's
  multiples overlap ($\Delta/(c-b) = 1001$ steps for $V_1$); the rings become bands when
  *every* gap has closed (1000 steps for $V_1$, 901 for $V_2$, 501 for $V_3$, tested). The
  converged ring is $\pm(a, a + \Delta]$ for $A_n = [-a, a]$, not "$a_n \pm [0, \Delta]$" as
  written. A $V$ whose largest element is an isolated point never converges and is refused.
* **Fig. 6** uses the proof's parameter $\epsilon/2$ to reproduce the paper; the measured
  calibration (default) gives each construction a larger parameter at the same
  guarantee, which is what the six-node table compares against the LP.
""")

notebook = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbf.write(notebook, Path(__file__).with_name("04_metric_space_mechanisms.ipynb"))
