"""Writes notebooks/01_count_queries.ipynb (outputs are not committed; CI executes it)."""

from pathlib import Path

import nbformat as nbf

cells = []
md = lambda text: cells.append(nbf.v4.new_markdown_cell(text.strip()))  # noqa: E731
code = lambda text: cells.append(nbf.v4.new_code_cell(text.strip()))  # noqa: E731

md(r"""
# Count queries: the minimax-optimal mechanism and the geometric mechanism

Gupte & Sundararajan (PODS 2010) design, for a count in $\{0,\dots,n\}$, the
$\alpha$-differentially private mechanism $x$ that minimises a consumer's worst-case
expected loss $\max_{i\in S}\sum_r l(i,r)\,x_{i,r}$ (Eq. 1) — a linear program — and
prove (Theorem 1) that deploying the **geometric mechanism** $G$ and letting each
consumer post-process its output optimally reaches the same optimum for *every*
consumer. This notebook recomputes their Table 1, checks Theorem 1 numerically,
and releases one count at several privacy levels (Algorithm 1).
""")
code(r"""
from fractions import Fraction

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import dpopt
from dpopt.losses import loss_table
from dpopt.mechanisms.geometric import derivability, geometric_matrix
from dpopt.problem_files import read_problem_file

entry = read_problem_file("../problems/gupte_sundararajan_table1.toml")
problem = entry.problem
print(entry.metadata["source"])
""")
md(r"""
## Table 1, recomputed

All three exact routes — the GS LP (`lp`), the geometric mechanism + the consumer's
optimal remap as one program (`interaction`), and the same remap found by column
generation (`factored`, what `auto` runs) — give the optimum $168/415 \approx 0.404819$.
""")
code(r"""
table = dpopt.compare_table(problem)
table[["exact", "solver", "objective", "ratio_to_optimum"]].assign(times_415=table["objective"] * 415)
""")
code(r"""
lp = dpopt.solve(problem, "lp")
route = dpopt.solve(problem, "interaction")
as_fraction = lambda v: str(Fraction(v).limit_denominator(2000))
print("(a) optimal mechanism (LP):")
display(lp.mechanism.map(as_fraction))
print("(b) G_{3,1/4}:")
display(pd.DataFrame(geometric_matrix(3, Fraction(1, 4))).map(str))
print("(c) the consumer's optimal remap T (x = G T):")
display(route.details["remap"].map(as_fraction))
""")
md(r"""
**Where the printed Table 1 differs from the true optimum.**

* Table 1(a) is a rounding: its row 0, $(2/3, 5/17, 1/25, 1/98)$, sums to $1.011$,
  not 1. The optimum's row 0 is $(272/415, 489/1660, 33/830, 17/1660)$, up to the
  non-uniqueness of LP optima.
* Table 1(b) is labelled $G_{3,1/2}$ although the example uses $\alpha = 1/4$, and
  its entries ($4/3, 1/4, \dots$) are not a stochastic matrix. It is exactly
  $\frac{1+\alpha}{1-\alpha}G_{3,\alpha}$ at $\alpha = 1/4$ — Table 2's unnormalised kernel
  ($\alpha^{|i-j|}$, end columns divided by $1-\alpha$) — as a cell below checks in exact
  arithmetic; $G_{3,1/4}$ itself is shown above.
* Table 1(c)'s remap $(9/11, 2/11)$ rounds the exact $(68/83, 15/83)$: equating
  the losses of rows 0 and 1 of $G\,T$ with $T_{0,1} = q$ gives
  $21/80 + 63q/80 = 9/20 - q/4$, so $q = 15/83$ and the loss is $168/415$. With
  $q = 2/11$ the worst-case loss would be $0.4057 > 168/415$:
""")
code(r"""
def loss_with_q(q):
    remap = np.array([[1 - q, q, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, q, 1 - q]], dtype=object)
    x = geometric_matrix(3, Fraction(1, 4)) @ remap
    return max(sum(abs(i - r) * x[i, r] for r in range(4)) for i in range(4))

print("q = 15/83:", loss_with_q(Fraction(15, 83)), " q = 2/11:", float(loss_with_q(Fraction(2, 11))))
""")
code(r"""
quarter = Fraction(1, 4)
kernel = geometric_matrix(3, quarter) * ((1 + quarter) / (1 - quarter))
display(pd.DataFrame(kernel).map(str))
printed_1b = [[Fraction(4, 3), Fraction(1, 4), Fraction(1, 16), Fraction(1, 48)], [Fraction(1, 3), 1, Fraction(1, 4), Fraction(1, 12)],
              [Fraction(1, 12), Fraction(1, 4), 1, Fraction(1, 3)], [Fraction(1, 48), Fraction(1, 16), Fraction(1, 4), Fraction(4, 3)]]
print("(1 + a)/(1 - a) G_{3,a} at a = 1/4 equals the printed Table 1(b):", kernel.tolist() == printed_1b)
""")
md(r"""
## What the optimal mechanism looks like

For $n = 20$, $\alpha = 0.5$ and absolute loss, the LP optimum and the geometric
mechanism differ mainly at the edges: the optimum folds the boundary mass back
inwards, which the consumer's remap does to $G$'s output.
""")
code(r"""
big = dpopt.CountQuery(n=20, alpha=0.5, loss="absolute")
optimum = dpopt.solve(big, "interaction")
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2))
panels = [
    (optimum.mechanism.to_numpy(), "optimal mechanism x* = G T*", "released r", "true count i"),
    (geometric_matrix(20, 0.5), "geometric mechanism G", "released r", "true count i"),
    (optimum.details["remap"].to_numpy(), "consumer's remap T*", "reported r'", "geometric output r"),
]
for ax, (matrix, title, xlabel, ylabel) in zip(axes, panels):
    image = ax.imshow(matrix, cmap="viridis")
    ax.set(title=title, xlabel=xlabel, ylabel=ylabel, xticks=range(0, 21, 5), yticks=range(0, 21, 5))
    fig.colorbar(image, ax=ax, shrink=0.8, label="probability")
plt.tight_layout()
""")
md(r"""
## The price of privacy for three consumers

The optimum's worst-case loss as $\alpha$ varies ($n = 20$), for absolute, squared and
zero-one loss, beside the plain geometric mechanism without a remap (an upper
bound). The 171 solves are one sweep (`dpopt.sweep`: a grid over loss and alpha, three
methods, one tidy table); the two exact routes agree at every point (asserted below), and
`dpopt.plot.metric_by` draws each panel from the table.
""")
code(r"""
sweep_spec = {"kind": "sweep", "methods": ["lp", "interaction", "geometric"],
              "base": {"kind": "count_query", "n": 20},
              "grid": {"loss": ["absolute", "squared", "zero_one"],
                       "alpha": [round(float(a), 2) for a in np.linspace(0.05, 0.95, 19)]}}
curves = dpopt.sweep(sweep_spec, progress=False)
assert (curves["error"] == "").all() and curves["certificate_ok"].all()
exact = curves[curves["method"] != "geometric"].pivot_table(index=["loss", "alpha"], columns="method", values="objective")
assert ((exact["lp"] - exact["interaction"]).abs() <= 1e-6 * exact["lp"]).all()
fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
for ax, loss in zip(axes, ["absolute", "squared", "zero_one"]):
    shown = curves[(curves["loss"] == loss) & (curves["method"] != "lp")].replace(
        {"method": {"interaction": "optimum (LP = G + remap)", "geometric": "geometric, no remap"}})
    dpopt.plot.metric_by(shown, "alpha", "objective", ax=ax, logy=loss == "squared", label="worst-case expected loss")
    ax.set(title=f"{loss} loss", xlabel="alpha (larger = more private)")
plt.tight_layout()
""")
md(r"""
## Derivability (Theorem 2) and Appendix B

A mechanism $M$ is derivable from $G$ iff $T = G^{-1}M$ is non-negative, i.e. every
three consecutive entries of a column satisfy $(1+\alpha^2)x_2 - \alpha(x_1+x_3) \ge 0$.
$G^{-1}$ is tridiagonal, so dpopt solves for $T$ exactly in $O(n^2)$. Appendix B's
mechanism is $\tfrac12$-private but not derivable:
""")
code(r"""
F = Fraction
appendix_b = np.array([[F(1, 9), F(2, 9), F(4, 9), F(2, 9)], [F(2, 9), F(1, 9), F(2, 9), F(4, 9)],
                       [F(4, 9), F(2, 9), F(1, 9), F(2, 9)], [F(13, 18), F(1, 9), F(1, 18), F(1, 9)]], dtype=object)
report = derivability(appendix_b, F(1, 2))
print("private:", dpopt.certify(appendix_b.astype(float), np.log(2)).ok, "| derivable:", report.derivable,
      "| most negative T entry", report.worst_entry, "=", report.worst_value)
""")
md(r"""
## One count, three privacy levels, no collusion risk (Algorithm 1)

Release $r_1 \sim G_{\alpha_1}$, then $r_{i+1} \sim T_{\alpha_i,\alpha_{i+1}}(r_i)$.
Each $r_i$ has exactly the law of $G_{\alpha_i}$ (checked in rational arithmetic), and
colluders learn no more than their least private member (Lemma 4).
""")
code(r"""
from dpopt.mechanisms.multilevel import verify_chain_exact

release = read_problem_file("../problems/multi_level_release.toml").problem
print(release, "| marginals exactly geometric:", verify_chain_exact(release.n, release.levels))
chain = dpopt.solve(release)
draws = chain.sample(5, 40_000, rng=2026)
fig, ax = plt.subplots(figsize=(8, 3.8))
values = np.arange(release.n + 1)
for level, alpha in enumerate(release.levels):
    freq = np.bincount(draws[:, level], minlength=release.n + 1) / len(draws)
    ax.bar(values + (level - 1) * 0.27, freq, width=0.27, label=f"r_{level + 1}, alpha = {alpha}")
    ax.plot(values, geometric_matrix(release.n, alpha)[5], "k.", markersize=4)
ax.set(xlabel="released value (true count 5)", ylabel="frequency", title="each level matches its geometric law (dots)")
ax.legend()
plt.tight_layout()
""")
md(r"""
**Large counts.** The dense chain needs $\alpha_1^n$ as a normal double ($n\varepsilon_1 \le 700$).
Beyond that, the remap has a closed form that needs no matrix: row $r$ of
$T = G_\alpha^{-1}G_\beta$ is $p_r e_r + (1-p_r)\,G_\beta[r]$, with
$p_r = \alpha(1-\beta)/(\beta(1-\alpha))$ at the ends and $\alpha(1-\beta)^2/(\beta(1-\alpha)^2)$
between (derived from $G$'s tridiagonal inverse; not in the paper). Each level keeps the
previous release or redraws it around itself. The check below compares the exact tridiagonal
solve with this form entry by entry, in rational arithmetic; then it releases a count
$n = 10^6$ at the same three levels.
""")
code(r"""
from dpopt.mechanisms.multilevel import level_remap, stay_probabilities

small, (a, b) = 6, (Fraction(release.levels[0]), Fraction(release.levels[1]))
end, inside = stay_probabilities(a, b)
t, g = level_remap(small, a, b), geometric_matrix(small, b)
matches = all(t[r, s] == (1 - p) * g[r, s] + (p if r == s else 0)
              for r in range(small + 1) for s in range(small + 1) for p in [end if r in (0, small) else inside])
print(f"keep-or-redraw equals G_a^-1 G_b exactly (n = {small}): {matches}; stay probability {float(end):.4f} at the ends, {float(inside):.4f} inside")
large = dpopt.MultiLevelRelease(n=10**6, alphas=list(release.levels))
big = dpopt.solve(large)
sample = big.sample(500_000, 200_000, rng=7) - 500_000
for level, alpha in enumerate(large.levels):
    print(f"n = 10^6, level {level + 1} ({big.method}): mean |r - x| = {np.abs(sample[:, level]).mean():.4f}, "
          f"geometric law's E|Z| = {2 * alpha / (1 - alpha ** 2):.4f}")
""")
md(r"""
**Lemma 4, demonstrated.** A coalition holding every level's release computes its posterior
over the true count from the joint law of the chain; in exact arithmetic it equals the
posterior of the least private member ($r_1$) alone, for every possible set of releases.
Releasing the levels *independently* instead would let the coalition learn more:
""")
code(r"""
import itertools

from dpopt.mechanisms.multilevel import coalition_posterior

levels = [Fraction(a).limit_denominator(1000) for a in release.levels]
prior = [Fraction(1)] * (release.n + 1)
outcomes = list(itertools.product(range(release.n + 1), repeat=len(levels)))
same = all(list(coalition_posterior(release.n, levels, dict(enumerate(r)), prior))
           == list(coalition_posterior(release.n, levels, {0: r[0]}, prior)) for r in outcomes)
print(f"pooled posterior == least private member's posterior for all {len(outcomes)} release tuples: {same}")
g = [geometric_matrix(release.n, a) for a in levels]
independent = np.array([np.prod([gi[d, 0] for gi in g]) for d in range(release.n + 1)], dtype=object)
print("posterior of d given r = (0, 0, 0), chain:      ", [f"{float(p):.4f}" for p in coalition_posterior(release.n, levels, {0: 0, 1: 0, 2: 0}, prior)])
print("posterior of d given r = (0, 0, 0), independent:", [f"{float(p):.4f}" for p in independent / independent.sum()])
""")

md(r"""
## Large n: the factored route

The direct LP has $(n+1)^2$ variables (about a minute at $n = 200$). Theorem 1 says the
optimum is $G\,T$ with a sparse remap $T$, which column generation finds with an
$O(n)$-row master and exact pricing; the solution is certified by a Lagrangian lower
bound and the exact loss of the returned mechanism, and only $\alpha$ and $T$ are stored.

At $\alpha = 0.5$ the geometric mechanism alone is essentially optimal for this consumer ($T$
is the identity on all but a few rows, counted below), which makes a dull picture; at $\alpha = 0.99$ ($\epsilon \approx 0.01$) the
noise is so wide that the optimal minimax mechanism moves every report toward the middle of
$0..n$: the left panel is $E[r' \mid r]$ under $T$ against the geometric output $r$, the
right panel how much of $T$'s mass lands on each report.
""")
code(r"""
large = dpopt.CountQuery(n=800, alpha=0.99, loss="absolute")
solution = dpopt.solve(large)  # auto -> factored
d = solution.details
print(f"method={solution.method}  seconds={solution.seconds:.2f}  lower={d['lower_bound']:.12f}  upper={d['upper_bound']:.12f}")
print(f"relative gap {d['relative_gap']:.1e}; T has {d['remap_nonzeros']} non-zeros for {(large.n + 1) ** 2:,} entries; certificate ok: {solution.certificate.ok}")
remap = solution.factored.remap.toarray()
moved = int((np.abs(remap - np.eye(large.n + 1)).sum(axis=1) > 1e-9).sum())
outputs = np.arange(large.n + 1)
mean_report = remap @ outputs
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
axes[0].plot(outputs, mean_report, label="E[reported r' | geometric output r]")
axes[0].plot(outputs, outputs, "k--", lw=0.8, label="identity (no remap)")
axes[0].set(xlabel="geometric output r", ylabel="reported value", title="the remap pulls reports toward the middle")
axes[0].legend()
used = remap.sum(axis=0)
axes[1].bar(outputs, used, width=1.0)
axes[1].set(xlabel="reported value r'", ylabel="total T mass sent to r'", title="which reports the optimal mechanism uses")
plt.tight_layout()
share = np.cumsum(used) / used.sum()
low, high = int(np.searchsorted(share, 0.005)), int(np.searchsorted(share, 0.995))
print(f"{moved} of {large.n + 1} geometric outputs are remapped; 99% of the reports fall in {low}..{high} of 0..{large.n}")
""")
code(r"""
half = dpopt.solve(dpopt.CountQuery(n=2000, alpha=0.5, loss="absolute"))
changed = np.flatnonzero(np.abs(half.factored.remap.toarray() - np.eye(2001)).sum(axis=1) > 1e-9)
print(f"n = 2000, alpha = 0.5: T differs from the identity on {changed.size} of 2001 rows ({changed.tolist()}): "
      f"worst loss of G alone / optimum = {dpopt.solve(half.problem, 'geometric').objective / half.objective:.9f}")
""")

md(r"""
## Side information: the drug company (GS Example 1)

A drug company knows the count is at least 8 (out of $n = 20$), so its loss is the worst
case over $S = \{8, \dots, 20\}$ only. The optimal mechanism for it is still derived from the
*same* geometric mechanism (Theorem 1): the company post-processes $G$'s output with its own
remap, and both exact routes agree. Knowing the lower bound buys it a lower worst-case loss
than a consumer without side information gets:
""")
code(r"""
company = read_problem_file("../problems/drug_company_lower_bound.toml").problem
with_side = dpopt.solve(company, "lp")
via_g = dpopt.solve(company, "interaction")
without = dpopt.solve(dpopt.CountQuery(n=company.n, alpha=company.alpha, loss=company.loss), "lp")
print(f"worst expected squared error over S: with side information {with_side.objective:.4f} (interaction with G: "
      f"{via_g.objective:.4f}); without it {without.objective:.4f} ({100 * (1 - with_side.objective / without.objective):.0f}% lower)")
fig, ax = plt.subplots(figsize=(8, 3.6))
ax.plot(without.row_loss.index, without.row_loss.values, "o-", label="optimal without side information (all counts)")
ax.plot(with_side.row_loss.index, with_side.row_loss.values, "s-", label="optimal for S = {8..20}")
ax.axvspan(-0.5, 7.5, color="0.9", label="counts the company rules out")
ax.set(xlabel="true count i", ylabel="expected squared error", title="the company's loss is the worst case over S only")
ax.legend(fontsize=8)
plt.tight_layout()
""")
md(r"""
## A loss of your own

A consumer whose loss is flat beyond some distance (here $\min(|i - r|, 5)^{1.5}$,
heavier for larger true counts) passes the table itself. The factored route handles
any monotone table exactly: its master columns are dense,
$G[i, r]\,(l(i, r') - l(i, r))$, and the same two bounds certify the result. At small
$n$ the direct LP is an independent check; the gap between the two is the LP's
tolerance.
""")
code(r"""
n = 60
distance = loss_table("absolute", n)  # |i - r|
weights = 1.0 + np.arange(n + 1)[:, None] / n
own = dpopt.CountQuery(n=n, alpha=0.8, loss=weights * np.minimum(distance, 5.0) ** 1.5)
fast, lp = dpopt.solve(own), dpopt.solve(own, "lp")
print(f"auto -> {fast.method}: {fast.objective:.10f} in {fast.seconds:.2f} s; lp: {lp.objective:.10f} in {lp.seconds:.2f} s")
fig, ax = plt.subplots(figsize=(7, 3.4))
ax.plot(fast.row_loss.index, fast.row_loss.values, label="optimal G T (factored)")
plain = dpopt.solve(own, "geometric")
ax.plot(plain.row_loss.index, plain.row_loss.values, "--", label="geometric mechanism alone")
ax.set(xlabel="true count i", ylabel="expected loss", title="the remap equalises the worst rows")
ax.legend()
plt.tight_layout()
""")

notebook = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbf.write(notebook, Path(__file__).with_name("01_count_queries.ipynb"))
