"""Exact optimal count mechanisms at scale: x = G T with T found by column generation.

Theorem 1 of Gupte & Sundararajan: the minimax optimum is reached by ``x = G T``,
``G = G_{n,alpha}`` the geometric mechanism and T the consumer's optimal
row-stochastic remap (Section 2.4.3). That LP has (n+1)^2 variables ``T[r, r']`` but
only n+1 convexity rows and |S| loss rows, and its optimal T is very sparse, so it is
solved by column generation: a restricted master over a few columns (initially a band
around the diagonal), warm-started in HiGHS, and exact pricing of *all* (n+1)^2
columns in O(n^2) (or O(n)) per round.

Master forms (all exact reformulations of the interaction LP)
-------------------------------------------------------------
Write ``G[i, r] = g_r alpha^|i-r|`` and ``t = r' - r`` for column ``(r, r')``.

* **squared loss**: ``sum_r' T[r,r'] (i - r')^2 = (i-r)^2 - 2 (i-r) delta_r + s_r`` with
  per-row moments ``delta_r = sum t T``, ``s_r = sum t^2 T``, so
  ``E_i = c_i - 2 (Q-_i - Q+_i) + U-_i + U+_i`` where the chains
  ``P-_i = sum_{r<=i} g_r alpha^(i-r) delta_r``, ``Q-_i = sum_{r<=i} g_r alpha^(i-r) (i-r) delta_r``
  (and their right-hand twins, and U for s) obey first-order recurrences
  (``Q-_i = alpha (Q-_{i-1} + P-_{i-1})``, ``Q+_i = alpha Q+_{i+1} + P+_i``, see
  :mod:`dpopt.programs.geometric_moments`). Q and U share their ratio alpha, so the
  master carries only ``V-/+ = -/+ 2 Q-/+ + U-/+``: four chains. Each column has 5 non-zeros.
  The loss rows read the chains at the counts of S only, so the chains are kept there
  alone, each step jumping a gap of S at once (:class:`_ChainForm`): (n+1) + 5|S| rows.
* **absolute loss**: for row i outside the interval between r and r', ``|i - r'|`` is
  affine in t, giving ``E_i = c_i - P-_i + P+_i`` plus a correction
  ``G[i, r] * 2 (r' - i)`` (for ``r <= i < r'``) or ``G[i, r] * 2 (i - r')`` (for
  ``r' < i < r``) on the loss rows between r and r' only. Near-diagonal columns have
  3 + |t| non-zeros.
* **zero-one loss**: ``E_i = 1 - sum_r G[i, r] T[r, i]``: 2 non-zeros per column.
* **any other monotone loss** (a user table): dense columns ``G[i, r] (l(i, r') - l(i, r))``
  (the diagonal's loss moved to the right-hand side by the convexity row).

Pricing and bounds
------------------
For loss-row multipliers ``lambda >= 0`` normalised to sum to one (taken from the
master's duals), ``C[r, r'] = g_r sum_i lambda_i alpha^|i-r| l(i, r')`` and the
Lagrangian bound ``LB = sum_r min_r' C[r, r'] <= max_i E_i(T)`` for every stochastic T:
a valid lower bound for *any* such lambda, so inexact duals cost tightness, never
validity. The upper bound is the exact worst-case loss of the returned mechanism
(T clipped and renormalised; private by construction). Column ``(r, r')`` enters when
``C[r, r'] < min over master columns of row r``. The loop stops when the bounds agree
to the tolerance.

Accuracy
--------
HiGHS's primal values and duals are only as good as its tolerances on the *scaled*
master (rows missed by up to 4e-7, bounds left ~1e-10 short). The returned T is
therefore recomputed from HiGHS's optimal basis with SuperLU (``B x_B = b``), and,
when the bounds are close (and always after the first master, which is often the
last), so are the duals (``B^T y = c_B``); see :meth:`_Master.basic_solution`.
HiGHS's dual tolerance is absolute, so an optimum below 1 is scaled up to about 1.

Start
-----
The first master starts from the basis of T = I (feasible: the geometric mechanism)
with d tight at the middle of the rows tied for the worst loss. The master is very
degenerate, and HiGHS's pivot count depends on this start and on the initial band
more than on n: measured per form, not derived (see :func:`_tight_row`,
:meth:`_Form.initial_band`).

Small epsilon: the coarse-to-fine start (issue 16)
--------------------------------------------------
At alpha >= 0.95 (n >= 400; absolute and squared loss) the first master also holds the
columns a coarser problem predicts (:func:`coarse_start`). Two facts make that work:

* for a loss convex in the output, replacing each row of T by the randomized rounding of
  its mean phi_r (mass on floor(phi_r) and ceil(phi_r)) never raises any input's expected
  loss (Jensen on the piecewise-linear interpolation of l(i, .)), so an optimal T with
  two columns per row exists and predicting phi predicts the support;
* the optimum depends on (n, alpha) mostly through n log(1/alpha): phi at (n, alpha) is
  close to k phi(r / k) at (n / k, alpha^k) (n = 1000, alpha = 0.99 from n = 200: 90% of
  rows within 0.3, except a boundary layer of a row or two at each end, handled apart).

With the optimal support given, the master at n = 1000, alpha = 0.99 (absolute) is one
0.6 s solve against 15 rounds and 7.4 s from the band; the cost of the band start is the
degenerate warm re-solves while every row of T walks from the identity to its place. The
coarse problem is solved the same way (recursively), so alpha = 0.999 goes through 0.99
to about 0.9. Measured (2 cores, one process, certified gaps <= 1e-9): absolute 0.99 n =
1000 7.4 -> 0.85 s, n = 5000 278 -> 13 s, n = 10,000 36 s; squared 0.99 n = 1000 6.8 -> 0.97
s, n = 5000 12.8 s; absolute 0.999 n = 2000 12.6 s; alpha = 0.95, n = 1000: 2.0 -> 0.7 s.
Squared loss predicts less well (its optimal phi is not unique where loss rows are slack:
the support sits up to 7 columns off the prediction at n = 2000), so it gets +-3 columns
around the prediction instead of +-1: with +-1 it needed 3-4 rounds, and at n = 10,000 each
warm primal round cost ~20,000 pivots (about 60 s; 209 s in all), with +-3 two rounds, 54 s.
At alpha = 0.9 a coarse start is not used. With k = 2..5 it gave 12.7 -> 7.4-10.6 s at
n = 5000 (absolute, erratic) and 30 -> 20-27 s at n = 10,000, but squared loss at n = 10,000
went from 176 s to 411 s (5 rounds from the prediction against 6 from the band).

Interior-point masters (no crossover)
-------------------------------------
Where the first master is likely to hold the optimal support already (a coarse start at
n (1 - alpha) >= 5, or the band at n (1 - alpha) >= 400, where the ends barely move the
optimum), it is solved by Clarabel's interior point instead of
HiGHS's (:meth:`_Master.solve_interior`). HiGHS's IPX spends most of its time in iterative
linear algebra and crossover on these chains; Clarabel factorises the banded KKT system
directly and needs no basis, because the certificate never did: the upper bound is the
exact loss of the clipped remap, the lower bound prices the duals exactly. Measured
(one process, 2 cores): absolute alpha = 0.9, n = 10,000 30 -> 4.7 s; alpha = 0.8, n =
5000: absolute 7.6 -> 1.1 s, squared 22 -> 2.3 s; alpha = 0.99, n = 10,000: absolute 44
-> 7.7 s, squared 59 -> 26 s. Its limit is accuracy, about 1e-8 relative on the duals
of the squared master at n = 10,000, alpha = 0.9 (bound gap stuck at 3e-8 for 10 rounds,
where it needs 1e-9): after INTERIOR_ROUNDS interior masters (after one where a basis can
be predicted), HiGHS takes over, from a predicted basis where one applies (:func:`extended_basis`, below: 152 -> 15 s there) and
otherwise from scratch (176 s there either way), with IPX working on the master's dual
(``ipx_dualize_strategy = 1``; in one process 144 and 147 s against 182 s, through the
benchmark 152 against 199 s; only this fallback is dualized: on the first masters at
alpha = 0.9, n = 2000 and 5000, it changed nothing beyond noise). Loosening the
fallback's feasibility tolerances to 1e-7 (1e-10 again for the warm rounds) broke a
later master: the run ended 1.7e-4 above its bound. Without a basis each further master
is solved cold, so it loses where many rounds follow (absolute, alpha = 0.9, n = 5000:
12 -> 15 s; alpha = 0.999, n = 2000: 14 -> 45 s), hence the thresholds. HiGHS's ``crossover`` from
Clarabel's point (highspy 1.16) ended in a segmentation fault; projecting Clarabel's duals
onto the complementary equations (least squares) was slower and worse.

Zero-one loss needs no master at all
------------------------------------
Only the diagonal of ``G T`` counts, so the interaction LP is a lossy flow on the path with
O(n) rows (:mod:`dpopt.programs.zero_one_flow`), solved and certified by
:func:`solve_zero_one_by_flow` (one dual simplex solve, T decomposed from the flows, the
LP's duals priced exactly as the lower bound). Column generation tailed off on this
degenerate master (alpha = 0.999: n = 1000 500 rounds, 95 s, gap 4e-6; n = 2000 > 300 s).
If the flow's certificate falls short (HiGHS's 1e-10 absolute tolerance against an
optimum near 0, e.g. S a single count), column generation starts from the flow's support.
Before it, where n is large against 1 / (1 - alpha), G itself is optimal and
:func:`identity_certificate` proves it with an explicit lambda, no LP at all (alpha = 0.99:
n = 5000 39 -> 0.35 s, n = 10,000 > 300 -> 1.2 s).

Squared loss, alpha = 0.9, n = 10,000: a basis predicted from n0 = 2000 (2026-11-25)
------------------------------------------------------------------------------------
Its optimum is 180 - 2.27e-6 (the geometric mechanism's 180 improved by 1.3e-8 relative):
rows near each end shift their output inward by up to 7, the shift decays into the middle
(mass off the diagonal 0.15 at r = 1000, 9e-3 at 2000, 6e-4 at 3000, ~1e-7 at n/2).
Its one-entry rows of T and slack loss rows come in clusters near each end and one
around n/2. Given HiGHS's final basis (``setBasis``), primal simplex needs 49 pivots
(0.55 s): all of the fallback's ~130 s goes into finding it. What is used: the ends
decouple, so the optimum at n0 = EXTEND_RANGE / (1 - alpha) = 2000 (3.7 s), its halves
moved to the two ends, its middle cluster to n/2 and two-entry rows in between, predicts
the basis (:func:`extended_basis`). That basis is nearly dual optimal (its duals'
Lagrangian bound is 5e-9 below the optimum) and primal infeasible near the ends (32
negative entries: the end clusters drift with n, 295-302 at n0, 311-318 at n), so it is
re-solved by the dual simplex: 847 pivots, 2.6 s, and that master certifies. Through the
benchmark 152 -> 15 s (gap 2e-11; the issue's goal was 20 s). A first version (same
day) left n0's middle cluster at n0/2 and its mirror: its duals had the wrong sign on four loss
rows (Lagrangian bound 6.2 below) and its primal simplex took 10,935 pivots (53 s); the middle cluster moved to n/2,
primal simplex took 273 s (it is primal infeasible), the dual simplex 2.6 s. Before the
prediction, these routes to a vertex were measured and not adopted, each of the fallback
alone or of the whole run (one process, 2 cores):

* Clarabel settings (``faer``; static regularisation 1e-9 to 1e-11; 30-50 refinement
  steps; ``max_step_fraction`` 0.999; no equilibration): AlmostSolved every time, bound gap
  2e-6 to 1e-5 after three masters (it must reach 1.8e-7); 1e-11 ends in NumericalError.
* d shifted by the identity's worst loss and the diagonal of T eliminated (so the master
  works on the 1e-6 improvement): still AlmostSolved, no better bound after three masters.
* LP iterative refinement around Clarabel (Gleixner, Steffy & Wolter 2016): residuals
  reach 1e-11 (primal) and 1e-10 (dual), but complementarity stays near 1e-7 and the
  correction LPs end in NumericalError.
* Bases built from Clarabel's point (the top two entries of each row, or the randomized
  rounding of each row's mean with #single rows - 1 slack loss rows): HiGHS accepts them
  and primal simplex ends in 10,000-15,000 pivots (41-60 s against ~130 s), but the bases
  it ends on are ill-conditioned (the remap recomputed from the last one has worst loss
  180.0000225, a 2.5e-5 gap): uncertified. Choosing more single rows made them singular.
  The minimax optimum's face is large (rows without weight are free to go slack), so the
  interior point's centre is far from every vertex: on rows with one entry at HiGHS's
  vertex, Clarabel's second entry has median 0.2, and rows tight there have slack up to 0.08.
* Exact duals from Clarabel's by the tie equations: at an optimal vertex every row of T
  with two entries a, a + 1 has the lambda-weighted kernel mean
  ``sum_i lambda_i alpha^|i-r| i / sum_i lambda_i alpha^|i-r|`` exactly at a + 1/2, a
  banded linear system in lambda. Clarabel's lambda puts that mean within 1e-4 of a
  half-integer on only 57% of HiGHS's two-entry rows (79% within 1e-2; the dual optimum is
  presumably not unique either), and the system solved on those rows gave a worse bound.
* The fallback master pruned to Clarabel's support: entries above 1e-9 keep almost all
  columns (127 -> 107 s); above 1e-5 it loses the small middle entries (the optimum needs
  entries down to 3e-8) and the run took 14 rounds and > 380 s.
* The symmetry r <-> n - r (S and the loss symmetric): the fallback master with mirrored
  columns summed and the mirrored convexity and loss rows dropped (50,006 rows, 66,945
  columns against 60,006 and 94,860) took 86 s against 119 s for the same master in
  full: 1.4x, not worth a second master form.
* Clarabel's primal point handed to HiGHS (``setSolution``; it builds a basis from it):
  34,732 primal pivots, 93 s, on a master that already held the optimal support.
* HiGHS's ``crossover`` from Clarabel's point still ends in a segmentation fault (highspy
  1.16.0); its direct-factorisation interior point (HiPO) is not built into the wheel.

Side information: the hull of S (2026-11-25)
--------------------------------------------
Where S does not reach both ends of 0..n, the problem on S's hull [a, b] has the same
optimum (:func:`hull_problem`, exact for losses monotone in ``|i - r'|``) and loses the
rows outside [a, b], whose columns are proportional (a large optimal face). The coarse
means of such a problem jump where S begins and ends, and interpolation across a jump
mispredicts the rows inside it, so those rows also get the columns extrapolated from
either side (:func:`one_sided_means`). Absolute loss, alpha = 0.99, S = the middle 80%
(in-process, ``benchmarks/count_query.py --scale --side-cut 0.1``): n = 5000 29.9 -> 2.7 s
(one round instead of seven), n = 10,000 178 -> 6.6 s; squared n = 5000 21.5 -> 7.3 s,
n = 10,000 125 -> 18.5 s. At n = 1000 the hull problem has n = 800, whose end rows the
coarse start predicted up to 3 short (S = all at n = 800 took 1.8 s and four rounds,
against 0.5 s at n = 1000): a few columns further inward on the end rows (END_ROWS) took it
from 1.9 to 0.42 s. A wider boundary layer (the first and last 0.8 k rows with +-0.4 k
columns, and the corners ``T[0, 0]``, ``T[n, n]``) did as well at n = 800 and 1200 but
slowed S = all elsewhere (absolute, alpha = 0.99, n = 2000 +16%; alpha = 0.999, n = 2000
+16%, n = 5000 144 -> 283 s), so it is not used.

S with gaps (2026-11-25, alpha = 0.99, n = 5000, in-process unless said). Clarabel's
masters need 85-200 iterations where S has gaps (31 at S = all) and stop short of its
tolerances: even on a master holding the optimal support (+-1) of S = 0..500 and
4500..5000 it ran its 200 iterations (9 s) to an objective 2e-7 off, where HiGHS's IPM +
crossover certified the same master in one round, 7 s. So where S has a gap of
INTERIOR_MAX_GAP noise scales the first master goes to HiGHS (numbers at
:attr:`_ChainForm.INTERIOR_MAX_GAP`; S = 10%..40% and 60%..90% 31.6 -> 15.5 s absolute, a
random 10% of the counts 31 -> 7 s squared, S = 0..500 and 4500..5000 absolute 97 -> 41 s).
Where the gaps are so long that the clusters of S cannot reach each other within the
tolerance, each cluster is solved alone and the remaps are joined
(:func:`solve_by_clusters`, certified by the largest of the clusters' lower bounds): alpha =
0.9, n = 5000, S = 10%..40% and 60%..90% failed before ("Unknown" from every HiGHS route: the
chains carry values down to alpha^1000 across the gap) and now takes 3.7 s. Still slow: S =
0..500 and 4500..5000 (absolute 41 s, squared > 300 s): the coupling across that gap is
real at the certificate's tolerance (the optimum is 1.1e-8 relative above the left
cluster's alone: the left inputs see the gap's rows at alpha^2000 ~ 2e-9 times distances
of ~4000), so the clusters cannot be solved apart. A start from each cluster's own
optimum (its rows over its hull, the gap's rows its end row's main column, both clusters'
columns near the gap's middle) with a HiGHS first master took that case to 17.6 s (one
round; IPX "imprecise", then 17,747 clean-up simplex pivots) but left squared loss
uncertified (gap 3.7e-8 after 100 s) and slowed S = 10%..40% and 60%..90% (31 -> 35 s, 11
rounds), so it is not used.

Bridged clusters (2026-11-25). What made that start slow was not its columns but the
freedom of the gap's rows. Priced with the clusters' own multipliers, a row deep inside
the gap maps to the nearer cluster's edge (absolute loss: the cost is linear in r' across
the gap, so the row minimum sits at an edge; squared loss: a weighted mean that leaves the
edge only within a few noise scales of the switch), and such rows carry weights down to
alpha^2000. So :func:`solve_by_clusters` now cuts S at gaps of CLUSTER_GAP_SCALES noise
scales, solves the clusters alone and joins them, and where the join does not certify
(the clusters interact) it starts the whole problem's column generation from the joined
remap with every row deep inside a gap (and deep inside a cluster, away from the gap)
holding only its joined column and the diagonal (:func:`bridge_columns`); pricing still
adds any column anywhere, and the re-solves go to HiGHS's IPM from scratch (warm primal
simplex stalled on these masters: 18 s for one round that the IPM does in 2-3 s).
The multipliers of the two clusters, mixed, already bound the optimum to 1e-11 here: the
coupling is real but every row far from the switch has an obvious best column. Measured
(alpha = 0.99, one process): S = 0..n/10 and 9n/10..n, n = 5000: absolute 40 -> 4.9 s,
squared > 300 -> 7.5 s; n = 4000 9.4 -> 4.1 s / 23 -> 2.7 s; n = 3000 3.7 -> 3.1 s / 3.1 ->
2.5 s; n = 2000 (a gap of 16 scales) lost (1.2 -> 3.6 s), hence 20 scales; S = 10%..40% and
60%..90%, n = 10,000: absolute 86 -> 29 s, squared 40 -> 42 s (holding rows deep inside the
clusters took these from 36 and 61 s). S split into a part narrower than a noise scale is
not cut (two counts at n/4, 3n/4, n = 5000: 1.0 s whole, 3.8 s bridged). Where the bridged
master falls short or fails (short noise scales: alpha = 0.6, n = 75, a gap of 53 counts,
HiGHS "Unknown"), the whole problem is solved as before; that route fails on some of
those problems as well (chains carrying alpha^gap < 1e-12), and any master's stopping
test is now checked against the exact loss of the remap it would return (it had stopped
with HiGHS's optimum below the lower bound and the remap 4.4e-8 above it).

Two counts (2026-11-25). With |S| = 2 the Lagrangian dual is one-dimensional, and the
masters were the weak route there: S = {n/4, 3n/4}, alpha = 0.99, n = 10,000 ended
uncertified (absolute: upper bound 67% above the optimum 3.06e-8; squared: 1.3e-4 apart
after 98 s), as HiGHS's tolerances and the moments' cancellation in the pricing (~1e-14
absolute) are the size of such optima. :func:`two_count_threshold` (absolute, zero-one: a
threshold remap in closed form) and :func:`two_count_bisection` (squared: bisection on the
dual) are exact in 2.6 and 1.9 s, their bounds sums of non-negative terms.

Scattered S at alpha = 0.9, n = 10,000 (2026-11-25, session 4). The even counts and a
random 10% of the counts missed the issue's 20 s (absolute 24 / 25 s, squared > 125 s).
Absolute loss: (i) the pricing sweeps were O(n^2), 1.8 s a round, up to 18 s of a run;
each row's minimum is now found at its kernel-weighted median by one vectorised
bisection on closed-form partial sums (:func:`_price_absolute`, 0.02 s, equal to the
sweeps to 1e-13); (ii) the first master also holds each row's nearest counts of S
(:func:`side_neighbours`), where the rows walked a few columns a round from the band
(random 10%: 13 -> 5 rounds; squared loss from the band only, 85 -> 63 s); (iii) the even counts go to HiGHS's IPM first
(:attr:`_AbsoluteForm.INTERIOR_MAX_GAP`). Through the benchmark, the old code run in the
same session (a day this machine ran about 2x slower): random 10% 48 -> 12 s, the even
counts 37 -> 17.5 s. Squared loss is still slow there (the even counts 185 s, the
random 10% 81 s, one process). Measured and not adopted for it: HiGHS's IPM first on the
even counts (94 s for the first master, then 100+ s a round); Clarabel first on the random
10% (5.5 s, but its masters do not certify and the fallback from scratch took 122 s);
columns from uniform multipliers on S (their row minimisers are 2 / 6 / 13 columns from
the optimal support at the median / 90th / 99th percentile; slower); the mirrored
extension of :func:`extended_basis` for the even counts (their optimum at n0 = 2000 is
179.83, at n = 10,000 180 - 2.3e-6, and the conclusion then was that the ends do not
decouple; wrong: S = all's optimum moves just as much, 179.83 to 180 - 2.3e-6, and its
prediction works. What failed was S = all's pattern between the parts; the even counts'
own pattern predicts well, see "Periodic S" below);
windows of S solved apart and joined (each input must see a single window's rows within
~30 noise scales, and the windows' optimal faces disagree where they meet: the join was
20% above the bound); Wentges smoothing of the duals for pricing (absolute, random 10%:
more rounds, 24.6 -> 32 s); each row's next counts of S as extra priced columns (more
columns, no fewer rounds).

Chains on S only (2026-11-26, session 5). The loss rows read the chains at the counts of
S alone, so :class:`_ChainForm` keeps chain variables there and jumps each gap of S in
one step (with S = all of 0..n the master is the same, bit for bit, so the ``--scale``
table does not move). S = a random 10% of n = 10,000: 51k -> 15k master rows, a warm
primal pivot 2.9 -> 1.1 ms. HiGHS's presolve already shrank the first master's chains
(its interior point: 30 -> 24 s), so the gain is in the warm rounds, which skip presolve.
Through the benchmark, old code in the same session: alpha = 0.9, squared: the random 10%
65.6 -> 37.9 s, the even counts 186.6 -> 117.7 s (one process: 79.5 s; its three Clarabel
masters, then HiGHS's dualized interior point 49 s and two warm rounds); alpha = 0.99
squared: random 10% 45.9 -> 31.5 s, S = 10%..40% and 60%..90% 75.9 -> 61.4 s. Absolute
loss keeps its chains on every count unless S is sparse (:attr:`_AbsoluteForm.CHAINS_ALWAYS_ON_S`).
Squared loss with sparse S also starts from a band of 1 (:meth:`_SquaredForm.initial_band`):
the random 10% at alpha = 0.9 then takes 28.4 s through the benchmark.
Measured and not adopted in the same session: HiGHS's IPM first for the even counts on
the smaller master (74.7 s, 22,103 clean-up pivots after crossover; 86 s in all);
Clarabel first for the random 10% (15-18 s a master with gaps in S, then 104 s for
HiGHS from scratch); primal simplex first for the random 10% (23,498 pivots, 24 s: as
slow as the interior point); a dense form with one row per count of S and entries cut
below 1e-12 (fewer rows, 66 entries a column: 120 s for the first master); HiGHS's
HiPO interior point (highspy 1.15.1 with ``highspy-extras``; 1.16's wheel lacks it) on
the random 10%'s first master: 192 iterations, 45 s against IPX's 30 s. One interior
master instead of INTERIOR_ROUNDS before HiGHS takes over: the even counts, alpha = 0.9, n =
10,000, 79.5 -> 45.9 s (the dualized fallback 49 -> 37 s on a master with fewer columns, and
no 16.7 s warm round after it), but n = 5000 16.0 -> 18.4 s and at alpha = 0.99 12.0 -> 25.0
s, so not adopted; nor the fallback without dualizing (72 s, 25,983 clean-up pivots).

Periodic S, and the prediction right after the first interior master (2026-11-26,
session 6). The even counts' optimum at n0 = 2000 has S = all's picture with period 2:
clusters of one-entry rows and slack loss rows near each end and around n0/2, and in
between a two-entry row ``{r, r + 1}`` and a one-entry row at ``r + 1`` in turn (left half;
the phase may flip, e.g. at r = 200 and 502, at no cost: the optimal face is large). So
:func:`extended_basis` now takes any S that repeats with a period p <= EXTEND_MAX_PERIOD
(:func:`side_period`) and whose phase the shifts keep (n - n0 and n/2 - n0/2 multiples of
p): n0's S is S's pattern on 0..n0, only slack loss rows mark its middle cluster (every
other row is a one-entry row), and the rows in between copy a period of n0's rows next to
it. For S = all this is the old prediction, bit for bit (checked at n = 800, 801, 1000,
both losses). And the prediction is now tried after the first interior master that
leaves a gap, not after INTERIOR_ROUNDS of them (the interior masters after the first
moved the bound by ~1e-9 and cost 3-4 s each). Measured through the benchmark, the old
code (5c10c85) in the same session, alpha = 0.9: the even counts, squared, n = 5000 18.7
-> 5.9 s, n = 10,000 112.4 -> 11.0 s (certified gap 1.2e-11; one interior master 2.7 s,
n0 = 2000 3.2 s, 966 dual simplex pivots 2.9 s); S = all, squared n = 5000 12.9 -> 11.1 s,
n = 10,000 23.8 -> 19.8 s; absolute n = 5000 7.0 -> 4.2 s, n = 10,000 4.9 -> 5.2 s (one
round: unchanged code path, noise). With one interior master, S = all's dual simplex
(1,191 pivots) stopped "optimal" on a basis whose exact remap was 1.9e-3 over on one loss
row (HiGHS's values 0.15 off SuperLU's: its updated factors had drifted); the same basis
factorised afresh needed 2 more pivots (0.7 s; primal simplex from there: 10,977 pivots,
59 s; from scratch: 80,196). So a master solved from a predicted basis has its exact remap
checked before the run stops, and one that fails is re-solved on fresh factors
(``"refactored dual"`` in :meth:`_Master.solve`). At n = 16,000 (S = all, squared) the
early prediction drifted too (1.9e-3 over), the fresh-factor dual simplex ended "Unknown"
after 151 pivots and the cold interior point that followed ran more than 9 minutes, so
beyond EARLY_EXTENSION_MAX_N = 10,000 the prediction waits for INTERIOR_ROUNDS masters as
before, or for an interior master that prices no column out (session 7: there the second
one did, and HiGHS's interior point from scratch took 499 s of the run's 494-521 s). From
the prediction, n = 16,000 now takes 116 s: the predicted dual simplex drifts as above,
its fresh-factor re-solve ends after 151 pivots on a basis with no primal or dual
infeasibility, primal objective 180 and dual objective 180.324, which HiGHS marks
"Unknown"; that basis is kept (:meth:`_Master._simplex_optimal`; the caller checks it
exactly: 7.6e-3 over), priced, and one warm primal round (2,955 pivots, 64 s) certifies.
Warm primal simplex straight after the "Unknown" stopped at once with the same status.

Bridged clusters, priced ahead (2026-11-26, session 6). S = 10%..40% and 60%..90% of n =
10,000 at alpha = 0.99 spent two interior-point masters of ~22 s on the bridged problem;
the columns the second one needed were the rows around the join mapping to weighted means
just inside either cluster (targets 2947..3000 and 5000..5052 on the hull). The clusters'
own multipliers, mixed (:func:`mixed_multipliers`: the bound is concave in the weights,
golden-section search per neighbouring pair), bound the whole problem almost as well as the
optimum does, so their row minimisers (:func:`mixed_columns`, only for rows between the
clusters whose best column the joined remap lacks) join the bridged master's first columns,
and the mixture's bound is kept as a lower bound: one master instead of two. And clusters
whose hull problems coincide (there: twice S = all on 0..2999) are solved once
(:func:`_solve_clusters`). Through the benchmark, old code in the same session, squared:
alpha = 0.99 63.9 -> 43.0 s (before the dedupe; in-process with it 39.8 s), alpha = 0.9
24.5 -> 13.0 s (in-process; no bridge there, the two clusters certify apart).

Still over the issue's 20 s: a random 10% of n = 10,000, squared, alpha = 0.9 (28 s). Its
first master is HiGHS's interior point, 94 iterations (the last 40 take the gap from 1e-5
to 1e-12, ~5 s) and 2,456 crossover pivots, ~15 s; then warm rounds of 5,184, 7,787 and a
few hundred pivots. Measured this session and not adopted: every count between a row and
its nearest counts of S (up to 3 / 8 away) in the first master: the warm rounds fell to
6.3 / 8.6 s, but the first master took 26 / 61 s (111 / 128 iterations); HiGHS's
``ipm_optimality_tolerance`` (1e-6, 1e-8) did not change IPX's iterations on this master.
Bridged masters dualized (``ipx_dualize_strategy = 1``): 29 s against 21 s. Their second
round by warm primal or dual simplex instead of the interior point: 404 s / 87 s against 23 s.
Session 7 (2026-11-26, one process, baseline 28.7 s): where the time goes. The optimal
support has 10,641 entries inside S's hull, 1,828 of them absent from the first master,
and 1,639 of those lie in 6000..9993, where the multipliers are (mass above 1e-9 from
6486 on, 99% in 8457..9686). Nearly all are a whole row (median value 1) moved 2-10
counts off the diagonal to a count near, not in, S. The warm rounds' ~13,000 pivots are
those rows walking there; the first master's multipliers are too rough to send them in
one step. Not adopted: ``NEARBY_WIDTH`` 1 or 6 (29.1 / 32.3 s: the same pivots); primal
edge weights Dantzig or steepest edge (37.4 / 66.2 s); the first master dualized (IPX 50 s),
without presolve (16 s) or unscaled (13 s against 14 s, noise); Clarabel masters first
(5.8, 9.0, 11.2 s, then the dualized fallback from scratch 212 s). Windows: S cut into
four windows of 2500 counts with 300 counts of margin, each solved alone on its hull
(21 s together), gave a window bound 1.5e-7 below the optimum (its multipliers reach
3500 counts below their peak) and, joined, a remap 17% above it: the hull's ends move
rows inward for ~1000 counts (as at S = all), so the margins would have to be wider than
the windows.

Tried and not adopted: the optimal T of n/2 mapped onto n by scaling rows and columns
alike (2r +- 2, shifted +-1 or +-3): rounds 15 -> 11 but no time saved, because
n log(1/alpha) doubles, so the mapped support is wrong wherever it matters; per-round
interior point or dual simplex instead of warm primal simplex (n = 1000, alpha = 0.99:
12-27 s and 9-21 s against 7 s).
"""

from __future__ import annotations

import dataclasses
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, ClassVar

import clarabel
import highspy
import numpy as np
from scipy import sparse

from dpopt.mechanisms.factored import FactoredMechanism, group_ranks
from dpopt.mechanisms.geometric import column_weights
from dpopt.problems.count_query import CountQuery
from dpopt.programs.basis import basic_solution
from dpopt.programs.geometric_moments import kernel_moments
from dpopt.programs.zero_one_flow import remap_from_flows, solve_flow_program
from dpopt.solvers import SOLVER_OPTIONS, new_highs
from dpopt.validation import SolverError, check_int, check_real

__all__ = ["ColumnGenerationResult", "ExtendedBasis", "extended_basis", "extension_plan", "lagrangian_costs", "side_period", "solve_by_column_generation"]

INF = highspy.kHighsInf
#: Squared loss: besides each row's best column, add the NEARBY_WIDTH next integer offsets on
#: each side of the convex cost's minimiser (n = 1000, alpha = 0.9: 8 -> 6 master rounds,
#: 3.1 -> 2.5 s; wider bands add columns faster than they save rounds).
NEARBY_WIDTH = 3
#: Master entries of dense (user table) columns at or below this are left out.
DENSE_DROP = 1e-12
#: S "has a gap" where two neighbours in S are this many noise scales 1 / (1 - alpha) apart:
#: the first chain master then goes to HiGHS (measured at :attr:`_ChainForm.INTERIOR_MAX_GAP`)
#: and every master's claimed optimum is checked against the exact loss of its remap.
INTERIOR_MAX_GAP = 0.25
#: S is "sparse" where it holds at most this fraction of the counts 0..n: absolute loss then
#: keeps its chains on S only (:attr:`_AbsoluteForm.CHAINS_ALWAYS_ON_S`) and squared loss starts
#: from a narrower band (:meth:`_SquaredForm.initial_band`).
SPARSE_S_FRACTION = 0.25


# ---------------------------------------------------------------------------
# Sparse building blocks
# ---------------------------------------------------------------------------


class _Columns:
    """A batch of ``count`` master columns, built as (column, row, value) triplets.

    Forms put whole arrays of entries at once (one numpy call per kind of entry, not
    one Python call per column); :meth:`arrays` sorts them into HiGHS's compressed
    column form.
    """

    def __init__(self, count: int) -> None:
        self.count = count
        self._parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def put(self, columns: np.ndarray, rows: np.ndarray, values: np.ndarray | float) -> None:
        """Entries ``(columns[k], rows[k]) = values[k]`` (values broadcast; zeros are left out)."""
        columns, rows, values = np.broadcast_arrays(np.asarray(columns), np.asarray(rows), np.asarray(values, dtype=float))
        keep = values != 0
        self._parts.append((columns[keep], rows[keep], values[keep]))

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(starts, rows, values)``: entries of column j are ``rows[starts[j]:starts[j+1]]``."""
        if not self._parts:
            return np.zeros(self.count, np.int32), np.zeros(0, np.int32), np.zeros(0)
        columns, rows, values = (np.concatenate(part) for part in zip(*self._parts))
        order = np.argsort(columns, kind="stable")
        counts = np.bincount(columns, minlength=self.count)
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        return starts.astype(np.int32), rows[order].astype(np.int32), values[order]


class _Form(ABC):
    """How one loss family enters the restricted master (rows, auxiliary columns, T columns)."""

    identity_losses: np.ndarray  # E_i when T is the identity (the geometric mechanism)
    #: Start with d tight at the middle of the rows tied for the worst identity loss
    #: (else the first of them); see :func:`_tight_row`.
    MIDDLE_START: ClassVar[bool] = True
    highs_options: ClassVar[dict[str, float]] = {}  # per-form HiGHS settings on top of HIGHS_OPTIONS

    def __init__(self, problem: CountQuery) -> None:
        self.problem = problem
        self.n = problem.n
        self.alpha = problem.alpha
        self.g = column_weights(self.n, self.alpha)
        self.support = np.array(problem.support)
        self.in_support = np.zeros(self.n + 1, dtype=bool)
        self.in_support[self.support] = True
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []
        self.conv = self._rows(self.n + 1, 1.0, 1.0)
        #: whether S has a gap of INTERIOR_MAX_GAP noise scales (where the chains carry tiny
        #: values across it and HiGHS's optima are checked against the exact loss)
        widest = int(np.diff(self.support).max()) if self.support.size > 1 else 0
        self.gapped = bool(widest >= INTERIOR_MAX_GAP / (1.0 - self.alpha))
        #: S's widest gap in noise scales (0 where S is all of 0..n)
        self.widest_gap = widest * (1.0 - self.alpha) if self.support.size < self.n + 1 else 0.0

    def _rows(self, count: int, lower: float, upper: float) -> np.ndarray:
        first = len(self.row_lower)
        self.row_lower.extend([lower] * count)
        self.row_upper.extend([upper] * count)
        return np.arange(first, first + count)

    def _loss_rows(self, constants: np.ndarray) -> None:
        """Loss rows ``(terms) - d <= -constants[i]`` for i in S; ``loss_at[i]`` is the row of i."""
        first = len(self.row_lower)
        self.row_lower.extend([-INF] * self.support.size)
        self.row_upper.extend(list(-constants[self.support]))
        self.loss = np.arange(first, first + self.support.size)
        self.loss_at = np.full(self.n + 1, -1)
        self.loss_at[self.support] = self.loss

    def auxiliary(self) -> _Columns:
        """Auxiliary (chain) columns; forms whose loss rows read T directly have none."""
        return _Columns(0)

    def first_strategy(self, coarse_started: bool = False) -> str:
        """How the first master is solved (see :meth:`_Master.solve`): primal simplex
        from the identity's basis, which is already optimal or close for most losses."""
        return "primal"

    def initial_band(self) -> int:
        """Half-width of the first master's band of columns ``|r' - r| <= band``."""
        return 2

    def columns(self, r: np.ndarray, rp: np.ndarray) -> _Columns:
        """The master columns of ``T[r[k], rp[k]]``: the convexity row, then :meth:`_entries`."""
        r, rp = np.asarray(r, dtype=np.int64), np.asarray(rp, dtype=np.int64)
        cols = _Columns(r.size)
        index = np.arange(r.size)
        cols.put(index, self.conv[r], 1.0)
        self._entries(cols, index, r, rp)
        return cols

    @abstractmethod
    def _entries(self, cols: _Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        """Put the entries of columns ``index`` (remap entries ``T[r, rp]``) other than convexity."""


class _ChainForm(_Form):
    """Shared chain variables: left ``sum_{r<=i} g_r alpha^(i-r) f_r`` and right twins
    ``sum_{r>i}``, kept only at the counts i of S (the only places the loss rows read
    them) where S leaves out enough of 0..n (:attr:`CHAINS_ALWAYS_ON_S`), else at every count.

    Between consecutive positions p < q the recurrence jumps the gap at once:
    ``L_q = alpha^(q-p) L_p + sum_{p<r<=q} g_r alpha^(q-r) f_r``, so row r of T feeds the
    left chain at the first position at or right of r and the right chain at the last
    one left of r, each with its kernel weight (:meth:`_feed`). Each chain adds |S|
    auxiliary columns and rows instead of n+1 (on every count the rows and entries are
    those of the step-by-step recurrence, bit for bit); ``_chain`` returns their column
    indices so that the caller can put further entries (the chain feeding another chain
    or the loss rows).
    """

    #: From this alpha on, the first master is solved by interior point + crossover:
    #: every row of T then moves away from the identity and primal simplex needs ~3.4
    #: pivots per row (n = 1000, 2000: squared 1.8 -> 1.4 s, 6.4 -> 4.4 s at alpha = 0.9,
    #: 0.83 -> 0.74 s at 0.8; absolute 1.13 -> 0.95 s); at alpha = 0.7 and below primal
    #: simplex is faster (squared, n = 1000, alpha = 0.5: 0.26 against 0.63 s).
    IPM_FROM_ALPHA: ClassVar[float] = 0.8

    #: Where the first master is likely optimal already, it (and up to INTERIOR_ROUNDS
    #: masters) is solved by Clarabel's interior point without crossover
    #: (:meth:`_Master.solve_interior`): HiGHS's interior point spends most of its time in
    #: iterative linear algebra and crossover on these chains (absolute, alpha = 0.9,
    #: n = 10,000: 27 of 30 s), while Clarabel's direct sparse LDL factorises the banded
    #: system in about a second. Without a basis, though, each further master is solved
    #: from scratch, so interior masters lose where many rounds follow (absolute, alpha =
    #: 0.9, n = 5000: 9 rounds, 12 -> 15 s; alpha = 0.999, n = 2000: 14 -> 45 s). "Likely
    #: optimal" is measured by the range in noise scales, n (1 - alpha): from
    #: INTERIOR_COARSE_RANGE with a coarse start (its prediction is good there: alpha =
    #: 0.99, n = 1000: 0.90 -> 0.53 s; n = 10,000 44 -> 8 s), from INTERIOR_BAND_RANGE
    #: from the band (the ends no longer move the optimum beyond the tolerance: alpha =
    #: 0.8, n = 5000 7.6 -> 1.1 s; alpha = 0.9, n = 10,000 30 -> 4.7 s). Since the
    #: fallback starts from a predicted basis (:func:`extended_basis`) the band's threshold
    #: is 400 (2026-11-25, one process, absolute / squared against HiGHS's IPM): range 400,
    #: alpha = 0.9, n = 4000 8.4 -> 7.0 s / 12.2 -> 9.0 s, alpha = 0.8, n = 2000 1.2 -> 0.4 s /
    #: 2.8 -> 2.4 s; range 500, alpha = 0.9, n = 5000 12.6 -> 7.6 s / 18.7 -> 8.3 s; but range
    #: 300 loses (alpha = 0.9, n = 3000: 4.8 -> 6.2 s / 7.8 -> 8.4 s; alpha = 0.94, n = 5000
    #: 15 -> 21 s / 39 -> 45 s) and range 200 too (alpha = 0.9, n = 2000: 2.7 -> 3.7 s).
    INTERIOR_COARSE_RANGE: ClassVar[float] = 5.0
    INTERIOR_BAND_RANGE: ClassVar[float] = 400.0
    #: ... but not where S has a gap of this many noise scales 1 / (1 - alpha): the rows of
    #: T inside it barely move any loss of S, and Clarabel then needs 85-200 iterations
    #: (31 at S = all) and still falls short of the certificate, so up to three interior
    #: masters are followed by HiGHS from scratch anyway. HiGHS's IPM + crossover for the
    #: first master, then warm primal simplex (alpha = 0.99, n = 5000, one process):
    #: S = 10%..40% and 60%..90% of n absolute 31.6 -> 15.5 s, squared 15.2 -> 12.4 s; a
    #: random 10% of the counts absolute 11.1 -> 6.1 s, squared 31.3 -> 7.0 s (n = 1000
    #: 1.07 -> 0.52 s); two counts absolute 2.4 -> 1.05 s, squared 8.9 -> 0.97 s; S = 0..n/10
    #: and 9n/10..n absolute 97 -> 40 s. S = the even counts (gaps of 2) keeps the interior
    #: point: there HiGHS took 2.1 -> 5.7 s (absolute) and 8.3 -> 9.4 s (squared).
    INTERIOR_MAX_GAP: ClassVar[float] = INTERIOR_MAX_GAP

    def first_strategy(self, coarse_started: bool = False) -> str:
        if self.alpha < self.IPM_FROM_ALPHA:
            return "primal"
        if self.gapped or self.widest_gap >= self.INTERIOR_MAX_GAP:
            return "ipm"
        # rounded: 8000 (1 - 0.9) is 799.99... in floating point, and the threshold was
        # missed by it (squared, n = 8000: 53 s for a first master the interior point does in 3)
        scales = round(self.n * (1.0 - self.alpha), 9)
        if scales >= (self.INTERIOR_COARSE_RANGE if coarse_started else self.INTERIOR_BAND_RANGE):
            return "interior"
        return "ipm"

    #: The chains live on the counts of S whatever S is (else only where S is sparse; see
    #: :attr:`_AbsoluteForm.CHAINS_ALWAYS_ON_S`).
    CHAINS_ALWAYS_ON_S: ClassVar[bool] = True

    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        #: whether S holds at most SPARSE_S_FRACTION of the counts 0..n
        self.sparse_s = self.support.size <= SPARSE_S_FRACTION * (self.n + 1)
        on_s = self.CHAINS_ALWAYS_ON_S or self.sparse_s
        #: the counts that carry chain variables; the steps between them, and each one's
        #: step to the next, with a virtual position one past the last
        self.positions = self.support if on_s else np.arange(self.n + 1)
        self.step = np.diff(self.positions)
        self.next_step = np.append(self.step, 1)

    def _chain_rows(self) -> tuple[np.ndarray, np.ndarray]:
        return self._rows(self.positions.size, 0.0, 0.0), self._rows(self.positions.size, 0.0, 0.0)

    def _chain(self, cols: _Columns, first: int, rows: np.ndarray, left: bool) -> np.ndarray:
        """Variables ``L_k`` (+1 in row k, -alpha^(p_(k+1) - p_k) in row k+1:
        ``L_(k+1) = alpha^step L_k + ...``) or, for ``left=False``, ``R_k`` (+1 in row k,
        -alpha^(p_k - p_(k-1)) in row k-1), one per position p_k."""
        k = np.arange(self.positions.size)
        index = first + k
        cols.put(index, rows[k], 1.0)
        decay = -(self.alpha**self.step)
        if left:
            cols.put(index[:-1], rows[1:], decay)
        else:
            cols.put(index[1:], rows[:-1], decay)
        return index

    def _loss_entries(self, cols: _Columns, index: np.ndarray, coefficient: float) -> None:
        """Chain variable k (column ``index[k]``) enters the loss row of its position, if in S."""
        in_s = self.in_support[self.positions]
        cols.put(index[in_s], self.loss_at[self.positions[in_s]], coefficient)

    def _sides(self, r: np.ndarray) -> tuple["_Feed", "_Feed"]:
        """Where rows r of T feed the left chains (the first position at or right of r)
        and the right chains (the last position left of r); rows with none feed none."""
        first = np.searchsorted(self.positions, r)
        on_left = np.flatnonzero(first < self.positions.size)
        on_right = np.flatnonzero(first > 0)
        left = _Feed(on_left, first[on_left], self.positions[first[on_left]] - r[on_left])
        right = _Feed(on_right, first[on_right] - 1, r[on_right] - self.positions[first[on_right] - 1])
        return left, right

    def _feed(self, cols: _Columns, index: np.ndarray, r: np.ndarray, feed: "_Feed", rows: np.ndarray, value: np.ndarray) -> None:
        """Columns ``index[feed.columns]`` enter chain rows ``rows[feed.position]`` with
        ``-g_r alpha^distance value`` (operands in the order of a one-step recurrence)."""
        weight = -(self.alpha**feed.distance) * self.g[r[feed.columns]]
        cols.put(index[feed.columns], rows[feed.position], weight * value)


@dataclass(frozen=True)
class _Feed:
    """Which master columns feed a chain (``columns``), at which chain variable (``position``,
    an index into the chain positions) and from how far (``distance`` >= 0)."""

    columns: np.ndarray
    position: np.ndarray
    distance: np.ndarray


class _AbsoluteForm(_ChainForm):
    #: Absolute loss leaves the interior point at narrower gaps: S = the even counts at alpha
    #: = 0.9 (gaps of 0.2 noise scales; one process, interior -> HiGHS's IPM): n = 3000 2.4 ->
    #: 2.1 s, 5000 15.1 -> 5.0 s, 10,000 20 -> 15 s, as three interior masters fell short and
    #: the fallback from scratch followed; at alpha = 0.95 (0.1 scales) the interior point
    #: certified at once (n = 10,000: 9.7 s against 26 s). Squared loss keeps 0.25: the even
    #: counts at alpha = 0.9, n = 10,000 took 94 s for HiGHS's first master alone and then
    #: 100+ s a round.
    INTERIOR_MAX_GAP: ClassVar[float] = 0.15
    #: Absolute loss keeps its two chains on S only where S is sparse: a random 10% of the
    #: counts, n = 10,000 (benchmark, old code in the same session): alpha = 0.99 19.1 ->
    #: 15.4 s, alpha = 0.9 10.0 -> 9.1 s; but S = the even counts (alpha = 0.9: 16.6 -> 19.0
    #: s) and S = 10%..40% and 60%..90% (alpha = 0.99: 58.7 -> 66.9 s, HiGHS's clean-up
    #: after crossover 142 -> 3134 pivots) lost, as presolve already shrinks the first
    #: master's chains and the rest of the master is as large.
    CHAINS_ALWAYS_ON_S: ClassVar[bool] = False

    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        self.p_left, self.p_right = self._chain_rows()
        self.identity_losses = kernel_moments(self.g, self.alpha, 1).absolute_first
        self._loss_rows(self.identity_losses)

    def initial_band(self) -> int:
        """1 below IPM_FROM_ALPHA, where the identity is (nearly) optimal and fewer
        columns mean fewer degenerate pivots (n = 1000: 0.17 -> 0.11 s at alpha = 0.1,
        0.24 -> 0.18 s at 0.5); 2 above, where band 1 costs more rounds (1.2 -> 2.1 s)."""
        return 1 if self.alpha < self.IPM_FROM_ALPHA else 2

    def auxiliary(self) -> _Columns:
        size = self.positions.size
        cols = _Columns(2 * size)
        self._loss_entries(cols, self._chain(cols, 0, self.p_left, left=True), -1.0)
        self._loss_entries(cols, self._chain(cols, size, self.p_right, left=False), 1.0)
        return cols

    def _entries(self, cols: _Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        t = rp - r
        left, right = self._sides(r)
        self._feed(cols, index, r, left, self.p_left, t[left.columns].astype(float))
        self._feed(cols, index, r, right, self.p_right, t[right.columns].astype(float))
        # the loss rows i strictly between (r <= i < r' or r' < i < r) get G[i, r] 2 |r' - i|
        length = np.where(t > 0, t, np.maximum(-t - 1, 0))
        owner = np.repeat(np.arange(r.size), length)
        offset = group_ranks(length)
        i = np.where(t[owner] > 0, r[owner], rp[owner] + 1) + offset
        inside = self.in_support[i]
        owner, i = owner[inside], i[inside]
        distance = 2.0 * np.abs(rp[owner] - i)
        cols.put(index[owner], self.loss_at[i], self.g[r[owner]] * self.alpha ** np.abs(i - r[owner]) * distance)


class _SquaredForm(_ChainForm):
    """Four chains: P-/P+ of delta_r, and V-/V+ carrying ``-/+ 2 Q + U`` (one chain per side).

    ``Q-`` and ``U-`` obey the same recurrence (ratio alpha), so only their combination
    in the loss rows, ``V-_i = -2 Q-_i + U-_i``, needs a chain:
    ``V-_i = alpha V-_(i-1) - 2 alpha P-_(i-1) + g_i s_i``; on the right
    ``V+_i = 2 Q+_i + U+_i = alpha V+_(i+1) + 2 P+_i + alpha g_(i+1) s_(i+1)``.
    Two chains fewer than Q and U apart: the master has (n+1) + 5|S| rows, not
    (n+1) + 7|S|, and every simplex iteration is cheaper.

    Across a step D = q - p between counts of S (the chains live on S only):
    ``V-_q = alpha^D V-_p - 2 D alpha^D P-_p + sum_{p<r<=q} g_r alpha^(q-r) (s_r - 2 (q-r) delta_r)``
    and ``V+_p = alpha^D V+_q + 2 D P+_p + sum_{p<r<=q} g_r alpha^(r-p) (s_r + 2 (r-q) delta_r)``
    (Q+_p = alpha^D (Q+_q + D P+_q) + ... with alpha^D P+_q = P+_p - ...; D = 1 gives the
    one-step recurrences above; past the last count a virtual next count one further).
    """

    #: The middle start made squared loss erratic (alpha = 0.5: n = 1000 0.29 -> 2.1 s,
    #: n = 2000 1.0 -> 3.0 s in one run, faster in another); the first tied row measured
    #: steadier.
    MIDDLE_START = False

    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        self.p_left, self.p_right = self._chain_rows()
        self.v_left, self.v_right = self._chain_rows()
        self.identity_losses = kernel_moments(self.g, self.alpha, 2).second
        self._loss_rows(self.identity_losses)

    def initial_band(self) -> int:
        """2, but 1 where S is sparse from IPM_FROM_ALPHA on (its nearest counts join the
        first master, :func:`side_neighbours`). A random 10% at alpha = 0.9, one process,
        band 2 -> 1: n = 1000 0.59 -> 0.51 s, 5000 9.1 -> 8.9 s, 10,000 37.5 -> 30.3 s (the
        first master, HiGHS's IPM, 20.7 -> 13.7 s); alpha = 0.8, n = 5000 6.7 -> 6.5 s; but
        alpha = 0.5, n = 5000 1.76 -> 1.91 s. Band 0 was erratic (n = 10,000 29.8 s, but n =
        1000 0.70 s and 5000 12.5 s: 16,305 pivots in one warm round)."""
        return 1 if self.sparse_s and self.alpha >= self.IPM_FROM_ALPHA else 2

    def auxiliary(self) -> _Columns:
        size = self.positions.size
        cols = _Columns(4 * size)
        p_left = self._chain(cols, 0, self.p_left, left=True)
        cols.put(p_left[:-1], self.v_left[1:], 2.0 * self.step * self.alpha**self.step)
        p_right = self._chain(cols, size, self.p_right, left=False)
        cols.put(p_right, self.v_right, -2.0 * self.next_step)
        self._loss_entries(cols, self._chain(cols, 2 * size, self.v_left, left=True), 1.0)
        self._loss_entries(cols, self._chain(cols, 3 * size, self.v_right, left=False), 1.0)
        return cols

    def _entries(self, cols: _Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        t = (rp - r).astype(float)
        left, right = self._sides(r)
        t_left, t_right = t[left.columns], t[right.columns]
        self._feed(cols, index, r, left, self.p_left, t_left)
        self._feed(cols, index, r, right, self.p_right, t_right)
        self._feed(cols, index, r, left, self.v_left, -2.0 * left.distance * t_left + t_left * t_left)
        beyond = right.distance - self.next_step[right.position]  # r - (the next count after the right one)
        self._feed(cols, index, r, right, self.v_right, 2.0 * beyond * t_right + t_right * t_right)


class _ZeroOneForm(_Form):
    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        self.identity_losses = 1.0 - self.g
        self._loss_rows(np.ones(self.n + 1))

    def _entries(self, cols: _Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        hit = self.in_support[rp]
        r, rp = r[hit], rp[hit]
        cols.put(index[hit], self.loss_at[rp], -self.g[r] * self.alpha ** np.abs(rp - r))


class _DenseForm(_Form):
    """Any monotone loss table: loss row i gets ``G[i, r] (l(i, r') - l(i, r))``.

    Subtracting the diagonal column's loss (the convexity row makes it a constant,
    ``c_i = sum_r G[i, r] l(i, r)``, moved to the right-hand side) keeps the entries
    small and zeroes them wherever the loss is flat (a capped loss far from r and r').
    Entries below :data:`DENSE_DROP` are left out of the master (HiGHS would drop them
    anyway); that perturbs the master by at most that much per entry, never the
    certificate, since the upper bound is the exact loss of the returned mechanism and
    pricing uses every entry.
    """

    #: HiGHS scaling of these dense columns (entries from 1e-12 up) breaks its
    #: tolerances: n = 300, alpha = 0.1, loss |i - r|^1.5 ran > 60 s in every simplex
    #: variant; unscaled (and with the offset) it takes 0.15 s.
    highs_options = {"simplex_scale_strategy": 0}
    #: Columns are built in blocks of about this many (column, support) pairs (4 MB per
    #: temporary array: building columns then costs less memory than pricing does).
    BLOCK_ENTRIES = 1 << 19

    def __init__(self, problem: CountQuery) -> None:
        super().__init__(problem)
        self.table = problem.loss_matrix
        identity = FactoredMechanism(n=self.n, alpha=self.alpha, remap=sparse.eye_array(self.n + 1, format="csr"))
        self.identity_losses = np.zeros(self.n + 1)
        self.identity_losses[self.support] = identity.row_losses(problem.loss_rows, self.support)
        self._loss_rows(self.identity_losses)

    def _entries(self, cols: _Columns, index: np.ndarray, r: np.ndarray, rp: np.ndarray) -> None:
        s = self.support
        block = max(1, self.BLOCK_ENTRIES // s.size)
        for first in range(0, r.size, block):
            part = slice(first, first + block)
            rb, rpb = r[part, None], rp[part, None]
            coefficients = self.g[rb] * self.alpha ** np.abs(s - rb) * (self.table[s, rpb] - self.table[s, rb])
            which, where = np.nonzero(np.abs(coefficients) > DENSE_DROP)
            cols.put(index[part][which], self.loss[where], coefficients[which, where])


def _form_for(problem: CountQuery) -> _Form:
    forms = {"absolute": _AbsoluteForm, "squared": _SquaredForm, "zero_one": _ZeroOneForm}
    return forms.get(problem.loss_name, _DenseForm)(problem)


# ---------------------------------------------------------------------------
# Pricing: C[r, r'] = g_r sum_i lambda_i alpha^|i-r| l(i, r')
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Pricing:
    """Row minima of the Lagrangian costs and the cost of every master column."""

    row_min: np.ndarray
    row_argmin: np.ndarray
    master_min: np.ndarray
    nearby: np.ndarray | None = None  # (n+1, w) further promising r' per row (squared loss)

    @property
    def lower_bound(self) -> float:
        return float(self.row_min.sum())

    @property
    def potential(self) -> float:
        """``sum_r (master_min - row_min)^+``: how far new columns could raise the bound."""
        return float(np.maximum(self.master_min - self.row_min, 0.0).sum())


#: Absolute loss is priced from the dense cost matrix up to this n (0.7 ms against 9 ms per
#: round at n = 200) and by the sweeps of :func:`_price_absolute` beyond it, which form no
#: (n+1)^2 arrays.
DENSE_PRICING_UP_TO = 700


def lagrangian_costs(problem: CountQuery, lam: np.ndarray) -> np.ndarray:
    """The dense (n+1)^2 matrix ``C = diag(g) K (lambda * L)``, ``K[r, i] = alpha^|r - i|``.

    ``K (lambda * L)`` is the geometric-kernel sum of each column of ``lambda * L``
    (:func:`~dpopt.programs.geometric_moments.kernel_moments`, two recurrences): O(n^2).
    """
    weighted = lam[:, None] * problem.loss_matrix
    costs = kernel_moments(weighted.T, problem.alpha, 0).total.T
    return column_weights(problem.n, problem.alpha)[:, None] * costs


def _price(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    name = problem.loss_name
    if name == "squared":
        return _price_squared(problem, lam, master)
    if name == "absolute" and problem.n > DENSE_PRICING_UP_TO:
        return _price_absolute(problem, lam, master)
    if name == "zero_one":
        return _price_zero_one(problem, lam, master)
    return _price_dense(problem, lam, master)


def _finish(costs_of_master: np.ndarray, master: sparse.csr_array, row_min: np.ndarray, row_argmin: np.ndarray) -> Pricing:
    values = sparse.csr_array((costs_of_master, master.indices, master.indptr), shape=master.shape)
    master_min = np.full(master.shape[0], np.inf)
    rows = np.repeat(np.arange(master.shape[0]), np.diff(master.indptr))
    np.minimum.at(master_min, rows, values.data)
    return Pricing(row_min=row_min, row_argmin=row_argmin, master_min=master_min)


def _price_squared(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    n, g = problem.n, column_weights(problem.n, problem.alpha)
    m = kernel_moments(lam, problem.alpha, 2)
    m0, m1, m2 = m.total, m.signed_first, m.second
    r = np.arange(n + 1)
    # C[r, r + t] = g_r (m2 - 2 m1 t + m0 t^2): convex in t, minimised near t = m1 / m0.
    centre = np.divide(m1, m0, out=np.zeros_like(m1), where=m0 > 0)  # m0 underflows far from lambda
    candidates = np.stack([np.floor(centre), np.ceil(centre)], axis=1)
    candidates = np.clip(candidates, -r[:, None], (n - r)[:, None])
    values = g[:, None] * (m2[:, None] - 2 * m1[:, None] * candidates + m0[:, None] * candidates**2)
    pick = np.argmin(values, axis=1)
    rows = np.repeat(r, np.diff(master.indptr))
    t = master.indices - rows
    master_costs = g[rows] * (m2[rows] - 2 * m1[rows] * t + m0[rows] * t**2)
    pricing = _finish(master_costs, master, values[r, pick], (r + candidates[r, pick]).astype(int))
    steps = np.arange(1, NEARBY_WIDTH + 1)[None, :]
    offsets = np.concatenate([candidates[:, :1] - steps, candidates, candidates[:, 1:] + steps], axis=1)
    return dataclasses.replace(pricing, nearby=np.clip(r[:, None] + offsets, 0, n).astype(int))


def _price_absolute(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    """Row minima at the kernel-weighted medians, O(n log n); any column's cost in O(1).

    For row r, ``C[r, r'] / g_r = sum_i w_i |i - r'|`` with ``w_i = lambda_i alpha^|i-r|``:
    convex and piecewise linear in r', least at a weighted median of w, the first r' with
    ``F_r(r') = sum_(i <= r') w_i >= W_r / 2``. F_r is monotone in r', so the medians of all
    rows come from one vectorised bisection, and F_r, W_r and C come in closed form from
    the one-sided kernel sums ``L_k(y) = sum_(i <= y) lambda_i alpha^(y-i) (y-i)^k`` and
    ``R_k`` (k = 0, 1; :meth:`_AbsoluteChains.costs_at`). The three integers around each median are
    evaluated, so a comparison lost to rounding near a tie cannot raise the row minimum
    (and so the lower bound) above its true value by more than rounding. The sweeps this
    replaced took O(n^2) (1.8 s a round at n = 10,000).
    """
    n, g = problem.n, column_weights(problem.n, problem.alpha)
    chains = _AbsoluteChains(lam, problem.alpha)
    r = np.arange(n + 1)
    low, high = np.zeros(n + 1, dtype=np.int64), np.full(n + 1, n, dtype=np.int64)
    half = chains.total / 2.0
    while np.any(low < high):  # the first x with F_r(x) >= W_r / 2 lies in [low, high]
        middle = (low + high) // 2
        above = chains.below_or_at(r, middle) >= half
        high = np.where(above, middle, high)
        low = np.where(above, low, middle + 1)
    candidates = np.clip(low[:, None] + np.arange(-1, 2), 0, n)
    values = g[:, None] * chains.costs_at(r[:, None], candidates)
    pick = np.argmin(values, axis=1)
    rows = np.repeat(r, np.diff(master.indptr))
    master_costs = g[rows] * chains.costs_at(rows, master.indices.astype(np.int64))
    return _finish(master_costs, master, values[r, pick], candidates[r, pick])


class _AbsoluteChains:
    """``sum_i lambda_i alpha^|i - r| |i - r'|`` and its partial sums for any (r, r') in O(1)."""

    def __init__(self, lam: np.ndarray, alpha: float) -> None:
        moments = kernel_moments(lam, alpha, 1)
        self.alpha = alpha
        # padded by a zero on each side: index y + 1 holds L(y), R(y) for y = -1 .. n + 1
        self.l0, self.l1 = np.pad(moments.forward[0], 1), np.pad(moments.forward[1], 1)
        self.r0, self.r1 = np.pad(moments.backward[0], 1), np.pad(moments.backward[1], 1)
        r = np.arange(lam.size)
        self.total = self.l0[r + 1] + alpha * self.r0[r + 2]  # W_r = sum_i lambda_i alpha^|i-r|

    def below_or_at(self, r: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``F_r(x) = sum_(i <= x) lambda_i alpha^|i-r|``."""
        a = self.alpha
        left = a ** np.maximum(r - x, 0) * self.l0[np.minimum(x, r) + 1]
        right = a * self.r0[r + 2] - a ** np.maximum(x + 1 - r, 1) * self.r0[x + 2]
        return np.where(x < r, left, self.l0[r + 1] + np.where(x > r, right, 0.0))

    def costs_at(self, r: np.ndarray, rp: np.ndarray) -> np.ndarray:
        """``sum_i lambda_i alpha^|i-r| |i - r'|`` (C[r, r'] / g_r) elementwise."""
        a, t = self.alpha, np.abs(rp - r)
        right = rp >= r  # the far side of r from r' contributes (t + distance) per unit
        near0 = np.where(right, self.r0[r + 1], self.l0[r + 1])
        near1 = np.where(right, self.r1[r + 1], self.l1[r + 1])
        far0 = np.where(right, self.l0[r], self.r0[r + 2])
        far1 = np.where(right, self.l1[r], self.r1[r + 2])
        beyond = np.where(right, self.r0[rp + 2] + self.r1[rp + 2], self.l0[rp] + self.l1[rp])
        return a * ((t + 1) * far0 + far1) + t * near0 - near1 + 2.0 * a ** (t + 1) * beyond


def _price_zero_one(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    """``C[r, r'] = g_r (sum_i lambda_i alpha^|i-r| - lambda_r' alpha^|r-r'|)`` in O(n).

    The row minimum needs ``max_r' lambda_r' alpha^|r-r'|``: the larger of a forward
    and a backward max-plus sweep (``F_r = max(lambda_r, alpha F_(r-1))``), which carry
    their argmax along. No (n+1)^2 matrix is formed.
    """
    n, alpha, g = problem.n, problem.alpha, column_weights(problem.n, problem.alpha)
    total = kernel_moments(lam, alpha, 0).total
    best, where = lam.tolist(), list(range(n + 1))  # plain lists: a scalar loop
    for order, step in ((range(1, n + 1), -1), (range(n - 1, -1, -1), 1)):  # step: the swept neighbour
        for r in order:
            candidate = alpha * best[r + step]
            if candidate > best[r]:
                best[r], where[r] = candidate, where[r + step]
    best, where = np.array(best), np.array(where)
    rows_of = np.repeat(np.arange(n + 1), np.diff(master.indptr))
    targets = master.indices
    master_costs = g[rows_of] * (total[rows_of] - lam[targets] * alpha ** np.abs(rows_of - targets))
    return _finish(master_costs, master, g * (total - best), where)


def _price_dense(problem: CountQuery, lam: np.ndarray, master: sparse.csr_array) -> Pricing:
    """Any loss (a user table; absolute loss up to DENSE_PRICING_UP_TO): the dense C."""
    n = problem.n
    costs = lagrangian_costs(problem, lam)
    argmin = np.argmin(costs, axis=1)
    rows_of = np.repeat(np.arange(n + 1), np.diff(master.indptr))
    return _finish(costs[rows_of, master.indices], master, costs[np.arange(n + 1), argmin], argmin)


# ---------------------------------------------------------------------------
# The loop
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class ColumnGenerationResult:
    """Outcome of :func:`solve_by_column_generation`.

    Attributes
    ----------
    mechanism : FactoredMechanism
        ``G T`` with T clipped and renormalised (private by construction).
    lower_bound, upper_bound : float
        Lagrangian bound and exact worst-case loss of ``mechanism``.
    rounds, columns : int
        Master solves and columns in the final master.
    master_objective : float
        The last restricted master's optimum.
    row_losses : numpy.ndarray
        Exact expected loss of each i in S.
    master_failure : str
        Empty, or HiGHS's failure on a later master; the result is then the last
        solved master's T, still private and certified by its bounds.
    route : str
        ``"column generation"``, ``"identity certificate"`` or ``"zero-one flow"``
        (:func:`solve_zero_one_by_flow`; rounds = 1 flow LP solve).
    multipliers : numpy.ndarray or None
        Column generation's multipliers on S (length n + 1, zero off S, summing to 1)
        whose Lagrangian bound is ``lower_bound``; None from the other routes.
    """

    mechanism: FactoredMechanism
    lower_bound: float
    upper_bound: float
    rounds: int
    columns: int
    master_objective: float
    row_losses: np.ndarray
    seconds: float
    history: list[dict[str, float]]
    master_failure: str = ""
    route: str = "column generation"
    multipliers: np.ndarray | None = None

    @property
    def gap(self) -> float:
        return self.upper_bound - self.lower_bound

    @property
    def relative_gap(self) -> float:
        """``gap / |upper|`` (0 when both are 0: a consumer who knows the count exactly)."""
        if self.gap <= 0:
            return 0.0
        return self.gap / abs(self.upper_bound) if self.upper_bound else float("inf")

    def within(self, relative: float, absolute: float = 1e-13) -> bool:
        """Whether ``gap <= relative * |upper| + absolute``."""
        return self.gap <= relative * abs(self.upper_bound) + absolute


#: Absolute slack in the stopping rule, so an optimum of 0 (S a single value) can stop.
ABSOLUTE_GAP = 1e-14
#: When no column prices out, a gap within this multiple of the tolerance is HiGHS's
#: accuracy, not a missing column, and the loop stops (1e-10 x 5 < the 1e-9 certified gap).
SETTLED_FACTOR = 5.0
#: The basis's exact duals (one sparse LU, 0.02-0.5 s at n = 1000) are computed only when
#: HiGHS's duals leave the bounds within this multiple of the tolerance.
EXACT_DUALS_WITHIN = 100.0

HIGHS_OPTIONS = {
    **SOLVER_OPTIONS["HIGHS"],  # the tolerances every dpopt LP uses
    "simplex_primal_edge_weight_strategy": 1,  # devex; measured the same pivots as the default
    # devex for the dual simplex too: when a warm primal re-solve ends in a dual clean-up,
    # exact steepest-edge weights cost one BTRAN per row (squared, alpha = 0.9: n = 2000
    # 15 -> 9 s).
    "simplex_dual_edge_weight_strategy": 1,
}


#: Clarabel settings for :meth:`_Master.solve_interior` (its defaults stop at 1e-8).
CLARABEL_OPTIONS = {"tol_gap_abs": 1e-12, "tol_gap_rel": 1e-12, "tol_feas": 1e-12, "tol_ktratio": 1e-10}
#: How the masters started from a predicted basis (:func:`extended_basis`) are solved.
PREDICTED = ("predicted dual", "refactored dual")
#: Up to this n the predicted basis is tried after the first interior master that leaves a
#: gap (beyond it, after INTERIOR_ROUNDS of them, as before): at n = 16,000 (S = all,
#: squared, alpha = 0.9) the early prediction's dual simplex drifted as at 10,000, but the
#: re-solve on fresh factors ended "Unknown" and the cold interior point ran > 9 minutes.
#: Since an "Unknown" basis with no infeasibility is kept, the early prediction works there
#: too (2026-11-26, one process, same session): 84.5 s against 87.6 s, the same rounds
#: after the one interior master it saves (3.3 s). Within this machine's noise: not raised.
EARLY_EXTENSION_MAX_N = 10_000
#: Interior remap values at or below this are set to 0 (an interior point leaves every
#: column slightly positive); the certificate is computed on what is kept.
INTERIOR_DROP = 1e-13
#: Interior-point masters in a row before column generation goes on with HiGHS (cold
#: interior point + crossover, then warm primal simplex): where Clarabel's accuracy stalls
#: the gap (squared, alpha = 0.9, n = 10,000: 3e-8 for 10 rounds). Where a basis can be
#: predicted (:func:`extension_plan`) HiGHS takes over after the first.
INTERIOR_ROUNDS = 3


class _Master:
    def __init__(self, form: _Form) -> None:
        self.form = form
        self.h = new_highs({**HIGHS_OPTIONS, **form.highs_options})
        self.scale_strategy = int(self.h.getOptionValue("simplex_scale_strategy")[1])
        self.dualize_strategy = int(self.h.getOptionValue("ipx_dualize_strategy")[1])
        lower, upper = np.array(form.row_lower), np.array(form.row_upper)
        empty = np.zeros(lower.size, dtype=np.int32)
        self.h.addRows(lower.size, lower, upper, 0, empty, np.zeros(0, np.int32), np.zeros(0))
        # a non-basic row sits at its finite bound (loss rows: upper; the rest: equalities)
        self.row_bound = np.where(np.isfinite(lower), lower, upper)
        self._blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]] = []  # the master's columns
        self._matrix: sparse.csc_array | None = None
        self._costs = np.zeros(0)
        aux = form.auxiliary()
        self._add(aux, lower=-INF, upper=INF, cost=0.0)
        self.auxiliary_count = self.h.getNumCol()
        d = _Columns(1)
        d.put(0, form.loss, -1.0)
        # HiGHS's dual tolerance is absolute: an optimum well below 1 is scaled up to about
        # 1, or the tolerance is too loose for the 1e-9 relative gap (a smooth table with
        # optimum 0.22 stopped 1.007e-9 short with no column pricing out). Never scaled
        # down: that loosens it (squared loss, alpha = 0.9, n = 5000, optimum 180: 32 ->
        # 100 s and a 1.04e-9 gap).
        worst = float(np.max(np.abs(form.identity_losses[form.support])))
        self.objective_scale = 1.0 / worst if 0 < worst < 1 else 1.0
        self._add(d, lower=-INF, upper=INF, cost=self.objective_scale)
        self.first_t = self.h.getNumCol()
        self.t_rows = np.zeros(0, dtype=np.int64)  # T[t_rows[k], t_cols[k]] is master column first_t + k
        self.t_cols = np.zeros(0, dtype=np.int64)
        self.known = np.zeros(0, dtype=np.int64)  # sorted keys r (n+1) + r' of master columns
        self.has_basis = False  # whether HiGHS holds an optimal basis of the last master solved

    def _add(self, cols: _Columns, *, lower: float, upper: float, cost: float) -> None:
        starts, rows, values = cols.arrays()
        count = starts.size
        if count:
            self.h.addCols(count, np.full(count, cost), np.full(count, lower), np.full(count, upper), rows.size, starts, rows, values)
            self._blocks.append((np.diff(np.append(starts, rows.size)), rows, values, cost))
            self._matrix = None

    def matrix(self) -> tuple[sparse.csc_array, np.ndarray]:
        """The master's constraint matrix and column costs, as passed to HiGHS (a copy
        kept here: ``Highs.getLp`` converts through Python lists, 0.5 ms at n = 200)."""
        if self._matrix is None:
            counts, rows, values, costs = zip(*self._blocks)
            indptr = np.concatenate([[0], np.cumsum(np.concatenate(counts))])
            shape = (self.row_bound.size, indptr.size - 1)
            self._matrix = sparse.csc_array((np.concatenate(values), np.concatenate(rows), indptr), shape=shape)
            self._costs = np.concatenate([np.full(c.size, cost) for c, cost in zip(counts, costs)])
        return self._matrix, self._costs

    def add_remap_columns(self, rows: np.ndarray, targets: np.ndarray) -> int:
        """Add the columns of ``T[rows[k], targets[k]]`` not already in the master; returns how many."""
        keys = np.asarray(rows, dtype=np.int64) * (self.form.n + 1) + np.asarray(targets, dtype=np.int64)
        # sorted by (r, r'): HiGHS's pivot path depends on the column order; against the
        # pricing order this measured faster for squared loss (n = 1000, alpha = 0.9: 1.5
        # against 1.9 s) and slower for a random table (9.7 against 8.7 s of HiGHS time)
        keys = np.unique(keys)
        keys = keys[~np.isin(keys, self.known, assume_unique=True)]
        if not keys.size:
            return 0
        self.known = np.union1d(self.known, keys)
        r, rp = np.divmod(keys, self.form.n + 1)
        self._add(self.form.columns(r, rp), lower=0.0, upper=INF, cost=0.0)
        self.t_rows = np.concatenate([self.t_rows, r])
        self.t_cols = np.concatenate([self.t_cols, rp])
        return int(keys.size)

    def _configure(self, strategy: str) -> None:
        # "unscaled ipm": after an optimal IPM + crossover on the presolved master, HiGHS's
        # clean-up of the original LP can fail with "excessive dual values" (squared loss,
        # n = 10,000, alpha = 0.99, from the coarse start); unscaled, its clean-up succeeds
        self.h.setOptionValue("simplex_scale_strategy", 0 if strategy == "unscaled ipm" else self.scale_strategy)
        # "dualized ipm": IPX on the master's dual, for the fallback after interior masters
        self.h.setOptionValue("ipx_dualize_strategy", 1 if strategy == "dualized ipm" else self.dualize_strategy)
        if strategy in ("ipm", "unscaled ipm", "dualized ipm"):
            self.h.setOptionValue("solver", "ipm")
            self.h.setOptionValue("run_crossover", "on")
        else:
            self.h.setOptionValue("solver", "simplex")
            self.h.setOptionValue("simplex_strategy", 4 if strategy == "primal" else 1)

    def start_from_identity(self) -> None:
        """Install the basis of T = I (the geometric mechanism itself), which is feasible.

        Basic: every chain variable, every diagonal T[r, r], d, and the slack of every
        loss row but the worst one (where d is tight). The chains are triangular, so
        this basis is non-singular; primal simplex then only walks to the optimum.

        Far from the ends every row of the geometric mechanism has the same loss, so
        the worst row is a tie among many (see :func:`_tight_row`).
        """
        form = self.form
        basic, lower, upper = highspy.HighsBasisStatus.kBasic, highspy.HighsBasisStatus.kLower, highspy.HighsBasisStatus.kUpper
        cols = [basic] * (self.auxiliary_count + 1)  # chains, then d
        cols += [basic if on_diagonal else lower for on_diagonal in (self.t_rows == self.t_cols).tolist()]
        rows = [lower] * len(form.row_lower)
        worst = _tight_row(form.support, form.identity_losses[form.support], middle=form.MIDDLE_START)
        for i in form.support:
            rows[int(form.loss_at[i])] = upper if i == worst else basic
        basis = highspy.HighsBasis()
        basis.col_status = cols
        basis.row_status = rows
        self.h.setBasis(basis)

    def install_basis(self, basis: "ExtendedBasis", width: int = 1) -> bool:
        """Add the columns of ``basis`` (and ``width`` neighbours on each side of each) and
        make it HiGHS's basis with every chain variable and d; False (nothing installed)
        if it does not have one basic variable per row."""
        n, form = self.form.n, self.form
        offsets = np.arange(-width, width + 1)
        rows = np.repeat(basis.rows, offsets.size)
        targets = np.repeat(basis.targets, offsets.size) + np.tile(offsets, basis.rows.size)
        inside = (targets >= 0) & (targets <= n)
        self.add_remap_columns(np.concatenate([rows[inside], basis.rows]), np.concatenate([targets[inside], basis.targets]))
        keys = self.t_rows * (n + 1) + self.t_cols
        order = np.argsort(keys)
        basic_columns = self.first_t + order[np.searchsorted(keys[order], basis.rows * (n + 1) + basis.targets)]
        if self.auxiliary_count + 1 + basic_columns.size + basis.slack_rows.size != len(form.row_lower):
            return False
        cols = np.full(self.h.getNumCol(), highspy.HighsBasisStatus.kLower)
        cols[: self.auxiliary_count + 1] = highspy.HighsBasisStatus.kBasic
        cols[basic_columns] = highspy.HighsBasisStatus.kBasic
        row_status = np.full(len(form.row_lower), highspy.HighsBasisStatus.kLower)
        row_status[form.loss] = highspy.HighsBasisStatus.kUpper
        row_status[form.loss_at[basis.slack_rows]] = highspy.HighsBasisStatus.kBasic
        installed = highspy.HighsBasis()
        installed.col_status = cols.tolist()
        installed.row_status = row_status.tolist()
        return self.h.setBasis(installed) == highspy.HighsStatus.kOk

    def solve_interior(self) -> tuple[float, np.ndarray, np.ndarray]:
        """Solve the restricted master with Clarabel's interior point: no basis, no crossover.

        The optimum is accurate to about 1e-10 relative (often "almost solved": Clarabel's
        reduced tolerances), which is enough: the caller takes the exact loss of the
        clipped remap as the upper bound and prices the duals exactly for the lower bound.
        Returns the objective, the remap values and the loss-row duals (HiGHS's signs).

        Raises
        ------
        SolverError
            If Clarabel reports neither solved nor almost solved.
        """
        matrix, costs = self.matrix()
        lower, upper = np.array(self.form.row_lower), np.array(self.form.row_upper)
        equal = np.isfinite(lower)  # convexity and chain rows; the loss rows are <= rows
        remap_count = matrix.shape[1] - self.first_t
        constraints = sparse.vstack([matrix[equal], matrix[~equal], -sparse.eye_array(matrix.shape[1], format="csc")[self.first_t :]])
        rhs = np.concatenate([lower[equal], upper[~equal], np.zeros(remap_count)])
        cones = [clarabel.ZeroConeT(int(equal.sum())), clarabel.NonnegativeConeT(int((~equal).sum()) + remap_count)]
        settings = clarabel.DefaultSettings()
        settings.verbose = False
        for name, value in CLARABEL_OPTIONS.items():
            setattr(settings, name, value)
        size = matrix.shape[1]
        solution = clarabel.DefaultSolver(sparse.csc_matrix((size, size)), costs, sparse.csc_matrix(constraints), rhs, cones, settings).solve()
        if solution.status not in (clarabel.SolverStatus.Solved, clarabel.SolverStatus.AlmostSolved):
            raise SolverError("CLARABEL", str(solution.status), "(column generation master)")
        self.has_basis = False
        x, z = np.asarray(solution.x), np.asarray(solution.z)
        equalities = int(equal.sum())
        duals = -z[equalities : equalities + int((~equal).sum())]
        values = np.where(x[self.first_t :] > INTERIOR_DROP, x[self.first_t :], 0.0)
        return float(solution.obj_val) / self.objective_scale, values, duals

    def solve(self, strategy: str = "primal", *, checked: bool = False) -> tuple[float, np.ndarray, np.ndarray]:
        """Solve the restricted master.

        ``strategy``: ``"primal"`` (primal simplex: added columns keep the basis
        primal feasible, so a re-solve costs a few pivots; HiGHS's dual simplex
        re-solve costs ~0.5 s at n = 1000 however few pivots it needs), ``"dual"``
        (``"refactored dual"``: from the current basis factorised afresh) or ``"ipm"`` (interior point + crossover, from scratch; ``"dualized ipm"``: on
        the master's dual), or ``"interior"``
        (Clarabel, :meth:`solve_interior`). On failure the others are tried from scratch.
        ``checked``: the caller verifies the basis exactly before trusting it (a master
        solved from a predicted basis), so a simplex run that HiGHS marks "Unknown" only
        for its objective check is accepted (:meth:`_simplex_optimal`).
        """
        if strategy == "interior":
            try:
                return self.solve_interior()
            except SolverError:
                strategy = "ipm"  # not seen; HiGHS from scratch
        if strategy == "refactored dual":
            # the same basis, factorised afresh: HiGHS's updated factors had drifted
            basis = self.h.getBasis()
            self.h.clearSolver()
            self.h.setBasis(basis)
            strategy = "dual"
        attempts = [(strategy, True)] + [(other, False) for other in ("ipm", "unscaled ipm", "dual") if other != strategy]
        if strategy == "primal":
            # Primal simplex occasionally stalls on this degenerate LP (tens of thousands
            # of pivots after adding a few hundred columns); the dual simplex, warm from
            # where it stopped, then finishes in far fewer.
            self.h.setOptionValue("simplex_iteration_limit", 3 * self.form.n + 2000)
            attempts.insert(1, ("dual", True))
        for attempt, warm in attempts:
            self._configure(attempt)
            if attempt != "primal":
                self.h.setOptionValue("simplex_iteration_limit", 2**31 - 1)
            if not warm:
                # cold retry: the failed run may have left its factors unusable, and a
                # fresh factorisation of the old basis can be unstable (see basic_solution)
                self.h.clearSolver()
            self.h.run()
            status = self.h.getModelStatus()
            if status == highspy.HighsModelStatus.kOptimal or (checked and warm and attempt == "dual" and self._simplex_optimal(status)):
                break
        else:
            raise SolverError("HIGHS", self.h.modelStatusToString(status), "(column generation master)")
        self.has_basis = True
        solution = self.h.getSolution()
        values = np.asarray(solution.col_value)[self.first_t :]
        duals = np.asarray(solution.row_dual)[self.form.loss]
        return float(self.h.getInfo().objective_function_value) / self.objective_scale, values, duals

    def _simplex_optimal(self, status: highspy.HighsModelStatus) -> bool:
        """Whether an "Unknown" simplex run ended on a basis with no primal or dual
        infeasibility: HiGHS then withheld "Optimal" only because its primal and dual
        objectives differ (n = 16,000, S = all, squared, alpha = 0.9: the fresh-factor dual
        simplex from the predicted basis, 151 pivots to primal objective 180 with both
        infeasibilities 0, dual objective 180.324). The basis is then re-checked exactly."""
        info = self.h.getInfo()
        return status == highspy.HighsModelStatus.kUnknown and info.num_primal_infeasibilities == 0 == info.num_dual_infeasibilities

    def basic_solution(self, refinement_steps: int = 2) -> tuple[np.ndarray, np.ndarray] | None:
        """Remap values and loss-row duals recomputed from the optimal basis by SuperLU
        (:func:`dpopt.programs.basis.basic_solution`), or None if the basis is singular.

        HiGHS's own values can miss rows by far more than its tolerances: ~1e-6 after
        hundreds of basis updates along the recurrence chains, 4e-7 for zero-one loss at
        n = 5000, alpha = 0.9, enough for a 2e-8 bound gap; its duals likewise leave the
        Lagrangian bound ~1e-10 short (absolute loss, n = 200, alpha = 0.1).
        """
        if not self.has_basis:  # the last master was solved by Clarabel
            return None
        matrix, costs = self.matrix()
        # non-basic columns sit at 0: T at its lower bound, free chains and d at zero
        exact = basic_solution(self.h, matrix, costs, self.row_bound, refinement_steps)
        if exact is None:
            return None
        x, y = exact
        return x[self.first_t :], y[self.form.loss]

    def structure(self) -> sparse.csr_array:
        """Where T has master columns, as a CSR pattern (built from the sorted keys)."""
        size = self.form.n + 1
        rows, targets = np.divmod(self.known, size)
        indptr = np.searchsorted(rows, np.arange(size + 1))
        return sparse.csr_array((np.ones(self.known.size), targets, indptr), shape=(size, size))

    def remap(self, values: np.ndarray) -> sparse.csr_array:
        n = self.form.n
        return sparse.csr_array((values, (self.t_rows, self.t_cols)), shape=(n + 1, n + 1))


#: Rows whose identity loss is within this (relative) of the worst count as tied with it:
#: far below HiGHS's feasibility tolerance, so the start stays feasible.
TIE = 1e-13


def _tight_row(support: np.ndarray, losses: np.ndarray, *, middle: bool = True) -> int:
    """The middle (or first) one of the rows of ``support`` tied for the largest loss.

    The optimal multipliers concentrate in the middle of the tied rows, and primal
    simplex from there needs far fewer degenerate pivots than from the first of them
    (absolute loss, S = all: n = 200, alpha = 0.1: 97 -> 33 pivots; n = 1000,
    alpha = 0.5: 720 -> 204).
    """
    top = float(losses.max())
    tied = support[losses >= top - TIE * max(1.0, abs(top))]
    return int(tied[tied.size // 2] if middle else tied[0])


def _multipliers(duals: np.ndarray, size: int) -> np.ndarray:
    lam = np.clip(-duals, 0.0, None)
    total = lam.sum()
    return lam / total if total > 0 else np.full(size, 1.0 / size)


# ---------------------------------------------------------------------------
# Coarse-to-fine start (small epsilon)
# ---------------------------------------------------------------------------

#: The coarse start is used from this alpha on (below it the band start needs few rounds).
COARSE_FROM_ALPHA = 0.95
#: ... and from this n on (smaller problems take well under a second either way).
COARSE_FROM_N = 400
#: The coarse problem has n / k rows with k <= COARSE_MAX_FACTOR, chosen so that alpha^k
#: is about COARSE_TARGET_ALPHA (where the band start is fast) ...
COARSE_MAX_FACTOR = 10
COARSE_TARGET_ALPHA = 0.9
#: ... and at least COARSE_MIN_ROWS rows (the continuum picture needs some resolution).
COARSE_MIN_ROWS = 100
#: Columns floor(phi) - w .. floor(phi) + 1 + w per row, w by loss: squared loss predicts its
#: support less well (see the module docstring); w = 3 there took n = 10,000, alpha = 0.99
#: from 4 rounds and 209 s to 2 rounds and 54 s (n = 1000: 1.24 -> 0.97 s).
PREDICTED_WIDTH = {"absolute": 1, "squared": 3}
#: Coarse intervals whose step differs from a neighbour's by more than this many coarse
#: counts are jumps (:func:`one_sided_means`; absolute loss, alpha = 0.99, S = the middle
#: 80%: n = 5000 29 -> 3.3 s, one round instead of seven).
JUMP_STEP = 1.0
#: Absolute loss: the first and last END_ROWS rows also get END_EXTRA columns further
#: inward. There the prediction is extrapolated from coarse rows 1 and 2 and falls short
#: by up to 3 (alpha = 0.99, n = 800 and 1200: row 1 predicted 65.1 and 71.3, optimal 67.8
#: and 74.0; row 8 still 1 short), which cost 4-5 rounds: n = 800 1.84 -> 0.40 s, n = 1200
#: 3.6 -> 0.65 s, one round each (n = 1000: 0.48 -> 0.51 s). Squared loss, with +-3
#: columns already, gains nothing from it (n = 1200: 1.51 -> 1.54 s).
END_ROWS = 6
END_EXTRA = 2
END_LOSSES = ("absolute",)


#: The mirrored-extension start (:func:`extended_basis`) solves a smaller problem with
#: about EXTEND_RANGE / (1 - alpha) counts (n0 (1 - alpha) = 200: alpha = 0.9 from n0 = 2000;
#: n0 = 1000 measured the same with the first, primal-simplex version, 48.6 against 53.3 s) ...
EXTEND_RANGE = 200.0
#: ... only where n is at least this multiple of n0 (the ends must be apart for their
#: structure to carry over).
EXTEND_MIN_RATIO = 2
#: ... and where S repeats with a period of at most this many counts (1: S = all; 2: the
#: even counts).
EXTEND_MAX_PERIOD = 4


@dataclass(frozen=True)
class ExtendedBasis:
    """A predicted optimal basis of the master at n: basic remap entries and slack loss rows."""

    rows: np.ndarray
    targets: np.ndarray
    slack_rows: np.ndarray


def side_period(problem: CountQuery, longest: int = EXTEND_MAX_PERIOD) -> int | None:
    """The least p <= ``longest`` with S = {i in 0..n : i mod p in S's residues} (1 for S = all)."""
    inside = np.zeros(problem.n + 1, dtype=bool)
    inside[list(problem.support)] = True
    for p in range(1, min(longest, problem.n) + 1):
        if np.array_equal(inside, np.resize(inside[:p], problem.n + 1)):
            return p
    return None


def extension_plan(problem: CountQuery) -> tuple[int, int] | None:
    """S's period and n0 / 2 where :func:`extended_basis` applies (before any solve), else None."""
    period = side_period(problem)
    if problem.loss_name not in ("absolute", "squared") or period is None:
        return None
    half0 = int(round(EXTEND_RANGE / (1.0 - problem.alpha) / 2))
    n0, middle = 2 * half0, problem.n // 2
    if half0 < 1 or problem.n < EXTEND_MIN_RATIO * n0 or (problem.n - n0) % period or (middle - half0) % period:
        return None
    return period, half0


def extended_basis(problem: CountQuery, *, tolerance: float = 1e-10) -> ExtendedBasis | None:
    """Predict the optimal basis at n from the certified optimum of a smaller problem.

    Where n (1 - alpha) is large the two ends of the path decouple. The optimal T (squared
    loss, alpha = 0.9) shifts outputs inward by up to 7 counts near each end, and the shift
    decays into the middle, where T is the identity up to tiny entries on ``{r, r + 1}``
    (left half) or ``{r - 1, r}`` (right half). Its one-entry rows and slack loss rows come
    in clusters: near each end (at 0-16, 21-24, 34-38, 53-58, 82-92, 140-153, 311-318 at
    n = 10,000, the last at 295-302 at n = 2000) and one around the middle row n/2. So
    the basis of the optimum at n0 = EXTEND_RANGE / (1 - alpha) predicts the basis at n:
    its left part stays, its right part moves by n - n0, its middle cluster (the run of
    one-entry and slack rows around n0/2, see :func:`_middle_cluster`) moves to n/2, and
    the rows in between repeat the pattern of the rows next to the middle cluster. Basic
    are the remap entries it names, every chain variable and d, and the slack loss rows
    moved likewise.

    S may be any periodic set (:func:`side_period`: the even counts have period 2), if
    the shifts keep its phase: then n0's S is S's pattern on 0..n0, and the rows between
    repeat a whole period. For the even counts the pattern is a two-entry row ``{r, r +
    1}`` and a one-entry row at ``r + 1`` in turn (left half), and only the slack loss
    rows (every other row is a one-entry row) mark the middle cluster.

    That basis is dual feasible or nearly so (its duals' Lagrangian bound is within 5e-9
    of the optimum at n = 10,000) and primal infeasible in a few rows near the ends (the
    end clusters drift with n), so the caller re-solves it with the dual simplex: 847
    pivots, 2.6 s (squared loss, alpha = 0.9, n = 10,000), where the fallback from scratch
    spends ~130 s. The prediction is only a start: the result is certified as always.

    Returns None where it does not apply (another loss, S not periodic or out of phase
    with the shifts, n below EXTEND_MIN_RATIO n0, or n0's optimum not certified or its
    middle cluster too wide to move).
    """
    plan = extension_plan(problem)
    if plan is None:
        return None
    period, half0 = plan
    n, alpha = problem.n, problem.alpha
    n0, middle = 2 * half0, n // 2
    residues = [i for i in range(period) if i in problem.support]
    side = None if period == 1 else [i for i in range(n0 + 1) if i % period in residues]
    smaller_problem = CountQuery(n=n0, alpha=alpha, loss=problem.loss_name, side_information=side)
    smaller = solve_by_column_generation(smaller_problem, tolerance=tolerance)
    if not smaller.within(tolerance):
        return None
    remap = smaller.mechanism.remap.tocoo()
    positive = remap.data > 0
    rows0, targets0 = remap.row[positive].astype(np.int64), remap.col[positive].astype(np.int64)
    losses = smaller.row_losses
    slack0 = np.array(smaller_problem.support)[losses.max() - losses > tolerance * losses.max()]
    singles0 = np.flatnonzero(np.bincount(rows0, minlength=n0 + 1) == 1)
    special = np.union1d(singles0, slack0) if period == 1 else slack0
    width = _middle_cluster(special, half0, gap=4 * period)
    if 2 * width >= half0:  # no two-entry rows between the end and the middle
        return None
    # rows of n0 left of, right of and in its middle cluster; each part moves by its shift
    shifts = (0, n - n0, middle - half0)

    def part(r: np.ndarray) -> np.ndarray:
        return np.where(r < half0 - width, 0, np.where(r > half0 + width, 1, 2))

    moved = np.take(shifts, part(rows0))
    # between the parts: each row copies n0's row of the same phase next to the cluster
    inner_left = np.arange(half0 - width, middle - width)
    inner_right = np.arange(middle + width + 1, n - half0 + width + 1)
    source_left = half0 - width - period + (inner_left - (half0 - width)) % period
    source_right = half0 + width + 1 + (inner_right - (middle + width + 1)) % period
    new_rows, new_targets = [rows0 + moved], [targets0 + moved]
    per_row = np.bincount(rows0, minlength=n0 + 1)
    order = np.argsort(rows0, kind="stable")
    sorted_rows, offsets0 = rows0[order], (targets0 - rows0)[order]
    for inner, source in ((inner_left, source_left), (inner_right, source_right)):
        count = per_row[source]
        rank = _ranges(count)
        index = np.repeat(np.searchsorted(sorted_rows, source), count) + rank
        repeated = np.repeat(inner, count)
        by_rank = np.lexsort((repeated, rank))  # first entries first, as rows0
        new_rows.append(repeated[by_rank])
        new_targets.append((offsets0[index] + repeated)[by_rank])
    slack_rows = slack0 + np.take(shifts, part(slack0))
    return ExtendedBasis(np.concatenate(new_rows), np.concatenate(new_targets), slack_rows)


def _ranges(count: np.ndarray) -> np.ndarray:
    """0..count[0]-1, 0..count[1]-1, ... concatenated."""
    ends = np.cumsum(count)
    return np.arange(ends[-1] if ends.size else 0) - np.repeat(ends - count, count)


def _middle_cluster(special: np.ndarray, middle: int, gap: int = 4) -> int:
    """Half-width of the cluster of ``special`` rows around ``middle``: rows reached from
    ``middle`` in steps of at most ``gap`` (0 if there are none)."""
    low = high = middle
    while np.any(inside := (special >= low - gap) & (special < low)):
        low = int(special[inside].min())
    while np.any(inside := (special <= high + gap) & (special > high)):
        high = int(special[inside].max())
    return max(middle - low, high - middle)


def coarse_factor(n: int, alpha: float) -> int:
    """k of the coarse problem (n // k rows at alpha^k), or 1 when no coarse start is used."""
    if alpha < COARSE_FROM_ALPHA or n < COARSE_FROM_N:
        return 1
    k = int(round(np.log(COARSE_TARGET_ALPHA) / np.log(alpha)))
    return max(1, min(k, COARSE_MAX_FACTOR, n // COARSE_MIN_ROWS))


def row_means(remap: sparse.csr_array) -> np.ndarray:
    """phi_r = sum_r' T[r, r'] r': where each row of the remap sends its count on average."""
    return remap @ np.arange(remap.shape[1], dtype=float)


def predicted_means(coarse_means: np.ndarray, n: int, k: int) -> np.ndarray:
    """The fine problem's row means predicted from the coarse one's (n // k rows, alpha^k).

    The optimal mechanism depends on n and alpha mostly through n log(1/alpha) (a continuum
    limit: the geometric noise's scale 1/log(1/alpha) against the range n), so
    ``phi_n(r) ~ k phi_(n/k)(r / k)``, linear interpolation between coarse rows 1 .. m-1.
    The end rows are a boundary layer of width about one row at every scale: row 0 (and n)
    keeps the coarse row 0's mean times k; the fine rows between are extrapolated from
    coarse rows 1 and 2 (m-1 and m-2), not interpolated towards row 0.
    """
    m = coarse_means.size - 1
    x = np.arange(n + 1) / (n / m)
    inner = np.arange(1, m)
    phi = np.interp(x, inner, coarse_means[1:m])
    low, high = x < 1, x > m - 1
    phi[low] = coarse_means[1] + (x[low] - 1) * (coarse_means[2] - coarse_means[1])
    phi[high] = coarse_means[m - 1] + (x[high] - (m - 1)) * (coarse_means[m - 1] - coarse_means[m - 2])
    phi *= n / m
    phi[0], phi[n] = coarse_means[0] * n / m, n - (m - coarse_means[m]) * n / m
    return np.clip(phi, 0, n)


def coarse_start(problem: CountQuery, *, tolerance: float = 1e-10) -> tuple[np.ndarray, np.ndarray] | None:
    """Master columns (rows, targets) predicted by a coarser problem, or None where not used.

    Applies to losses convex in the output (absolute and squared), where an optimal remap
    can be taken to send row r to the two integers around its mean phi_r (Jensen: the
    randomized rounding of phi_r never raises any row's expected loss), so predicting phi
    predicts the optimal support. The coarse problem (n // k rows, alpha^k, side
    information S // k) is solved the same way (recursively, so alpha = 0.999 goes through
    0.99 to about 0.9); its row means, scaled by :func:`predicted_means`, give each fine row
    the columns around its predicted mean. The prediction only chooses where column
    generation starts: pricing still checks every column and the bounds certify the result.
    """
    n, alpha = problem.n, problem.alpha
    k = coarse_factor(n, alpha)
    if k == 1 or problem.loss_name not in ("absolute", "squared"):
        return None
    m = n // k
    side = np.unique(np.minimum(np.round(np.asarray(problem.support) * m / n), m).astype(int))
    coarse_problem = CountQuery(n=m, alpha=alpha**k, loss=problem.loss_name,
                                side_information=None if side.size == m + 1 else side.tolist())
    result = solve_by_column_generation(coarse_problem, tolerance=tolerance)
    coarse_means = row_means(result.mechanism.remap)
    phi = predicted_means(coarse_means, n, k)
    jumps, from_left, from_right = one_sided_means(coarse_means, n, k)
    w = PREDICTED_WIDTH[problem.loss_name]
    offsets = np.arange(-w, w + 2)
    predictions = [(np.arange(n + 1), phi, offsets), (jumps, from_left, offsets), (jumps, from_right, offsets)]
    if problem.loss_name in END_LOSSES:
        depth = min(END_ROWS, (n + 1) // 2)
        low, high = np.arange(depth), np.arange(n + 1 - depth, n + 1)
        predictions += [(low, phi[low], np.arange(w + 2, w + 2 + END_EXTRA)),  # inward of each end
                        (high, phi[high], np.arange(-w - END_EXTRA, -w))]
    rows = np.concatenate([np.repeat(r, o.size) for r, _, o in predictions])
    targets = np.concatenate([(np.floor(p).astype(np.int64)[:, None] + o).ravel() for _, p, o in predictions])
    inside = (targets >= 0) & (targets <= n)
    return _gap_edges(problem, rows[inside], targets[inside])


#: Losses whose first master also holds each row's nearest counts of S (:func:`side_neighbours`),
#: and whether also after a coarse start ...
SIDE_NEIGHBOURS = {"absolute": True, "squared": False}
#: ... where they lie within this many noise scales of the row: columns across a long gap
#: carry weights down to alpha^gap, and with them HiGHS failed a squared master ("Not Set":
#: S in two clusters 100 counts apart, n = 160, alpha = 0.3).
NEIGHBOUR_REACH_SCALES = 4.0


def side_neighbours(problem: CountQuery) -> tuple[np.ndarray, np.ndarray]:
    """Columns (rows, targets) from every row r to the last count of S below r and the first
    at or above it, where within NEIGHBOUR_REACH_SCALES noise scales of r.

    Absolute loss: for any multipliers lambda on S, row r's cost ``sum_i lambda_i
    alpha^|i-r| |i - r'|`` is piecewise linear in r' with kinks only at counts of S, so
    every row has a best column in S (a weighted median), and the optimal T sends row r to
    counts of S around it. The band around the diagonal misses them where S is sparse, and
    the rows then walk there a few columns a round: a random 10% of the counts, alpha =
    0.9, n = 10,000: 13 rounds, 24.6 s -> 5 rounds, 11.5 s; n = 5000 11.9 -> 5.7 s; alpha =
    0.99, n = 10,000 22.8 -> 17.2 s (one process). Not used where S is all of 0..n (the
    band holds them). Squared loss prices a weighted mean, not a count of S, yet the
    counts of S around a row still pull it: from the band (alpha < 0.95) a random 10%,
    alpha = 0.9, took n = 1000 1.33 -> 1.05 s, 5000 18.7 -> 15.4 s, 10,000 85 -> 63 s (8 -> 5
    rounds); after a coarse start they only made the master larger (random 10%, alpha =
    0.99, n = 5000 11.5 -> 13.1 s; 10-40% and 60-90% 21.1 -> 23.0 s; alpha = 0.999, n = 2000
    1.5 -> 2.1 s), so squared loss takes them from the band only.
    """
    support = np.asarray(problem.support)
    rows = np.arange(problem.n + 1)
    first = np.searchsorted(support, rows)  # the first count >= r; the last count < r before it
    above = support[np.minimum(first, support.size - 1)]
    below = support[np.maximum(first - 1, 0)]
    # past either end of S, both are its end
    rows, targets = np.concatenate([rows, rows]), np.concatenate([np.where(first == 0, above, below), np.where(first == support.size, below, above)])
    near = np.abs(targets - rows) <= NEIGHBOUR_REACH_SCALES * noise_scale(problem.alpha)
    return rows[near], targets[near]


#: Inside a gap of S of at least GAP_EDGE_SCALES noise scales, the rows farther than one
#: noise scale from S start with the gap's two edges as their only columns (see _gap_edges).
GAP_EDGE_SCALES = 4.0


def _gap_edges(problem: CountQuery, rows: np.ndarray, targets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The predicted columns with the rows deep inside long gaps of S sent to the gap's edges.

    Absolute loss only. With any multipliers on S, a row inside a gap (a, b) prices output
    r' in [a, b] linearly (every input of S is on one side of it), so its best column is a
    or b; pricing adds anything else. The interpolated coarse means predict nothing useful
    there, and their columns made the first master larger: S = 10%..40% and 60%..90% of 5000,
    alpha = 0.99: first master 10.3 -> 9.0 s, 16.3 -> 12.4 s in all. Squared loss prices a
    weighted mean between the edges, and there the predicted columns were worth keeping
    (12.8 -> 25.7 s without them).
    """
    support = np.asarray(problem.support)
    scale = noise_scale(problem.alpha)
    long_gaps = np.flatnonzero(np.diff(support) >= GAP_EDGE_SCALES * scale)
    if problem.loss_name != "absolute" or not long_gaps.size:
        return rows, targets
    keep = np.ones(rows.size, dtype=bool)
    extra_rows, extra_targets = [], []
    for g in long_gaps:
        a, b = int(support[g]), int(support[g + 1])
        deep = np.arange(int(np.floor(a + scale)) + 1, int(np.ceil(b - scale)))
        keep &= (rows < deep[0]) | (rows > deep[-1]) if deep.size else keep
        extra_rows += [deep, deep]
        extra_targets += [np.full(deep.size, a), np.full(deep.size, b)]
    return np.concatenate([rows[keep], *extra_rows]), np.concatenate([targets[keep], *extra_targets])


def one_sided_means(coarse_means: np.ndarray, n: int, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fine rows inside a jump of the coarse means, and their means extrapolated from each side.

    Side information makes the optimal means jump where S begins and ends (absolute loss,
    alpha = 0.99, n = 5000, S = 500..4500: row 500 goes to 552, row 501 to 582): linear
    interpolation between the coarse rows around a jump puts the fine rows in between
    up to 30 counts off. Coarse interval j (fine rows k j .. k (j + 1)) is a jump where its
    step differs from a neighbouring interval's by more than JUMP_STEP coarse counts; its
    fine rows also get the means extrapolated linearly from the left (coarse rows j - 1,
    j) and from the right (j + 1, j + 2). The intervals at the path's two ends are left to
    :func:`predicted_means` (with S = all they are the only jumps, and adding their rows
    cost 17% at n = 1000, alpha = 0.99). Returns (rows, from_left, from_right).
    """
    m = coarse_means.size - 1
    x = np.arange(n + 1) / (n / m)
    j = np.clip(np.floor(x).astype(np.int64), 0, m - 1)
    step = np.diff(coarse_means)  # step[j]: coarse row j to j + 1
    left_step, right_step = step[np.maximum(j - 1, 0)], step[np.minimum(j + 1, m - 1)]
    jump = (np.abs(step[j] - left_step) > JUMP_STEP) | (np.abs(step[j] - right_step) > JUMP_STEP)
    jump &= (j >= 2) & (j <= m - 3)  # the path's own ends are predicted_means's boundary layers
    from_left = (coarse_means[j] + (x - j) * left_step) * (n / m)
    from_right = (coarse_means[j + 1] + (x - j - 1) * right_step) * (n / m)
    rows = np.flatnonzero(jump)
    return rows, np.clip(from_left[rows], 0, n), np.clip(from_right[rows], 0, n)


def evaluated(problem: CountQuery, remap: sparse.csr_array) -> tuple[FactoredMechanism, np.ndarray]:
    """``G T`` for the remap T (clipped and renormalised by :class:`FactoredMechanism`) and
    its exact expected loss on every input of S: what every upper bound here is read from
    (absolute and squared loss by kernel recurrences, :meth:`FactoredMechanism.named_row_losses`;
    at n = 10,000 the dense sums took 1.3 s an evaluation, up to half of a whole run)."""
    mechanism = FactoredMechanism.from_remap(problem.n, problem.alpha, remap)
    return mechanism, mechanism.expected_losses(problem.loss_name, problem.loss_rows, np.asarray(problem.support))


def _closed_form_result(problem: CountQuery, remap: sparse.csr_array, lower: float, tolerance: float, start: float,
                        route: str, columns: int | None = None) -> ColumnGenerationResult | None:
    """A closed form's remap as a result, certified by ``lower`` and its exact worst loss; None if they disagree.
    ``columns``: what to report as master columns (default: the remap's entries)."""
    mechanism, losses = evaluated(problem, remap)
    upper = float(losses.max())
    if upper - lower > tolerance * abs(upper) + ABSOLUTE_GAP:
        return None
    return ColumnGenerationResult(mechanism=mechanism, lower_bound=lower, upper_bound=upper, rounds=0,
                                  columns=int(remap.nnz) if columns is None else columns, master_objective=upper,
                                  row_losses=losses, seconds=time.perf_counter() - start, history=[], route=route)


def identity_certificate(problem: CountQuery, *, tolerance: float = 1e-10) -> ColumnGenerationResult | None:
    """Zero-one loss, S = all: the geometric mechanism itself, certified optimal without a master, or None.

    Every inner row of G_(n, alpha) has the same zero-one loss ``1 - g`` with
    ``g = (1 - alpha) / (1 + alpha)`` (its diagonal), the end rows less. Take loss-row
    multipliers ``lambda_i ~ alpha^|i - n/2|`` on the inner rows (0 at the ends): then
    ``lambda_r' G[r', r]`` is largest at ``r' = r`` for every inner r, so the Lagrangian
    bound (exact pricing, valid for any lambda) is ``1 - g - 2 c g_0 alpha^(n/2)``, within
    the tolerance of the identity's worst loss once ``alpha^(n/2)`` is negligible (alpha =
    0.99: n >= about 4000; alpha = 0.9: n >= about 400). There the first master's degenerate
    simplex (39 s at n = 5000, alpha = 0.99) is not needed at all. The bound is computed,
    not assumed: if it falls short, None, and column generation runs as usual.
    """
    n, alpha = problem.n, problem.alpha
    if problem.loss_name != "zero_one" or len(problem.support) != n + 1 or n < 2:
        return None
    start = time.perf_counter()
    rows = np.arange(n + 1)
    lam = alpha ** np.abs(rows - n / 2.0)
    lam[[0, n]] = 0.0
    lam /= lam.sum()
    identity = sparse.eye_array(n + 1, format="csr")
    lower = _price_zero_one(problem, lam, identity).lower_bound
    return _closed_form_result(problem, identity, lower, tolerance, start, "identity certificate", columns=0)


def two_count_threshold(problem: CountQuery, *, tolerance: float = 1e-10) -> ColumnGenerationResult | None:
    """Absolute or zero-one loss, S two counts a < b: the optimal remap in closed form, or None.

    Every output between a and b costs the pair ``(w_a (r' - a), w_b (b - r'))`` for a row
    with weights ``w_i = G[i, r]``, a point on the segment between mapping to a and mapping
    to b, and outputs beyond them are dominated: so an optimal T maps each row to a or b
    (zero-one loss: any other output costs both; below, ``b - a`` is then 1).
    Row r sent to b costs input a ``(b - a) w_a(r)`` and saves input b ``(b - a) w_b(r)``, a
    ratio ``alpha^(|b - r| - |a - r|)`` that falls with r: the minimax sends rows 0..s - 1 to a,
    s + 1..n to b and splits row s so that the two losses are equal. The lower bound is the
    Lagrangian bound at the multipliers on which row s is indifferent (``lambda_a w_a(s) =
    lambda_b w_b(s)``): ``(b - a) sum_r min(lambda_a w_a(r), lambda_b w_b(r))``; the upper bound
    is the exact loss of the remap; None if they disagree. Column generation needed this where
    the optimum is near 0 (b - a = 5000, alpha = 0.99: 5e-8, left 43% apart by HiGHS's
    tolerances and the pricing's 1e-14 cancellation).
    """
    support = problem.support
    if problem.loss_name not in ("absolute", "zero_one") or len(support) != 2:
        return None
    start = time.perf_counter()
    n, alpha = problem.n, problem.alpha
    a, b = int(support[0]), int(support[1])
    price = float(b - a) if problem.loss_name == "absolute" else 1.0  # what either input pays for the other's count
    rows = np.arange(n + 1)
    g = column_weights(n, alpha)
    to_a, to_b = g * alpha ** np.abs(rows - a), g * alpha ** np.abs(rows - b)  # G[a, r], G[b, r]
    # rows r < s to a, r > s to b: loss of a is the weight of a beyond s, loss of b that of b before s
    beyond_a = np.concatenate([np.cumsum(to_a[::-1])[::-1][1:], [0.0]])
    before_b = np.concatenate([[0.0], np.cumsum(to_b)[:-1]])
    # the first row whose sending to a in full already costs b at least what a pays
    s = int(np.argmax(before_b + to_b >= beyond_a))
    # row s: a fraction f to a equalises (1 - f) G[a, s] + beyond_a = before_b + f G[b, s]
    f = float(np.clip((to_a[s] + beyond_a[s] - before_b[s]) / (to_a[s] + to_b[s]), 0.0, 1.0))
    share = np.ones(n + 1)
    share[s] = 1.0 - f  # row s: 1 - f to b, f to a
    remap = sparse.csr_array((np.r_[share, f], (np.r_[rows, s], np.r_[np.where(rows < s, a, b), a])), shape=(n + 1, n + 1))
    # multipliers (theta, 1 - theta) on (a, b) with row s indifferent; the Lagrangian row
    # minimum over all r' is at a or b (the cost is convex piecewise linear in r' with kinks
    # only there), so the bound is a sum of minima, free of the cancellation in the general
    # pricing's moments (about 1e-14 absolute, the size of this optimum at b - a = 5000)
    theta = to_b[s] / (to_a[s] + to_b[s])
    lower = float(price * np.minimum(theta * to_a, (1.0 - theta) * to_b).sum())
    return _closed_form_result(problem, remap, lower, tolerance, start, "two counts: threshold remap")


def two_count_bisection(problem: CountQuery, *, tolerance: float = 1e-10, iterations: int = 64) -> ColumnGenerationResult | None:
    """Squared loss, S two counts a < b: the one-dimensional Lagrangian dual, or None.

    With multipliers ``(theta, 1 - theta)`` on (a, b), row r's Lagrangian cost of output r'
    is ``u (r' - a)^2 + v (b - r')^2`` (``u = theta G[a, r]``, ``v = (1 - theta) G[b, r]``),
    least at the integer next to the weighted mean ``(u a + v b) / (u + v)``, evaluated as
    that sum of non-negative terms (the general pricing's moments cancel: at n = 10,000 its
    bound came out 1e-11 above this optimum of 1.2e-4). h(theta), the sum of the row minima,
    is a lower bound for every theta; its minimiser T(theta) has ``E_a >= E_b`` below the dual
    optimum and ``E_a <= E_b`` above it. Bisection brackets it to machine precision; the
    minimisers on either side, mixed so that the two losses are equal, give the upper bound.
    None if the bounds disagree. S = {n/4, 3n/4}, alpha = 0.99, n = 10,000: column
    generation ended 1.3e-4 apart after 98 s.
    """
    support = problem.support
    if problem.loss_name != "squared" or len(support) != 2:
        return None
    start = time.perf_counter()
    n, alpha = problem.n, problem.alpha
    a, b = int(support[0]), int(support[1])
    rows = np.arange(n + 1)
    g = column_weights(n, alpha)
    to_a, to_b = g * alpha ** np.abs(rows - a), g * alpha ** np.abs(rows - b)  # G[a, r], G[b, r]
    best_lower = -np.inf

    def minimiser(theta: float) -> tuple[sparse.csr_array, float]:
        nonlocal best_lower
        u, v = theta * to_a, (1.0 - theta) * to_b
        weight = u + v
        centre = np.divide(u * a + v * b, weight, out=np.full(n + 1, float(a)), where=weight > 0)
        candidates = np.clip(np.stack([np.floor(centre), np.ceil(centre)]), 0, n)
        costs = u * (candidates - a) ** 2 + v * (b - candidates) ** 2
        pick = np.argmin(costs, axis=0)
        best_lower = max(best_lower, float(costs[pick, rows].sum()))
        remap = sparse.csr_array((np.ones(n + 1), (rows, candidates[pick, rows].astype(np.int64))), shape=(n + 1, n + 1))
        losses = evaluated(problem, remap)[1]
        return remap, float(losses[0] - losses[1])  # E_a - E_b

    low, high = 0.0, 1.0
    (remap_low, excess_low), (remap_high, excess_high) = minimiser(low), minimiser(high)
    for _ in range(iterations):
        middle = 0.5 * (low + high)
        if not low < middle < high:
            break
        remap, excess = minimiser(middle)
        if excess > 0:
            low, remap_low, excess_low = middle, remap, excess
        else:
            high, remap_high, excess_high = middle, remap, excess
    share = excess_high / (excess_high - excess_low) if excess_low != excess_high else 1.0  # of remap_low
    remap = (share * remap_low + (1.0 - share) * remap_high).tocsr()
    remap.eliminate_zeros()
    return _closed_form_result(problem, remap, best_lower, tolerance, start, "two counts: Lagrangian bisection")


def solve_zero_one_by_flow(problem: CountQuery, *, tolerance: float = 1e-10) -> tuple[ColumnGenerationResult, bool]:
    """Zero-one loss: the optimum from the O(n) flow LP (:mod:`dpopt.programs.zero_one_flow`), certified.

    The remap decomposed from the flows is clipped and renormalised; its exact worst loss
    is the upper bound, and the LP's multipliers, priced exactly over all (n+1)^2 columns,
    give the lower bound. Returns the result and whether the bounds meet the tolerance
    (if not, the caller goes on with column generation from the flow's support).
    """
    start = time.perf_counter()
    alpha = problem.alpha
    flow = solve_flow_program(problem)
    remap = remap_from_flows(alpha, flow.supply, flow.right, flow.left)
    mechanism, losses = evaluated(problem, remap)
    upper = float(losses.max())
    lower = _price_zero_one(problem, flow.lam, mechanism.remap).lower_bound
    result = ColumnGenerationResult(mechanism=mechanism, lower_bound=lower, upper_bound=upper, rounds=1,
                                    columns=int(mechanism.remap.nnz), master_objective=1.0 - flow.value * (1 - alpha) / (1 + alpha),
                                    row_losses=losses, seconds=time.perf_counter() - start,
                                    history=[{"round": 1, "columns": int(mechanism.remap.nnz), "master": upper, "lower": lower}],
                                    route="zero-one flow")
    return result, upper - lower <= tolerance * abs(upper) + ABSOLUTE_GAP


#: Losses for which moving an output into [min S, max S] never raises any loss on S
#: (monotone in |i - r'|), so :func:`hull_problem` applies.
HULL_LOSSES = ("absolute", "squared", "zero_one")


def hull_problem(problem: CountQuery) -> CountQuery | None:
    """The same problem on the hull [a, b] of S (counts shifted by -a), or None if S reaches 0 and n.

    Exact for losses monotone in ``|i - r'|``. For inputs i >= a the geometric mechanism's
    rows r <= a are proportional (``G[i, r] = g_r alpha^(i - r)``), and together they weigh
    ``alpha^(i - a) / (1 + alpha)``: exactly the end column of ``G_(b - a, alpha)`` at i - a
    (likewise r >= b). So for inputs in [a, b], G followed by clamping to [a, b] *is*
    ``G_(b - a)`` shifted by a. Hence (i) any ``G_(b - a) T'`` is ``G T`` for the T that
    repeats the first row of T' on rows r <= a and its last on rows r >= b (the same loss
    on S; :func:`_embedded`), and (ii) any ``G T`` restricted to S is ``G_(b - a) T2`` with
    the first row of T2 a convex combination of the rows r <= a of T, and clamping the
    outputs of T2 into [a, b] never raises a monotone loss on S. Both problems have the
    same optimum, so the smaller one's lower bound is a lower bound here. The rows outside
    [a, b], whose columns are proportional (a large optimal face), are gone: absolute
    loss, alpha = 0.99, n = 10,000, S = 1000..9000 took 178 s on the full problem.
    """
    if problem.loss_name not in HULL_LOSSES:
        return None
    support = np.asarray(problem.support)
    low, high = int(support.min()), int(support.max())
    if (low, high) == (0, problem.n) or high - low < 1:
        return None
    inner = None if support.size == high - low + 1 else (support - low).tolist()
    return CountQuery(n=high - low, alpha=problem.alpha, loss=problem.loss_name, side_information=inner)


def spread_row(weights: np.ndarray, columns: np.ndarray, masses: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stochastic rows, one per weight, whose ``weights``-average is the distribution ``masses``
    on ``columns``: the monotone (quantile) coupling, at most ``len(weights) +
    len(columns) - 1`` entries. Returns (row, column, value) triples; a row of weight 0
    (underflow) gets its quantile's column alone.
    """
    order = np.argsort(columns, kind="stable")
    columns, masses = np.asarray(columns)[order], np.asarray(masses, dtype=float)[order]
    w = np.cumsum(weights) / np.sum(weights)
    p = np.cumsum(masses) / np.sum(masses)
    w[-1] = p[-1] = 1.0
    breaks = np.unique(np.clip(np.concatenate([[0.0], w, p]), 0.0, 1.0))
    middle = (breaks[:-1] + breaks[1:]) / 2
    rows = np.minimum(np.searchsorted(w, middle), w.size - 1)
    cols = np.minimum(np.searchsorted(p, middle), p.size - 1)
    length = np.diff(breaks)
    empty = np.setdiff1d(np.arange(w.size), rows)  # rows whose interval has no length
    rows = np.concatenate([rows, empty])
    cols = np.concatenate([cols, np.minimum(np.searchsorted(p, w[empty]), p.size - 1)])
    length = np.concatenate([length, np.ones(empty.size)])
    totals = np.bincount(rows, weights=length, minlength=w.size)
    return rows, columns[cols], length / totals[rows]


def _embedded(problem: CountQuery, on_hull: ColumnGenerationResult) -> ColumnGenerationResult:
    """The hull problem's result as a mechanism on 0..n (see :func:`hull_problem`).

    The rows r <= a of T only act on S through their average weighted by ``g_r alpha^(a - r)``,
    which must be the hull remap's first row (likewise r >= b and its last row). Repeating
    that row on every one of them (as the proof does) would copy a dense end row up to n
    times (the zero-one flow's end rows hold hundreds of entries: S = 0..2500, n = 5000
    left millions of entries for the certificate to read), so :func:`spread_row` splits it
    among them instead, one or two entries a row. Outputs are shifted by a. The upper bound
    is recomputed exactly on 0..n; the lower bound carries over."""
    n, alpha, support = problem.n, problem.alpha, np.asarray(problem.support)
    low, high = int(support.min()), int(support.max())
    small = sparse.csr_array(on_hull.mechanism.remap)
    g = column_weights(n, alpha)
    inner = sparse.coo_array(small[1:-1])  # rows low + 1 .. high - 1
    rows, cols, vals = [inner.row + low + 1], [inner.col + low], [inner.data]
    for outside, end, distance in ((np.arange(low + 1), 0, low - np.arange(low + 1)),
                                   (np.arange(high, n + 1), small.shape[0] - 1, np.arange(high, n + 1) - high)):
        row = small[[end]]
        r, c, v = spread_row(g[outside] * alpha**distance, row.indices + low, row.data)
        rows.append(outside[r])
        cols.append(c)
        vals.append(v)
    remap = sparse.csr_array((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n + 1, n + 1))
    mechanism, losses = evaluated(problem, remap)
    multipliers = None
    if on_hull.multipliers is not None:
        multipliers = np.zeros(n + 1)
        multipliers[low : high + 1] = on_hull.multipliers
    return dataclasses.replace(on_hull, mechanism=mechanism, upper_bound=float(losses.max()), row_losses=losses,
                               route=f"{on_hull.route} on the hull {low}..{high} of S", multipliers=multipliers)


#: S is cut into clusters where it has a gap of at least this many noise scales
#: 1 / (1 - alpha) (:func:`clusters_of`; alpha = 0.99: 2000 counts), each cluster spanning
#: at least one noise scale.
CLUSTER_GAP_SCALES = 20.0
#: In the bridged master (:func:`solve_by_clusters`) a row of T inside a gap keeps the
#: joined remap's row as its only column (with the diagonal) when it is more than
#: BRIDGE_MARGIN_SCALES noise scales from S and BRIDGE_JOIN_SCALES from the join.
BRIDGE_MARGIN_SCALES = 1.0
BRIDGE_JOIN_SCALES = 3.0
BRIDGE_INNER_SCALES = 5.0
#: A bridged result within this many times the tolerance is kept (at the default 1e-10 the
#: 1e-9 that :mod:`dpopt.methods.count_query` reports as optimal); otherwise the caller
#: solves the whole problem.
CERTIFIED_FACTOR = 10.0


def noise_scale(alpha: float) -> float:
    """``1 / (1 - alpha)``, rounded so that e.g. alpha = 0.95 gives 20 and not 19.99..."""
    return round(1.0 / (1.0 - alpha), 9)


def clusters_of(problem: CountQuery, gap_scales: float = CLUSTER_GAP_SCALES) -> list[np.ndarray]:
    """S cut at its gaps of at least ``gap_scales`` noise scales 1 / (1 - alpha); S whole
    if a part would span less than one noise scale (two counts far apart: the whole
    problem's master has two loss rows and is solved at once, 1.0 s against 3.8 s split at
    alpha = 0.99, n = 5000)."""
    support = np.asarray(problem.support)
    scale = noise_scale(problem.alpha)
    parts = np.split(support, np.flatnonzero(np.diff(support) >= gap_scales * scale) + 1)
    return parts if all(part[-1] - part[0] >= scale for part in parts) else [support]


def bridge_columns(problem: CountQuery, parts: list[np.ndarray], joined: sparse.csr_array) -> tuple[np.ndarray, np.ndarray]:
    """The first columns of the bridged master: the joined remap, freed where it may move.

    Rows of T deep inside a gap (farther than BRIDGE_MARGIN_SCALES noise scales from S and
    BRIDGE_JOIN_SCALES from the join) keep only the joined remap's row: an optimal row there
    maps to the nearer cluster's edge, and such rows barely move any loss of S, which is
    what made masters over them slow. Every other row gets the joined row's columns +-1,
    and the rows inside a gap also the gap's two edges (where the remap switches sides).
    Pricing adds whatever else the optimum needs.
    """
    n, scale = problem.n, noise_scale(problem.alpha)
    rows = np.arange(n + 1)
    free = np.zeros(n + 1, dtype=bool)
    inside = np.zeros(n + 1, dtype=bool)
    low_edge, high_edge = np.zeros(n + 1, dtype=np.int64), np.zeros(n + 1, dtype=np.int64)
    for left, right in zip(parts, parts[1:]):
        a, b = int(left[-1]), int(right[0])
        gap = (rows > a) & (rows < b)
        inside |= gap
        low_edge[gap], high_edge[gap] = a, b
        free |= (rows >= a - BRIDGE_INNER_SCALES * scale) & (rows <= a + BRIDGE_MARGIN_SCALES * scale)
        free |= (rows <= b + BRIDGE_INNER_SCALES * scale) & (rows >= b - BRIDGE_MARGIN_SCALES * scale)
        free |= np.abs(rows - (a + b) // 2) <= BRIDGE_JOIN_SCALES * scale
    deep = ~free
    coo = sparse.coo_array(joined)
    free = ~deep[coo.row]
    offsets = np.arange(-1, 2)
    edges = np.flatnonzero(inside & ~deep)
    r = np.concatenate([coo.row[~free], np.repeat(coo.row[free], offsets.size), edges, edges])
    c = np.concatenate([coo.col[~free], (coo.col[free][:, None] + offsets).ravel(), low_edge[edges], high_edge[edges]])
    keep = (c >= 0) & (c <= n)
    return r[keep], c[keep]


def mixed_multipliers(problem: CountQuery, parts: list[np.ndarray | None], sweeps: int = 2,
                      steps: int = 40) -> tuple[np.ndarray, float] | None:
    """The clusters' multipliers mixed for the best Lagrangian bound on the whole problem.

    The bound is concave in the mixture weights, so each pair of neighbouring clusters
    shares its weight by golden-section search (``steps`` + 1 evaluations, O(n) each), for
    ``sweeps`` passes. Returns (multipliers, bound), or None if a cluster has none.
    """
    if any(lam is None for lam in parts):
        return None
    empty = sparse.csr_array((problem.n + 1, problem.n + 1))

    def bound(w: np.ndarray) -> float:
        return _price(problem, np.tensordot(w, parts, axes=1), empty).lower_bound

    weights = np.full(len(parts), 1.0 / len(parts))
    ratio = (np.sqrt(5.0) - 1.0) / 2.0
    for _ in range(sweeps):
        for c in range(len(parts) - 1):
            pair = weights[c] + weights[c + 1]

            def split(x: float, c: int = c, pair: float = pair) -> float:
                w = weights.copy()
                w[c], w[c + 1] = x * pair, (1.0 - x) * pair
                return bound(w)

            # golden section: one new evaluation a step, the other point carried over
            low, high = 0.0, 1.0
            a, b = high - ratio * (high - low), low + ratio * (high - low)
            fa, fb = split(a), split(b)
            for _ in range(steps - 1):
                if fa < fb:
                    low, a, fa = a, b, fb
                    b = low + ratio * (high - low)
                    fb = split(b)
                else:
                    high, b, fb = b, a, fa
                    a = high - ratio * (high - low)
                    fa = split(a)
            if fa < fb:
                low = a
            else:
                high = b
            x = (low + high) / 2.0
            weights[c], weights[c + 1] = x * pair, (1.0 - x) * pair
    lam = np.tensordot(weights, parts, axes=1)
    return lam, bound(weights)


def mixed_columns(problem: CountQuery, parts: list[np.ndarray], lam: np.ndarray,
                  initial: tuple[np.ndarray, np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's best columns (and their neighbours) priced with ``lam``, for the rows
    between the clusters' edges whose best column is not among their ``initial`` ones."""
    n = problem.n
    pricing = _price(problem, lam, sparse.csr_array((n + 1, n + 1)))
    rows = np.arange(n + 1)
    between = np.zeros(n + 1, dtype=bool)
    for left, right in zip(parts, parts[1:]):
        between |= (rows > left[-1]) & (rows < right[0])
    between &= ~np.isin(rows * (n + 1) + pricing.row_argmin, initial[0] * (n + 1) + initial[1])
    rows = rows[between]
    targets = pricing.row_argmin[rows][:, None]
    if pricing.nearby is not None:
        targets = np.hstack([targets, pricing.nearby[rows]])
    return np.repeat(rows, targets.shape[1]), targets.ravel()


def _solve_clusters(problem: CountQuery, parts: list[np.ndarray], tolerance: float) -> list[ColumnGenerationResult]:
    """Each cluster of S alone, on its hull; clusters whose hull problems are the same (S =
    10%..40% and 60%..90% of n: two copies of S = all on 0..3n/10) are solved once."""
    solved: dict[tuple[int, tuple[int, ...]], ColumnGenerationResult] = {}
    results = []
    for part in parts:
        alone = CountQuery(n=problem.n, alpha=problem.alpha, loss=problem.loss_name, side_information=part.tolist())
        hull = hull_problem(alone)
        if hull is None:
            results.append(solve_by_column_generation(alone, tolerance=tolerance))
            continue
        key = (hull.n, hull.support)
        fresh = key not in solved
        if fresh:
            solved[key] = solve_by_column_generation(hull, tolerance=tolerance)
        embedded = _embedded(alone, solved[key])
        results.append(embedded if fresh else dataclasses.replace(embedded, rounds=0, history=[], seconds=0.0))
    return results


def solve_by_clusters(problem: CountQuery, *, tolerance: float = 1e-10, gap_scales: float = CLUSTER_GAP_SCALES,
                      max_rounds: int = 500, progress: Callable[[dict[str, float]], None] | None = None
                      ) -> ColumnGenerationResult | None:
    """S with long gaps: each cluster solved alone, the remaps joined at the gaps' middles,
    and, unless that already certifies, the whole problem bridged from the joined remap;
    None if S has no gap of ``gap_scales`` noise scales.

    Exact certificate either way: the optimum for S is at least the optimum for any part
    of S, so the largest of the clusters' lower bounds is a lower bound, and the joined
    mechanism's exact worst loss on S an upper bound; where the gaps are long enough
    (an input sees the rows beyond a gap's middle at weight below alpha^(gap / 2) / (1 -
    alpha)) the two agree within the tolerance (S = 10%..40% and
    60%..90% of n = 5000 at alpha = 0.9: HiGHS failed on the whole master, "Unknown" by
    every route, as the chains carry values down to alpha^1000 ~ 1e-46 across the gap).
    Otherwise the clusters interact at the tolerance (S = 0..500 and 4500..5000, alpha =
    0.99: the optimum is 1.1e-8 relative above either cluster's alone) and column
    generation on the whole problem starts from the joined remap, with the rows deep
    inside the gaps held to it (:func:`bridge_columns`); its certificate is the usual one,
    and None is returned if it falls short (the caller then solves the whole problem).
    """
    if problem.loss_name not in ("absolute", "squared"):  # zero-one: the flow LP has no chains
        return None
    parts = clusters_of(problem, gap_scales)
    if len(parts) < 2:
        return None
    start = time.perf_counter()
    n = problem.n
    results = _solve_clusters(problem, parts, tolerance)
    middles = [(left[-1] + right[0]) // 2 for left, right in zip(parts, parts[1:])]
    owner = np.searchsorted(np.asarray(middles), np.arange(n + 1), side="left")  # rows r <= middle: the left cluster
    pieces = []
    for c, result in enumerate(results):
        remap = sparse.coo_array(result.mechanism.remap)
        mine = owner[remap.row] == c
        pieces.append((remap.row[mine], remap.col[mine], remap.data[mine]))
    rows, cols, vals = (np.concatenate(p) for p in zip(*pieces))
    joined = sparse.csr_array((vals, (rows, cols)), shape=(n + 1, n + 1))
    mechanism, losses = evaluated(problem, joined)
    upper, lower = float(losses.max()), max(result.lower_bound for result in results)
    history = [record for r in results for record in r.history]
    if upper - lower <= tolerance * abs(upper) + ABSOLUTE_GAP:
        return ColumnGenerationResult(
            mechanism=mechanism, lower_bound=lower, upper_bound=upper, rounds=sum(r.rounds for r in results),
            columns=int(mechanism.remap.nnz), master_objective=upper, row_losses=losses, seconds=time.perf_counter() - start,
            history=history, route=f"{len(parts)} clusters of S solved apart ({results[0].route}, ...)",
        )
    initial = bridge_columns(problem, parts, joined)
    mixed = mixed_multipliers(problem, [result.multipliers for result in results])
    if mixed is not None:
        lower = max(lower, mixed[1])
        initial = tuple(np.concatenate(pair) for pair in zip(initial, mixed_columns(problem, parts, mixed[0], initial)))
    try:
        bridged = solve_by_column_generation(problem, tolerance=tolerance, max_rounds=max_rounds, progress=progress,
                                             hull=False, split=False, initial=initial)
    except SolverError:
        return None
    if bridged.lower_bound < lower:  # the clusters' bound is as valid
        bridged = dataclasses.replace(bridged, lower_bound=lower)
    if not bridged.within(CERTIFIED_FACTOR * tolerance, ABSOLUTE_GAP):
        # seen with short noise scales (alpha = 0.6, n = 75, a gap of 53 counts: the master
        # stuck 2e-7 above its bound, or HiGHS "Unknown"), where the whole problem certifies
        return None
    return dataclasses.replace(bridged, seconds=time.perf_counter() - start, history=history + bridged.history,
                               rounds=bridged.rounds + sum(r.rounds for r in results),
                               route=f"{len(parts)} clusters of S solved apart and bridged ({bridged.route})")


def solve_by_column_generation(
    problem: CountQuery,
    *,
    tolerance: float = 1e-10,
    band: int | None = None,
    max_rounds: int = 500,
    progress: Callable[[dict[str, float]], None] | None = None,
    coarse: bool = True,
    flow: bool = True,
    hull: bool = True,
    split: bool = True,
    initial: tuple[np.ndarray, np.ndarray] | None = None,
    closed_forms: bool = True,
) -> ColumnGenerationResult:
    """The exact minimax-optimal mechanism as ``G T`` (see the module docstring).

    Parameters
    ----------
    problem : CountQuery
    tolerance : float
        Stop when the master's optimum and the lower bound agree to
        ``tolerance * |optimum| + ABSOLUTE_GAP``.
    band : int, optional
        Initial master columns: ``|r' - r| <= band`` (default: the loss form's choice,
        1 or 2).
    max_rounds : int
        Cap on master solves; the result reports its bounds whether or not they met.
    progress : callable, optional
        Called after each round with a dict (round, columns, master, lower).
    coarse : bool
        Start from the columns a coarser problem predicts (:func:`coarse_start`) where
        that pays (small epsilon, absolute and squared loss); False: the band alone.
    flow : bool
        Zero-one loss: solve the O(n) flow LP first (:func:`solve_zero_one_by_flow`) and
        return its result when certified; otherwise column generation starts from its
        support. False: column generation alone (an independent route, for tests).
    hull : bool
        Where S does not reach both ends of 0..n (named losses), solve the problem on the
        hull of S instead and embed it (:func:`hull_problem`, exact); False: the full
        problem (an independent route, for tests).
    split : bool
        Where S falls into clusters too far apart to interact within the tolerance, solve
        each alone and join them, bridged by the whole problem's master where they
        interact (:func:`solve_by_clusters`); False: never.
    closed_forms : bool
        Take the closed forms where they apply and certify (:func:`identity_certificate`,
        :func:`two_count_threshold`, :func:`two_count_bisection`); False: column generation
        (an independent route, for tests).
    initial : (rows, targets), optional
        The first master's columns ``T[rows[k], targets[k]]`` (with the diagonal, or the
        band if given) instead of the band and the coarse start.

    Raises
    ------
    SolverError
        If HiGHS cannot solve the first restricted master (a later failure returns
        the incumbent with its bounds and ``master_failure`` set).
    """
    tol = check_real(tolerance, "tolerance", "column generation", low=0.0, low_open=True)
    if band is not None:
        band = check_int(band, "band", "column generation", low=0)
    max_rounds = check_int(max_rounds, "max_rounds", "column generation", low=1)
    smaller = hull_problem(problem) if hull else None
    if smaller is not None:
        on_hull = solve_by_column_generation(smaller, tolerance=tol, band=band, max_rounds=max_rounds, progress=progress,
                                             coarse=coarse, flow=flow, split=split, closed_forms=closed_forms)
        return _embedded(problem, on_hull)
    if closed_forms:
        certified = (identity_certificate(problem, tolerance=tol) or two_count_threshold(problem, tolerance=tol)
                     or two_count_bisection(problem, tolerance=tol))
        if certified is not None:
            return certified
    if split:
        apart = solve_by_clusters(problem, tolerance=tol, max_rounds=max_rounds, progress=progress)
        if apart is not None:
            return apart
    flow_support = None
    if flow and problem.loss_name == "zero_one":
        flow_result, closed = solve_zero_one_by_flow(problem, tolerance=tol)
        if closed:
            return flow_result
        flow_support = flow_result.mechanism.remap.nonzero()
    start = time.perf_counter()
    n = problem.n
    support = np.array(problem.support)
    master = _Master(_form_for(problem))
    predicted = coarse_start(problem, tolerance=tol) if coarse and initial is None else None
    if band is None:
        band = 0 if predicted is not None or initial is not None else master.form.initial_band()
    r = np.repeat(np.arange(n + 1), 2 * band + 1)
    rp = r + np.tile(np.arange(-band, band + 1), n + 1)
    inside = (rp >= 0) & (rp <= n)
    master.add_remap_columns(r[inside], rp[inside])
    after_coarse = SIDE_NEIGHBOURS.get(problem.loss_name)
    if after_coarse is not None and (after_coarse or predicted is None) and support.size < n + 1 and initial is None:
        master.add_remap_columns(*side_neighbours(problem))
    if predicted is not None:
        master.add_remap_columns(*predicted)
    if initial is not None:
        master.add_remap_columns(*initial)
    if flow_support is not None:
        master.add_remap_columns(*flow_support)
    history: list[dict[str, float]] = []
    best_lower, best_multipliers = -np.inf, None

    def price(duals: np.ndarray) -> Pricing:
        nonlocal best_lower, best_multipliers
        lam = np.zeros(n + 1)
        lam[support] = _multipliers(duals, support.size)
        pricing = _price(problem, lam, master.structure())
        if pricing.lower_bound > best_lower:
            best_lower, best_multipliers = pricing.lower_bound, lam
        return pricing

    exact_pricing: Pricing | None = None  # the pricing of the last polish's exact duals

    def polish() -> bool:
        """Replace the incumbent by the basis's exact solution and price its exact duals."""
        nonlocal incumbent, exact_pricing
        exact = master.basic_solution()
        if exact is None:
            return False
        incumbent, exact_duals = exact
        exact_pricing = price(exact_duals)
        return True

    def add_priced(pricing: Pricing, allowed: float) -> int:
        """Add the columns that price out (row minimum below the master's); how many."""
        if pricing.potential <= allowed:
            return 0
        rows = np.flatnonzero(pricing.row_min < pricing.master_min - allowed / (n + 1))
        added = master.add_remap_columns(rows, pricing.row_argmin[rows])
        if pricing.nearby is not None:
            extra = pricing.nearby[rows]
            added += master.add_remap_columns(np.repeat(rows, extra.shape[1]), extra.ravel())
        return added

    def exact_upper(values: np.ndarray) -> float:
        """The worst loss of the remap ``values`` (the master's columns), clipped and renormalised."""
        padded = np.concatenate([values, np.zeros(master.t_rows.size - values.size)])
        return float(evaluated(problem, master.remap(padded))[1].max())

    # the bridged master's warm primal re-solves stalled (18 s, and 610 s with narrower free
    # zones, for one round that the interior point does from scratch in about 2 s)
    resolve = "primal" if initial is None else "ipm"
    master.start_from_identity()
    strategy, refreshes, interior_rounds = master.form.first_strategy(coarse_started=predicted is not None), 0, 0
    incumbent: np.ndarray | None = None  # T values of the last master solved
    polished = False  # whether incumbent was recomputed from the basis (basic_solution)
    failure = ""
    extension_tried = False  # whether extended_basis was tried (once, before the fallback)
    # the prediction right after the first interior master, where that was measured to pay
    plannable = extension_plan(problem) is not None  # whether extended_basis can apply at all
    extendable = plannable and n <= EARLY_EXTENSION_MAX_N
    refactored = False  # whether a predicted basis's solve was re-run on fresh factors
    for round_number in range(1, max_rounds + 1):
        if strategy == "dualized ipm" and not extension_tried:
            # before HiGHS from scratch: a predicted basis, where one applies
            extension_tried = True
            predicted_basis = extended_basis(problem, tolerance=tol)
            if predicted_basis is not None and master.install_basis(predicted_basis):
                # nearly dual optimal, primal infeasible near the ends: 847 dual simplex
                # pivots where primal simplex needed 10,935 (n = 10,000, alpha = 0.9)
                strategy = "predicted dual"
            elif interior_rounds < INTERIOR_ROUNDS:
                strategy = "interior"  # no prediction after all: the interior masters go on
        try:
            objective, values, duals = master.solve("dual" if strategy == "predicted dual" else strategy, checked=strategy in PREDICTED)
        except SolverError as exc:
            if incumbent is None:
                raise
            # Every fallback failed on a later master (seen: squared loss, alpha = 0.9,
            # n = 5000). The last solved master's T is still a valid remap: return it
            # with its certified bounds instead of nothing.
            failure = str(exc)
            break
        incumbent, polished, exact_pricing = values, False, None
        solved_by, strategy = strategy, resolve
        if solved_by == "interior":
            # no basis to warm-start from: more interior masters, then HiGHS from scratch
            interior_rounds += 1
            # where a basis can be predicted, it is tried after the first interior master
            more = interior_rounds < INTERIOR_ROUNDS and (extension_tried or not extendable)
            strategy = "interior" if more else "dualized ipm"
        allowed = tol * abs(objective) + ABSOLUTE_GAP
        if round_number == 1:
            # Most first masters are already optimal (every alpha <= 0.5 in the benchmark)
            # and their closing certificate needs the basis's exact duals: try those first.
            polished = polish()
        if objective - best_lower > allowed:
            # HiGHS's own duals choose the new columns: pricing with the exact ones can
            # stall at a gap just above the tolerance (a smooth table, n = 150, alpha =
            # 0.1: 1.007e-9 with no column pricing out)
            pricing = price(duals)
            if not polished and objective - best_lower <= EXACT_DUALS_WITHIN * allowed:
                # close: the basis's exact duals may close the gap HiGHS's tolerances leave
                polished = polish()
            if solved_by == "interior" and objective - best_lower <= EXACT_DUALS_WITHIN * allowed:
                # an interior optimum is only accurate to ~1e-10: the stopping test takes
                # the exact loss of the remap that would be returned
                objective = exact_upper(values)
        if objective - best_lower <= allowed and solved_by != "interior" and (master.form.gapped or solved_by in PREDICTED):
            # HiGHS's optimum can be off where chains carry tiny values across a gap of S
            # (n = 119, alpha = 0.75, squared, S = both ends: a master optimum reported below
            # the lower bound, and the remap's exact loss 4.4e-8 above it), so before
            # stopping, the exact loss of the remap that would be returned is checked
            # (only there: it costs ~1 s at n = 10,000). So is the dual simplex's from a
            # predicted basis: its updated factors can drift (S = all, squared, alpha = 0.9,
            # n = 10,000, after one interior master: "optimal" 1,191 pivots on, and the
            # basis's exact remap 1.9e-3 over on one row; afresh, 2 more pivots and 0.7 s).
            if not polished:  # the basis's exact remap (its duals are priced only if needed)
                exact_solution = master.basic_solution()
                if exact_solution is not None:
                    incumbent, polished = exact_solution[0], True
            exact = exact_upper(incumbent)
            if exact - best_lower > SETTLED_FACTOR * allowed:
                objective = exact
                pricing = price(duals)
                if solved_by == "predicted dual" and not refactored:
                    refactored, strategy = True, "refactored dual"
        record = {"round": round_number, "columns": master.t_rows.size, "master": objective, "lower": best_lower}
        history.append(record)
        if progress is not None:
            progress(record)
        if objective - best_lower <= allowed:
            break
        if strategy == "refactored dual":
            continue  # the same master again, before any column is added
        added = add_priced(pricing, allowed)
        if added == 0 and master.form.gapped and exact_pricing is None and polish():
            # HiGHS's duals price nothing out, yet the gap is open: the basis's exact duals
            # may (S in two clusters bridged, n = 75, alpha = 0.6, squared: stuck 2e-7 apart)
            added = add_priced(exact_pricing, allowed)
        if added == 0 and solved_by == "interior" and not extension_tried and plannable:
            # the interior masters stalled short of the bound: the predicted basis before
            # HiGHS from scratch, as after INTERIOR_ROUNDS of them
            strategy = "dualized ipm"
            continue
        if added == 0:
            # No column can raise the bound by more than the tolerance, yet the bounds
            # disagree: the master is optimal only to HiGHS's dual tolerance (1e-10 on the
            # scaled LP; absolute loss, n = 200, alpha = 0.1 stops 5e-11 short with columns
            # worth 5e-13 pricing out). Within SETTLED_FACTOR x the tolerance that is
            # accepted; otherwise an interior-point solve from scratch, at most twice.
            if refreshes == 2 or objective - best_lower <= SETTLED_FACTOR * allowed:
                break
            refreshes += 1
            # after an IPM + crossover, first the warm primal simplex from its basis (the
            # same IPM again gave the same point: bridged S = both ends, 2 x 4.3 s for nothing)
            strategy = "primal" if refreshes == 1 and master.form.gapped and solved_by.endswith("ipm") and master.has_basis else "ipm"
    if not (failure or polished):
        exact = master.basic_solution()
        incumbent = incumbent if exact is None else exact[0]
    # columns added after the last solved master are 0
    values = np.concatenate([incumbent, np.zeros(master.t_rows.size - incumbent.size)])
    mechanism, losses = evaluated(problem, master.remap(values))
    return ColumnGenerationResult(
        mechanism=mechanism,
        lower_bound=best_lower,
        upper_bound=float(losses.max()),
        rounds=len(history),
        columns=master.t_rows.size,
        master_objective=objective,
        row_losses=losses,
        seconds=time.perf_counter() - start,
        history=history,
        master_failure=failure,
        multipliers=best_multipliers,
    )
