"""Writes notebooks/03_closed_forms.ipynb (outputs are not committed; CI executes it)."""

from pathlib import Path

import nbformat as nbf

cells = []
md = lambda text: cells.append(nbf.v4.new_markdown_cell(text.strip()))  # noqa: E731
code = lambda text: cells.append(nbf.v4.new_code_cell(text.strip()))  # noqa: E731

md(r"""
# Closed-form mechanisms: calibration, metrics, and the price of a closed form

A practitioner with a query of known sensitivity and a budget wants a scale, a
sampler and the numbers that describe privacy and utility. This notebook walks
through the closed forms in `dpopt.mechanisms`:

1. the **generalized Gaussian** family of Liu (2019) and its calibrations;
2. three **Gaussian** calibrations side by side — classic, Liu's pDP bound (Eq. 18),
   and the analytic Gaussian of Balle & Wang (2018) — and Lemma 11's threshold,
   which the paper misprints;
3. the **privacy and utility metrics** of Liu, Wu & Zhou with their Table 2
   parameters and the monotonicity checker's verdict on each figure;
4. the **price of a closed form**: geometric, staircase and rounded Laplace noise
   against the optimum of the noise-adding LP.
""")
code(r"""
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

import dpopt
from dpopt import metrics
from dpopt.mechanisms.exponential import ExponentialMechanism
from dpopt.mechanisms.gaussian import GaussianMechanism, analytic_sigma, classic_sigma, lemma11_threshold, pdp_sigma
from dpopt.mechanisms.generalized_gaussian import GeneralizedGaussianNoise, TruncatedGeneralizedGaussianMechanism, pdp_scale_monte_carlo, threshold
from dpopt.mechanisms.laplace import LaplaceMechanism, TruncatedLaplaceMechanism
from dpopt.mechanisms.randomized_response import RandomizedResponse
from dpopt.mechanisms.staircase import StaircaseMechanism

plt.rcParams["figure.dpi"] = 90
""")

md(r"""
## 1. The generalized Gaussian family (Liu Fig. 1)

$GG(\mu, b, p)$ has density $\frac{p}{2b\Gamma(1/p)}e^{-(|x-\mu|/b)^p}$. The paper prints
$\Gamma(p-1)$ and drops the minus sign, and gives the variance as
$b^2\Gamma(3/b)/\Gamma(1/b)$; the correct variance is $b^2\Gamma(3/p)/\Gamma(1/p)$ (the
tests integrate the density to check both). Left: the same scale $b=\sqrt2$; right:
the same variance 1.
""")
code(r"""
x = np.linspace(-4, 4, 801)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6), sharey=True)
for p in (1, 2, 3, 4, 10):
    axes[0].plot(x, GeneralizedGaussianNoise(scale=np.sqrt(2), p=p).pdf(x), label=f"p = {p}")
    axes[1].plot(x, GeneralizedGaussianNoise.with_variance(1.0, p).pdf(x), label=f"p = {p}")
axes[0].set(title="same scale b = sqrt(2)", xlabel="x", ylabel="density")
axes[1].set(title="same variance 1", xlabel="x")
axes[0].legend();
""")

md(r"""
Sampling is exact: $|Z|/b = G^{1/p}$ with $G\sim\mathrm{Gamma}(1/p,1)$, drawn through the
gamma inverse CDF from uniforms (so the same sampler runs on a seeded generator or
on the OS secure source). For bounded statistics Liu truncates the density to the
bounds and proves $\epsilon$-DP with Eq. (8); the normaliser depends on the true
value, which is why Eq. (8) carries a factor 2. The measured worst-case log ratio
shows how conservative it is:
""")
code(r"""
rows = []
for p in (1, 2, 3):
    mech = TruncatedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=1.0, p=p, lower=0.0, upper=10.0)
    rows.append({"p": p, "b (Eq. 8)": mech.scale, "measured loss": mech.log_ratio_bound()})
exact = TruncatedLaplaceMechanism(sensitivity=1.0, epsilon=1.0, lower=0.0, upper=10.0)
rows.append({"p": "1, exact bounded Laplace", "b (Eq. 8)": exact.scale, "measured loss": exact.privacy_loss()})
spent = pd.DataFrame(rows)
spent["share of epsilon spent"] = spent["measured loss"] / 1.0
for row in rows[:3]:
    print(f"p = {row['p']}: Eq. (8) spends {row['measured loss']:.2f} of epsilon = 1 (measured worst-case log ratio)")
print(f"the exact bounded Laplace scale is {100 * (1 - exact.scale / rows[0]['b (Eq. 8)']):.0f}% smaller than Eq. (8)'s at p = 1")
spent
""")
md(r"""
Eq. (8) is conservative for every $p$ (the shares printed above; at $p = 2$ it spends only about
a third of the budget); at $p = 1$ it gives $b = 2\Delta/\epsilon$, and the exact bounded-domain
Laplace scale (found by root finding on the exact loss
$\Delta/b + \ln A(\text{lower}+\Delta) - \ln A(\text{lower})$) spends all of it with the smaller $b$ printed above.

Lemma 5 gives the $(\epsilon,\delta)$-pDP scale by Monte Carlo. Its printed condition
$\Pr(\sum a_k > b^p - \Delta_p^p\epsilon) < \delta$ should read
$\Pr(\sum a_k > \epsilon b^p - \Delta_p^p) < \delta$ (the log density ratio is
$b^{-p}(\sum a_k + \Delta_p^p)$). With that correction the Monte Carlo bound at $p=2$
reproduces the closed form of Lemma 10:
""")
code(r"""
for eps, delta in [(0.5, 0.05), (1.0, 0.01)]:
    mc = pdp_scale_monte_carlo(epsilon=eps, delta=delta, p=2, sensitivities=[1.0], draws=40_000, replicates=5, seed=1)
    print(f"eps={eps} delta={delta}: Monte Carlo b = {mc.scale:.4f} +- {mc.standard_error:.4f};  Lemma 10 b = {np.sqrt(2) * pdp_sigma(1.0, eps, delta):.4f}")
""")

md(r"""
## 2. Three Gaussian calibrations (Liu Fig. 3, and the analytic Gaussian)

* classic: $\sigma = \Delta\sqrt{2\ln(1.25/\delta)}/\epsilon$, only for $\epsilon<1$;
* Liu's pDP bound, Eq. (18): $\sigma = \Delta(\sqrt{z^2+2\epsilon}-z)/(2\epsilon)$, $z=\Phi^{-1}(\delta/2)$;
* analytic (Balle & Wang): the smallest $\sigma$ with
  $\Phi(\tfrac{\Delta}{2\sigma}-\tfrac{\epsilon\sigma}{\Delta}) - e^\epsilon\Phi(-\tfrac{\Delta}{2\sigma}-\tfrac{\epsilon\sigma}{\Delta}) \le \delta$,
  which is exact $(\epsilon,\delta)$-DP for every $\epsilon$.
""")
code(r"""
eps = np.linspace(0.01, 0.99, 99)
fig, axes = plt.subplots(1, 2, figsize=(11, 3.8))
for delta in (1e-6, 1e-3, 0.05, 0.1):
    ratio = [pdp_sigma(1.0, e, delta) / classic_sigma(1.0, e, delta) for e in eps]
    axes[0].plot(eps, ratio, label=f"delta = {delta:g}")
    assert max(ratio) < 1
axes[0].set(title="Liu Fig. 3: Eq. (18) / classic sigma", xlabel="epsilon", ylabel="ratio")
axes[0].legend()
eps_all = np.linspace(0.05, 3, 60)
delta = 1e-5
axes[1].plot(eps_all, [analytic_sigma(1.0, e, delta) for e in eps_all], label="analytic (Balle-Wang)")
axes[1].plot(eps_all, [pdp_sigma(1.0, e, delta) for e in eps_all], label="Liu Eq. (18), pDP")
axes[1].plot(eps[eps < 1], [classic_sigma(1.0, e, delta) for e in eps[eps < 1]], label="classic (eps < 1)")
axes[1].set(title=f"sigma for Delta = 1, delta = {delta:g}", xlabel="epsilon", ylabel="sigma", yscale="log")
axes[1].legend();
""")
md(r"""
The pDP bound is always below the classic one (ratio < 1, as Liu's Fig. 3 shows),
and the analytic calibration is smaller still: it is the exact $(\epsilon,\delta)$-DP
threshold, so it must be below any sufficient bound. Each Gaussian's exact $\delta$:
""")
code(r"""
rows = []
for calibration in ("classic", "pdp", "analytic"):
    m = GaussianMechanism(sensitivity=1.0, epsilon=0.5, delta=1e-5, calibration=calibration)
    rows.append({"calibration": calibration, "sigma": m.sigma, "E|Z|": m.expected_absolute_error(), "exact delta at eps = 0.5": m.achieved_delta()})
pd.DataFrame(rows).set_index("calibration")
""")

md(r"""
### Lemma 11: when is the pDP Gaussian wider than Laplace?

Lemma 11 states the threshold as $\delta < 2\Phi(\sqrt2)\approx0.157$, but
$2\Phi(\sqrt2)\approx1.84$ is not a probability. Its proof requires
$(\Phi^{-1}(\delta/2))^2/2 \ge 1$, i.e. $\delta \le 2\Phi(-\sqrt2) \approx 0.1573$ — the number
the paper prints is right, the formula is not. The bound holds for every $\epsilon$;
for a given $\epsilon$ the exact threshold is $\delta^*(\epsilon) = 2\Phi(-(4-\epsilon)/\sqrt8)$
(solve $(\sqrt{z^2+2\epsilon}+z)^2/8 = 1$), which is larger:
""")
code(r"""
deltas = np.linspace(0.01, 0.6, 300)
fig, ax = plt.subplots(figsize=(6.5, 3.8))
for e in (0.1, 1.0, 2.0):
    ratio = [pdp_sigma(1.0, e, d) ** 2 / LaplaceMechanism(sensitivity=1.0, epsilon=e).variance() for d in deltas]
    line, = ax.plot(deltas, ratio, label=f"epsilon = {e}")
    ax.axvline(lemma11_threshold(e), color=line.get_color(), ls=":")
ax.axhline(1, color="k", lw=0.8)
ax.axvline(lemma11_threshold(), color="k", ls="--", label="2 Phi(-sqrt 2) = 0.1573")
ax.set(xlabel="delta", ylabel="Var(Gaussian pDP) / Var(Laplace)", title="Lemma 11, checked numerically")
ax.legend()
print("epsilon-free threshold:", round(lemma11_threshold(), 6), "| per-epsilon thresholds:", {e: round(lemma11_threshold(e), 4) for e in (0.1, 1.0, 2.0)})
""")

md(r"""
### Liu Fig. 2: Lemma 5's lower bound on $b$ by Monte Carlo ($r = 3$)

Three statistics with $\Delta_{s_k,1} = 1, 0.1, 0.05$, Lemma 2's bound on $\Delta_{s,p}$, and the
corrected Lemma 5 condition above; each point is the mean of 4 replicates of 20,000 draws
(error bars: their standard error, too small to see).
""")
code(r"""
orders = range(2, 9)
fig, ax = plt.subplots(figsize=(7, 3.8))
for eps_, delta_ in [(0.5, 0.01), (0.5, 0.1), (1.0, 0.01), (1.0, 0.1)]:
    fits = [pdp_scale_monte_carlo(epsilon=eps_, delta=delta_, p=p, sensitivities=[1.0, 0.1, 0.05], draws=20_000, replicates=4, seed=7)
            for p in orders]
    ax.errorbar(list(orders), [f.scale for f in fits], yerr=[f.standard_error for f in fits], marker="o", capsize=3,
                label=f"epsilon = {eps_}, delta = {delta_}")
ax.set(xlabel="order p", ylabel="lower bound on b", title="Fig. 2: (epsilon, delta)-pDP scale of the GG mechanism, r = 3")
ax.legend(fontsize=8)
plt.tight_layout()
""")

md(r"""
### Liu Figs. 4–6: bounded and unbounded releases

**Fig. 4** — truncated Gaussian ($p = 2$) against truncated Laplace ($p = 1$), both
$\epsilon$-DP with Eq. (8)'s scale, true value $s$ at the centre of the bounds. As the paper
says, the truncated Gaussian is flatter around $s$ in all four examples.
""")
code(r"""
examples = [(1.0, 1.0, (0.0, 10.0)), (1.0, 0.5, (0.0, 10.0)), (2.0, 1.0, (0.0, 10.0)), (1.0, 1.0, (0.0, 4.0))]
fig, axes = plt.subplots(1, 4, figsize=(16, 3.4), sharey=False)
for ax, (sens, eps_, (lo, hi)) in zip(axes, examples):
    y = np.linspace(lo, hi, 401)
    centre = (lo + hi) / 2
    for p, name in ((2, "truncated Gaussian"), (1, "truncated Laplace")):
        mech = TruncatedGeneralizedGaussianMechanism(sensitivity=sens, epsilon=eps_, p=p, lower=lo, upper=hi)
        ax.plot(y, mech.pdf(y, centre), label=f"{name}, b = {mech.scale:.2f}")
    ax.set(title=f"Delta = {sens:g}, eps = {eps_:g}, [{lo:g}, {hi:g}]", xlabel="release s*", ylabel="density")
    ax.legend(fontsize=7)
plt.tight_layout()
""")
md(r"""
**Fig. 5** — unbounded noise: the Gaussian mechanism of $(\epsilon, \delta)$-pDP (Lemma 10's
$\sigma$) against the Laplace mechanism of $\epsilon$-DP, $\Delta = 1$. The paper's text names
$\delta = 0.2$ among its values; the full list is only in its figure, so we use
$\delta \in \{0.001, 0.01, 0.05, 0.1, 0.2\}$. Smaller $\delta$ or $\epsilon$ spreads the Gaussian;
only at $\delta = 0.2$ is its spread comparable to Laplace's (the variance ratio is printed).
""")
code(r"""
z = np.linspace(-8, 8, 801)
deltas = [0.001, 0.01, 0.05, 0.1, 0.2]
fig, axes = plt.subplots(1, 2, figsize=(12, 3.6), sharey=True)
for ax, eps_ in zip(axes, (0.5, 1.0)):
    lap = LaplaceMechanism(sensitivity=1.0, epsilon=eps_)
    ax.plot(z, lap.pdf(z), "k", lw=2, label="Laplace, eps-DP")
    for delta_ in deltas:
        ax.plot(z, GaussianMechanism(sensitivity=1.0, epsilon=eps_, delta=delta_, calibration="pdp").pdf(z), label=f"Gaussian pDP, delta = {delta_}")
    ax.set(title=f"Fig. 5: epsilon = {eps_}", xlabel="noise", ylabel="density")
    ax.legend(fontsize=7)
plt.tight_layout()
ratios = pd.DataFrame({eps_: {d: GaussianMechanism(sensitivity=1.0, epsilon=eps_, delta=d, calibration="pdp").variance()
                              / LaplaceMechanism(sensitivity=1.0, epsilon=eps_).variance() for d in deltas} for eps_ in (0.5, 1.0)})
ratios.index.name, ratios.columns.name = "delta", "epsilon"
print("Var(Gaussian pDP) / Var(Laplace):")
ratios.round(3)
""")
md(r"""
**Fig. 6** — the same Gaussian (pDP) and Laplace noise with noninformative thresholding to
$[0, 10]$ (post-processing, so the guarantees are unchanged), true value $s = 1$: histograms
of 100,000 seeded releases, so the point masses at the bounds show.
""")
code(r"""
rng = np.random.default_rng(2019)
fig, axes = plt.subplots(1, 2, figsize=(12, 3.6), sharey=True)
bins = np.linspace(0, 10, 51)
for ax, (eps_, delta_) in zip(axes, [(0.5, 0.1), (1.0, 0.05)]):
    gau = GaussianMechanism(sensitivity=1.0, epsilon=eps_, delta=delta_, calibration="pdp")
    lap = LaplaceMechanism(sensitivity=1.0, epsilon=eps_)
    for mech, name in ((gau, f"thresholded Gaussian pDP (delta = {delta_})"), (lap, "thresholded Laplace")):
        releases = threshold(mech.sample(1.0, 100_000, rng=rng, exact=False), 0.0, 10.0)
        ax.hist(releases, bins=bins, density=True, histtype="step", lw=1.5, label=f"{name}: {np.mean(releases == 0):.2f} at 0")
    ax.set(title=f"Fig. 6: epsilon = {eps_}", xlabel="release in [0, 10]", ylabel="density (histogram)")
    ax.legend(fontsize=7)
plt.tight_layout()
""")

md(r"""
### Thresholding with strict $\epsilon$-DP (Liu Eqs. 10–14) and the exponential-mechanism view (Lemmas 8–9)

Clamping GG noise to $[c_0, c_1]$ leaves the GG density inside and point masses at the
bounds (Eq. 10). Its worst log ratio (Eq. 11) is the larger of the interior term
$(a^p - (a-\Delta)^p)/b^p$ ($a = c_1 - c_0$) and the boundary term
$\ln F((\Delta - a)/b) - \ln F(-a/b)$ (the GG cdf is log-concave, so the tail ratio is worst
at the far end). Where the paper differs: Eq. (12) bounds $b$ where it means $b^p$, and
uses $(a+\Delta)^p - a^p$, looser than the exact $a^p - (a-\Delta)^p$; Eq. (14) repeats
Eq. (13)'s $s_k - c_{k0}$ where the upper bound needs $c_{k1} - s_k$. The tests check the
closed forms against a brute-force maximisation with numerically integrated masses.
Lemma 8's exponential mechanism ($u = -|s^* - s|^p$) is GG with $b^p = 2\Delta_u/\epsilon$;
Lemma 9 bounds $\Delta_u$ (for $p = 2$ by $2\Delta a$; exactly it is $a^p - (a-\Delta)^p$).
Below $\Delta = 1$, $[0, 10]$, $\epsilon = 1$:
""")
code(r"""
from dpopt.mechanisms.generalized_gaussian import (ThresholdedGeneralizedGaussianMechanism, exponential_scale,
                                                   lemma9_bound, utility_sensitivity)

rows = []
for p in (1, 2, 3):
    mech = ThresholdedGeneralizedGaussianMechanism(sensitivity=1.0, epsilon=1.0, p=p, lower=0.0, upper=10.0)
    rows.append({
        "p": p, "b exact (this)": mech.scale, "b paper recipe (Eq. 12-14)": mech.paper_scale(),
        "binding term": "boundary" if mech.boundary_loss(mech.scale) >= mech.interior_loss(mech.scale) - 1e-12 else "interior",
        "Delta_u exact": utility_sensitivity(p, 1.0, 10.0), "Delta_u Lemma 9": lemma9_bound(p, [1.0], [0.0], [10.0]),
        "b Lemma 8 (exact Delta_u)": exponential_scale(utility_sensitivity(p, 1.0, 10.0), 1.0, p),
        "b Lemma 8 (Lemma 9 bound)": exponential_scale(lemma9_bound(p, [1.0], [0.0], [10.0]), 1.0, p),
    })
pd.DataFrame(rows).set_index("p").round(4)
""")

md(r"""
## 3. Privacy and utility metrics (Liu, Wu & Zhou, Figs. 3–15, Table 2)

Privacy metrics — expected estimation error (Eq. 1) and entropy (Eq. 3) — must not
increase with $\epsilon$; utility metrics — $|\phi(t)|$ and $1-\mathrm{NE}$ (Eq. 4) — must not
decrease (Definition 8). Parameters from Table 2: $t=1$; Laplace $\Delta f\in\{1,2,3\}$;
Gaussian $\delta=0.1$, $\Delta_2 f\in\{1,2,3\}$ with the classic calibration the paper uses
($\epsilon<1$); exponential utilities $(2,2,2,2,2)$, $(1,3,2,3,1)$, $(1,4,3,1,1)$ (the paper
does not give $\Delta u$; we use 1); binary RR with $\pi_1\in\{0.5,0.7,0.9\}$; 4-ary RR with
the three $\pi$ of Table 2. Differential entropies are in bits.
""")
code(r"""
eps = np.linspace(0.05, 3.0, 60)
eps_lt1 = np.linspace(0.05, 0.95, 40)
utilities = {"(2,2,2,2,2)": [2, 2, 2, 2, 2], "(1,3,2,3,1)": [1, 3, 2, 3, 1], "(1,4,3,1,1)": [1, 4, 3, 1, 1]}
pis = {"uniform": [0.25] * 4, "(.1,.2,.3,.4)": [0.1, 0.2, 0.3, 0.4], "(.1,.4,.4,.1)": [0.1, 0.4, 0.4, 0.1]}

def laplace(delta):
    return lambda e: LaplaceMechanism(sensitivity=delta, epsilon=e)

def gaussian(delta):
    return lambda e: GaussianMechanism(sensitivity=delta, epsilon=e, delta=0.1, calibration="classic")

def binary_rr(pi1):
    return lambda e: RandomizedResponse(k=2, epsilon=e).output_distribution([1 - pi1, pi1])

def kary_rr(pi):
    return lambda e: RandomizedResponse(k=4, epsilon=e).output_distribution(pi)

def exponential(u):
    return lambda e: ExponentialMechanism(utility=[u], epsilon=e, sensitivity=1.0).matrix[0]

figures = {
    "Fig. 3  Laplace EEE": ({f"Δf={d}": (lambda e, m=laplace(d): m(e).expected_absolute_error()) for d in (1, 2, 3)}, "decreasing", eps),
    "Fig. 4  Laplace |φ(1)|": ({f"Δf={d}": (lambda e, m=laplace(d): float(m(e).characteristic_modulus(1.0))) for d in (1, 2, 3)}, "increasing", eps),
    "Fig. 5  Gaussian EEE": ({f"Δ2f={d}": (lambda e, m=gaussian(d): m(e).expected_absolute_error()) for d in (1, 2, 3)}, "decreasing", eps_lt1),
    "Fig. 6  Gaussian |φ(1)|": ({f"Δ2f={d}": (lambda e, m=gaussian(d): float(m(e).characteristic_modulus(1.0))) for d in (1, 2, 3)}, "increasing", eps_lt1),
    "Fig. 7  exponential entropy": ({k: (lambda e, m=exponential(u): float(metrics.entropy(m(e)))) for k, u in utilities.items()}, "decreasing", eps),
    "Fig. 8  exponential 1-NE": ({k: (lambda e, m=exponential(u): float(metrics.one_minus_normalized_entropy(m(e)))) for k, u in utilities.items()}, "increasing", eps),
    "Fig. 9  binary RR entropy": ({f"π1={p}": (lambda e, m=binary_rr(p): float(metrics.entropy(m(e)))) for p in (0.5, 0.7, 0.9)}, "decreasing", eps),
    "Fig. 10 binary RR 1-NE": ({f"π1={p}": (lambda e, m=binary_rr(p): float(metrics.one_minus_normalized_entropy(m(e)))) for p in (0.5, 0.7, 0.9)}, "increasing", eps),
    "Fig. 12 4-ary RR entropy": ({k: (lambda e, m=kary_rr(pi): float(metrics.entropy(m(e)))) for k, pi in pis.items()}, "decreasing", eps),
    "Fig. 13 4-ary RR 1-NE": ({k: (lambda e, m=kary_rr(pi): float(metrics.one_minus_normalized_entropy(m(e)))) for k, pi in pis.items()}, "increasing", eps),
    "Fig. 14 Laplace entropy": ({f"Δf={d}": (lambda e, m=laplace(d): m(e).differential_entropy()) for d in (1, 2, 3)}, "decreasing", eps),
    "Fig. 15 Gaussian entropy": ({f"Δ2f={d}": (lambda e, m=gaussian(d): m(e).differential_entropy()) for d in (1, 2, 3)}, "decreasing", eps_lt1),
}
ylabels = {"EEE": "expected estimation error", "|φ(1)|": "|φ(1)| (characteristic fn.)", "entropy": "entropy (bits)", "1-NE": "1 - normalised entropy"}
fig, axes = plt.subplots(3, 4, figsize=(15, 9.5))
verdicts = []
for ax, (title, (curves, direction, grid)) in zip(axes.flat, figures.items()):
    for label, metric in curves.items():
        report = metrics.check_monotonicity(metric, grid, direction=direction)
        ax.plot(grid, report.values.to_numpy(), label=label)
        verdicts.append({"figure": title, "curve": label, "required": direction, "monotone": report.monotone, "violations": len(report.violations)})
    ax.set_title(title, fontsize=10)
    ax.set(xlabel="epsilon", ylabel=ylabels[title.split()[-1]])
    if title.startswith("Fig. 6"):  # |phi(1)| for Delta2f = 2, 3 is ~1e-5 or less: visible only on a log scale
        ax.set(yscale="log", ylim=(1e-12, 2.0))
    ax.legend(fontsize=7)
plt.tight_layout()
verdict_table = pd.DataFrame(verdicts)
assert verdict_table["monotone"].all(), verdict_table[~verdict_table["monotone"]]
verdict_table.groupby("figure")[["monotone"]].all()
""")
md(r"""
Every curve passes the checker. **Corollary 2 is misworded in the paper**: it says the
modulus $|\phi(t)|$ of the Gaussian mechanism's characteristic function *decreases* as
$\epsilon$ increases, but its own Eq. (24), $\phi(t) = \exp(-\Delta_2 f^2 t^2 \ln(1.25/\delta)/\epsilon^2)$,
*increases* with $\epsilon$, and so do the paper's Fig. 6, its discussion after Theorem 2, and
the panel above (checked "increasing"). Two curves are flat rather than strictly monotone, as the
paper notes: with equal utilities (2,2,2,2,2) the exponential mechanism is uniform at
every $\epsilon$ (entropy $\log_2 5$, $1-\mathrm{NE}=0$), and so is randomized response with a
uniform prior. Fig. 11 — binary RR entropy as a function of $\pi_1$ at fixed $\epsilon$ — is
not a monotonicity statement in $\epsilon$; it peaks at $\pi_1 = 1/2$:
""")
code(r"""
pi1 = np.linspace(0, 1, 201)
fig, ax = plt.subplots(figsize=(6, 3.4))
for e in (0.1, 0.2, 0.3):
    ax.plot(pi1, [float(metrics.entropy(RandomizedResponse(k=2, epsilon=e).output_distribution([1 - p, p]))) for p in pi1], label=f"epsilon = {e}")
ax.set(xlabel="pi_1", ylabel="entropy (bits)", title="Fig. 11: binary RR output entropy")
ax.legend();
""")
md(r"""
A negative control: the checker is not a rubber stamp. A metric that is supposed to
increase but turns, like $\sin\epsilon$, is flagged where it turns:
""")
code(r"""
report = metrics.check_monotonicity(np.sin, np.linspace(0.1, 3.0, 30), direction="increasing")
print("monotone:", report.monotone)
report.violations.head(3)
""")

md(r"""
## 4. The price of a closed form

For an integer query with integer sensitivity $\Delta$, the optimal additive noise
under $\epsilon$-DP is a finite LP (`NoiseAdding`): a free window $[-M, M]$ whose tails
repeat its last $\Delta$ values, shrinking by $e^{-\epsilon}$ every $\Delta$ steps. The
discrete staircase (Geng & Viswanath) is feasible for that LP, and the tests prove it
optimal to $10^{-6}$ for both $E|Z|$ and $E Z^2$. The geometric mechanism is the staircase
when $\Delta = 1$; rounded Laplace noise is never optimal.
""")
code(r"""
rows = []
for delta in (1, 2, 5, 10):
    for e in (0.25, 0.5, 1.0, 2.0, 4.0):
        table = dpopt.price_of_closed_form(dpopt.NoiseAdding(sensitivity=delta, epsilon=e))
        for method, row in table.iterrows():
            rows.append({"Delta": delta, "epsilon": e, "method": method, "E|Z|": row["objective"], "LP optimum": row["optimum"], "ratio": row["ratio"]})
price = pd.DataFrame(rows)
# worst ratio to the LP optimum over the five epsilons, per sensitivity and closed form
price.pivot_table(index="Delta", columns="method", values="ratio", aggfunc="max").round(4)
""")
code(r"""
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
for method in ("geometric", "laplace_rounded", "staircase"):
    sub = price[(price["method"] == method) & (price["Delta"] == 5)]
    axes[0].plot(sub["epsilon"], sub["ratio"], marker="o", label=method)
axes[0].set(title="Delta = 5: E|Z| / LP optimum", xlabel="epsilon", ylabel="ratio", xscale="log")
axes[0].legend()
e_grid = np.linspace(0.1, 10, 80)
gain = [StaircaseMechanism(sensitivity=1.0, epsilon=e).expected_absolute_error() / LaplaceMechanism(sensitivity=1.0, epsilon=e).expected_absolute_error() for e in e_grid]
axes[1].plot(e_grid, gain)
axes[1].set(title="continuous staircase / Laplace, E|Z|", xlabel="epsilon", ylabel="ratio")
plt.tight_layout()
""")
md(r"""
For small $\epsilon$ every closed form is within a fraction of a percent of the optimum;
the gap opens as $\epsilon$ grows (the staircase's advantage over Laplace grows like
$e^{-\epsilon/2}$ for large $\epsilon$). One bit under 0/1 loss is the extreme case where the
classical closed form *is* the program: binary randomized response equals the GS LP.
""")
code(r"""
dpopt.price_of_closed_form(dpopt.CountQuery(n=1, epsilon=1.0, loss="zero_one"))[["exact", "objective", "optimum", "ratio"]]
""")
md(r"""
## Releasing a real value: what is sampled must be what was certified

Every calibration above is a statement about real numbers. A textbook sampler returns
doubles, and Mironov (CCS 2012) showed that the set of doubles $x + \text{Lap}(b)$ can
produce depends on $x$: an output that is exactly reachable from input 0 is often not
reachable from input 1. dpopt's audit (`dpopt.audit`) draws releases for two neighbouring
inputs, picks an event on half of them and bounds its probabilities on the other half
(Clopper–Pearson, 95%), so the printed number is a lower bound on the true $\epsilon$ of
the sampler. Below, the textbook float Laplace at $\epsilon = 1$ is audited with Mironov's
event ("the output is producible from input 0"), and so is the safe release dpopt uses
instead: the value rounded to a grid in exact arithmetic, plus exact discrete Laplace noise
on the grid (`mechanism = "discrete_laplace"`, CKS 2020).
""")
code(r"""
from dpopt.privacy_audit import audit_sampler, float_laplace_support, textbook_laplace

attack = float_laplace_support(1.0, 0.0)
textbook = audit_sampler(textbook_laplace(1.0), [(0.0, 1.0)], 1.0, draws=50_000, seed=1, events=[attack])
safe_solution = dpopt.solve(dpopt.Calibration(mechanism="discrete_laplace", epsilon=1.0, sensitivity=1.0, grid=0.01))
safe = dpopt.audit(safe_solution, pairs=[(0.0, 1.0)], draws=50_000, seed=1)
audits = pd.DataFrame([
    {"release": "textbook float Laplace", "certified epsilon": 1.0, "audited epsilon >=": textbook.epsilon_lower_bound,
     "event": textbook.pairs[0].event, "passed": textbook.passed},
    {"release": "grid 0.01 + exact discrete Laplace", "certified epsilon": 1.0, "audited epsilon >=": safe.epsilon_lower_bound,
     "event": safe.pairs[0].event, "passed": safe.passed},
])
audits.round(3)
""")
code(r"""
print(f"textbook sampler: epsilon >= {textbook.epsilon_lower_bound:.2f} at 95% confidence although 1.0 was certified; "
      f"the grid release's bound is {safe.epsilon_lower_bound:.2f} <= 1.0, and its expected-error bound (noise + half a grid step) "
      f"{safe_solution.objective:.3f} is within {safe_solution.objective / LaplaceMechanism(sensitivity=1.0, epsilon=1.0).expected_absolute_error() - 1:.1%} "
      "of the continuous Laplace's 1.0")
""")
md(r"""
`dpopt sample` therefore refuses the float path unless told `--float` (simulation studies),
and every finite mechanism is sampled exactly: its float64 entries are read as the
rationals they are, so even an entry of $10^{-300}$ keeps its probability.
""")

notebook = nbf.v4.new_notebook(cells=cells, metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}})
nbf.write(notebook, Path(__file__).with_name("03_closed_forms.ipynb"))
