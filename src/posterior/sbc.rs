//! Simulation-based calibration (SBC): the ranks of true parameter values among posterior
//! draws, the ECDF-difference test of their uniformity with simultaneous 95 % bands, and
//! VSBC's symmetry test for variational approximations.
//!
//! Input: per simulation, a true value and the draws of the fit to data simulated from it
//! (or, for VSBC, Pr_q(θ < θ_true) per simulation). Output: plain values, [`EcdfTest`] and
//! [`VsbcTest`]. Randomness only breaks ties in [`rank`], from a generator the caller
//! passes in; everything else is deterministic.
//!
//! # Ranks
//! The rank of θ_true among L draws is #{draws < θ_true}, plus a uniform integer in
//! 0..=#{draws = θ_true} (ties broken at random, Talts et al. 2018); it lies in 0..=L and is
//! uniform on 0..=L when the fits are calibrated and the draws independent. [`thin`] picks
//! L evenly spaced draws and reports the effective sample size, which says whether they
//! are roughly independent (ESS ≥ L).
//!
//! # The ECDF-difference test (Säilynoja, Bürkner & Vehtari 2022)
//! With N ranks on 0..=L, K = min(L + 1, N, max(⌊[`MAX_WORK`] / N⌋, 2)) evaluation points split the
//! L + 1 rank values into K runs: c_i = ⌊i (L + 1) / K⌋ and z_i = c_i / (L + 1), i = 1 … K − 1
//! (z_K = 1 carries no information: every ECDF is 1 there). F̂_i = #{ranks < c_i} / N is the
//! ECDF of the scaled ranks (r + 1)/(L + 1) at z_i; with K = L + 1 this is the SBC R
//! package's convention, and for smaller K the z_i stay the exact uniform probabilities, so
//! the test is exact for the discrete ranks. Under uniformity N F̂_i ~ Binomial(N, z_i) and,
//! given N F̂_{i−1} = m, N F̂_i − m ~ Binomial(N − m, (z_i − z_{i−1}) / (1 − z_{i−1})).
//!
//! At level γ the pointwise interval at z_i holds the counts m whose two tail probabilities
//! P(X ≤ m) and P(X ≥ m), X ~ Binomial(N, z_i), are both ≥ (1 − γ)/2. The probability that a
//! whole uniform ECDF stays inside these intervals (the simultaneous coverage) is computed
//! exactly by the forward recursion over the binomial transitions above ([`band_coverage`]).
//! The coverage only changes where (1 − γ)/2 crosses a tail probability, so γ is found by
//! bisection over those values: the adjusted γ gives the narrowest band whose simultaneous
//! coverage is ≥ 95 % (the paper's optimisation method, solved exactly instead of by a
//! numerical optimiser). Each coverage evaluation sums every binomial row outward from its
//! mode and drops terms below 10⁻²² (the coverage moves by < 10⁻¹⁴), so it costs a few
//! standard deviations per state: the band for N = K = 1000 takes about a second.
//! [`MAX_WORK`] caps N K (the tail tables hold N K numbers) by lowering K for very large N,
//! so no simulation is ever needed.
//!
//! The p-value: with t_obs the smallest tail probability min_i min(P(X_i ≤ N F̂_i),
//! P(X_i ≥ N F̂_i)) of the observed ECDF, p = P(T ≤ t_obs) for the same statistic T of a
//! uniform ECDF, which is 1 minus the coverage of the band {m : both tails > t_obs}. The
//! ranks are `calibrated` when the ECDF stays inside the simultaneous 95 % band, which is
//! the same as p > 0.05 (both are "t_obs ≥ the band's threshold").
//!
//! # VSBC (Yao, Vehtari, Simpson & Gelman 2018)
//! For a symmetric approximation q of a calibrated posterior, p_j = Pr_q(θ < θ_true,j) over
//! the simulations j is symmetric about ½. [`vsbc_test`] compares {p_j} with {1 − p_j} by
//! the two-sample Kolmogorov–Smirnov test, as the paper did: D = sup |F̂_p − F̂_{1−p}| and
//! its exact p-value for two samples of equal size n (Gnedenko & Korolyuk 1951):
//! P(D ≥ h/n) = 2 Σ_{j≥1} (−1)^{j+1} C(2n, n − j h) / C(2n, n). The two samples are not
//! independent, so, as in the paper, the p-value is a yardstick rather than an exact level.
//!
//! # Reference
//! Talts, Betancourt, Simpson, Vehtari & Gelman, "Validating Bayesian inference algorithms
//! with simulation-based calibration", arXiv:1804.06788 (2018); Säilynoja, Bürkner & Vehtari,
//! "Graphical test for discrete uniformity and its applications in goodness-of-fit
//! evaluation and multiple sample comparison", Statistics and Computing 32 (2022); Yao,
//! Vehtari, Simpson & Gelman, "Yes, but did it work?: Evaluating variational inference",
//! ICML 2018; Modrák, Moon, Kim, Bürkner, Huurre, Faltejsková, Gelman & Vehtari,
//! "Simulation-based calibration checking for Bayesian computation: the choice of test
//! quantities shapes sensitivity", Bayesian Analysis (2023).

use std::cmp::Ordering;

use rand::{Rng, RngCore};

use super::mcmc;

/// The simultaneous level of the ECDF band: ranks are flagged when their ECDF leaves it.
pub const LEVEL: f64 = 0.95;

/// The largest N K (simulations × evaluation points) the exact band is computed for; K is
/// lowered below min(L + 1, N) when N K would exceed it (N > 1000 with K = N); the tail
/// tables then take 16 MB.
pub const MAX_WORK: usize = 1_000_000;

/// Relative tolerance under which two tail probabilities count as equal: the same
/// probability computed at z and at 1 − z (a symmetric pair of evaluation points) may
/// differ in the last bits.
const TIE_TOL: f64 = 1e-12;

/// What can go wrong with ranks handed to the test.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// No ranks: no simulation finished.
    #[error("no ranks to test (no simulation finished)")]
    NoRanks,
    /// A rank outside 0..=L.
    #[error("rank {rank} is outside 0..={l}")]
    RankOutOfRange {
        /// The rank.
        rank: usize,
        /// The number of draws L it was taken among.
        l: usize,
    },
    /// Fewer draws than L to thin from.
    #[error("{draws} draws cannot be thinned to {l}")]
    TooFewDraws {
        /// Draws available.
        draws: usize,
        /// Draws asked for.
        l: usize,
    },
}

/// The rank of `truth` among `draws`: #{draws < truth} plus a uniform integer in
/// 0..=#{draws = truth} from `rng` (no random number is drawn without ties). In
/// 0..=draws.len(); a NaN truth or draw is neither below nor equal.
pub fn rank(truth: f64, draws: &[f64], rng: &mut dyn RngCore) -> usize {
    let (mut below, mut equal) = (0, 0);
    for d in draws {
        match d.partial_cmp(&truth) {
            Some(Ordering::Less) => below += 1,
            Some(Ordering::Equal) => equal += 1,
            _ => {}
        }
    }
    if equal == 0 {
        below
    } else {
        below + rng.random_range(0..=equal)
    }
}

/// L draws picked from a longer run, with the run's effective sample size.
#[derive(Debug, Clone, PartialEq)]
pub struct Thinned {
    /// The L draws, in the order of the run.
    pub draws: Vec<f64>,
    /// Bulk ESS of the whole run ([`mcmc::convergence`]); NaN for runs too short to split.
    pub ess: f64,
}

impl Thinned {
    /// Whether the thinned draws are roughly independent: ESS ≥ L (their spacing is then at
    /// least the run's autocorrelation time S / ESS). When not, the driver should draw more
    /// (or thin less) before trusting the ranks: dependent draws make ranks ∪-shaped.
    pub fn independent(&self) -> bool {
        self.ess >= self.draws.len() as f64
    }
}

/// Thin the draws of one quantity, one slice per chain (chains of an MCMC run, or one slice
/// of independent draws), to L draws: the chains are joined and the draws at positions
/// ⌊(j + ½) S / L⌋, j = 0 … L − 1, are kept. Evenly spaced draws are as far apart as L draws
/// can be, so they are the most nearly independent choice; [`Thinned::ess`] says whether that
/// is independent enough.
///
/// # Errors
/// [`Error::TooFewDraws`] when the chains hold fewer than L draws.
pub fn thin(chains: &[&[f64]], l: usize) -> Result<Thinned, Error> {
    let all: Vec<f64> = chains.iter().flat_map(|c| c.iter().copied()).collect();
    let s = all.len();
    if s < l {
        return Err(Error::TooFewDraws { draws: s, l });
    }
    let draws = (0..l).map(|j| all[(2 * j + 1) * s / (2 * l)]).collect();
    Ok(Thinned {
        draws,
        ess: mcmc::convergence(chains).ess_bulk,
    })
}

/// The ranks of one parameter over the simulations.
#[derive(Debug, Clone, PartialEq)]
pub struct SbcParam {
    /// The column name (`tau`, `theta.3`).
    pub name: String,
    /// One rank per simulation, each in 0..=l.
    pub ranks: Vec<usize>,
    /// The number of draws L each rank was taken among.
    pub l: usize,
    /// For VSBC, Pr_q(θ < θ_true) per simulation (in the order of `ranks`), where computed.
    pub vsbc_p: Option<Vec<f64>>,
}

/// The SBC verdict on one parameter: the ECDF test of its ranks and, where computed, VSBC.
#[derive(Debug, Clone, PartialEq)]
pub struct SbcSummary {
    /// The parameter's column name.
    pub name: String,
    /// The ECDF-difference test of its ranks.
    pub ecdf: EcdfTest,
    /// VSBC's symmetry test, when the parameter had `vsbc_p`.
    pub vsbc: Option<VsbcTest>,
}

/// Test every parameter: the ECDF test of its ranks (the band computed once per (N, L)) and
/// VSBC where `vsbc_p` is given.
///
/// # Errors
/// As [`EcdfBand::test`]: a parameter without ranks or with a rank outside 0..=L.
pub fn summarize(params: &[SbcParam]) -> Result<Vec<SbcSummary>, Error> {
    let mut bands: Vec<EcdfBand> = Vec::new();
    let mut out = Vec::with_capacity(params.len());
    for p in params {
        let n = p.ranks.len();
        if n == 0 {
            return Err(Error::NoRanks);
        }
        let band = match bands.iter().position(|b| b.n == n && b.l == p.l) {
            Some(i) => &bands[i],
            None => {
                bands.push(EcdfBand::new(n, p.l));
                bands.last().expect("just pushed")
            }
        };
        out.push(SbcSummary {
            name: p.name.clone(),
            ecdf: band.test(&p.ranks)?,
            vsbc: p.vsbc_p.as_deref().map(vsbc_test),
        });
    }
    Ok(out)
}

/// The simultaneous [`LEVEL`] band for the ECDF of N ranks on 0..=L (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct EcdfBand {
    /// Number of ranks N.
    pub n: usize,
    /// Largest rank L.
    pub l: usize,
    /// Number of evaluation runs K (the band has K − 1 points).
    pub k: usize,
    /// The rank thresholds c_i: F̂_i counts the ranks < c_i.
    pub thresholds: Vec<usize>,
    /// The evaluation points z_i = c_i / (L + 1).
    pub z: Vec<f64>,
    /// Smallest count N F̂_i inside the band, per point.
    pub lower: Vec<usize>,
    /// Largest count N F̂_i inside the band, per point.
    pub upper: Vec<usize>,
    /// The adjusted pointwise level γ: each interval is the central γ interval of
    /// Binomial(N, z_i) (both tails ≥ (1 − γ)/2).
    pub gamma: f64,
    /// The band's exact simultaneous coverage (≥ [`LEVEL`], the smallest such).
    pub coverage: f64,
    tails: Vec<Tails>,
}

/// The ECDF-difference test of one parameter's ranks.
#[derive(Debug, Clone, PartialEq)]
pub struct EcdfTest {
    /// Number of ranks N.
    pub n: usize,
    /// Largest rank L.
    pub l: usize,
    /// Number of evaluation runs K.
    pub k: usize,
    /// The evaluation points z_i, i = 1 … K − 1.
    pub z: Vec<f64>,
    /// F̂_i − z_i, the ECDF difference.
    pub diff: Vec<f64>,
    /// The band's lower edge as an ECDF difference, lower_i / N − z_i.
    pub lower: Vec<f64>,
    /// The band's upper edge as an ECDF difference, upper_i / N − z_i.
    pub upper: Vec<f64>,
    /// The band's adjusted pointwise level γ.
    pub gamma: f64,
    /// P(T ≤ t_obs) for the smallest pointwise tail probability T (module doc).
    pub p_value: f64,
    /// Whether the ECDF stays inside the simultaneous 95 % band (equivalently p > 0.05).
    pub calibrated: bool,
}

/// How a miscalibrated parameter's ECDF difference bends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// Ranks pile up at both ends (∪-shaped histogram): the posteriors are too narrow.
    TooNarrow,
    /// Ranks pile up in the middle (∩-shaped): the posteriors are too wide.
    TooWide,
    /// Ranks are mostly low: the posteriors sit above the true values.
    BiasedHigh,
    /// Ranks are mostly high: the posteriors sit below the true values.
    BiasedLow,
}

impl EcdfTest {
    /// How the ECDF difference bends, for a miscalibrated parameter (`None` when calibrated).
    /// With a and b the mean difference over z ≤ ½ and over z > ½: a shift, (a + b)/2,
    /// against a tilt, (a − b)/2. When the shift is the larger, a positive one (too many low
    /// ranks) is [`Shape::BiasedHigh`], a negative one [`Shape::BiasedLow`]; otherwise a
    /// positive tilt (up first, then down: ranks at both ends) is [`Shape::TooNarrow`], a
    /// negative one [`Shape::TooWide`].
    pub fn shape(&self) -> Option<Shape> {
        if self.calibrated {
            return None;
        }
        let mean = |lo: bool| {
            let v: Vec<f64> = self
                .z
                .iter()
                .zip(&self.diff)
                .filter(|(z, _)| (**z <= 0.5) == lo)
                .map(|(_, d)| *d)
                .collect();
            v.iter().sum::<f64>() / v.len().max(1) as f64
        };
        let (a, b) = (mean(true), mean(false));
        let (shift, tilt) = ((a + b) / 2.0, (a - b) / 2.0);
        Some(match () {
            _ if shift.abs() >= tilt.abs() && shift > 0.0 => Shape::BiasedHigh,
            _ if shift.abs() >= tilt.abs() => Shape::BiasedLow,
            _ if tilt > 0.0 => Shape::TooNarrow,
            _ => Shape::TooWide,
        })
    }
}

/// Test N ranks on 0..=L for uniformity (builds the band; to test many parameters with the
/// same N and L, build one [`EcdfBand`] and call [`EcdfBand::test`]).
///
/// # Errors
/// As [`EcdfBand::test`].
pub fn ecdf_test(ranks: &[usize], l: usize) -> Result<EcdfTest, Error> {
    if ranks.is_empty() {
        return Err(Error::NoRanks);
    }
    EcdfBand::new(ranks.len(), l).test(ranks)
}

/// P(X ≤ m) and P(X ≥ m) for X ~ Binomial(N, z), m = 0 … N.
#[derive(Debug, Clone, PartialEq)]
struct Tails {
    below: Vec<f64>,
    above: Vec<f64>,
}

impl Tails {
    fn new(n: usize, z: f64, log_fact: &[f64]) -> Tails {
        let pmf: Vec<f64> = (0..=n).map(|m| binom_pmf(m, n, z, log_fact)).collect();
        let mut below = pmf.clone();
        for m in 1..=n {
            below[m] += below[m - 1];
        }
        let mut above = pmf;
        for m in (0..n).rev() {
            above[m] += above[m + 1];
        }
        Tails { below, above }
    }

    /// min(P(X ≤ m), P(X ≥ m)).
    fn smaller(&self, m: usize) -> f64 {
        self.below[m].min(self.above[m])
    }

    /// The counts whose two tails are ≥ τ (`inclusive`) or > τ, as (lo, hi); lo > hi when
    /// there are none.
    fn interval(&self, tau: f64, inclusive: bool) -> (usize, usize) {
        let keep = |t: f64| {
            if inclusive {
                t >= tau * (1.0 - TIE_TOL)
            } else {
                t > tau * (1.0 + TIE_TOL)
            }
        };
        let n = self.below.len() - 1;
        let lo = (0..=n).find(|&m| keep(self.below[m])).unwrap_or(n + 1);
        let hi = (0..=n).rev().find(|&m| keep(self.above[m])).unwrap_or(0);
        (lo, hi)
    }
}

impl EcdfBand {
    /// The simultaneous [`LEVEL`] band for N ranks on 0..=L.
    ///
    /// # Panics
    /// If N is 0 ([`ecdf_test`] and [`summarize`] check).
    pub fn new(n: usize, l: usize) -> EcdfBand {
        EcdfBand::with_level(n, l, LEVEL)
    }

    /// The band with simultaneous coverage ≥ `level` (the narrowest such).
    ///
    /// # Panics
    /// If N is 0 or `level` is not in (0, 1): the caller's constants.
    pub fn with_level(n: usize, l: usize, level: f64) -> EcdfBand {
        assert!(n > 0, "the band needs at least one rank");
        assert!(level > 0.0 && level < 1.0, "level {level} outside (0, 1)");
        let k = (l + 1).min(n).min((MAX_WORK / n).max(2));
        let thresholds: Vec<usize> = (1..k).map(|i| i * (l + 1) / k).collect();
        let z: Vec<f64> = thresholds.iter().map(|&c| c as f64 / (l + 1) as f64).collect();
        let log_fact = log_factorials(n);
        let tails: Vec<Tails> = z.iter().map(|&zi| Tails::new(n, zi, &log_fact)).collect();
        let mut band = EcdfBand {
            n,
            l,
            k,
            thresholds,
            z,
            lower: Vec::new(),
            upper: Vec::new(),
            gamma: 1.0,
            coverage: 1.0,
            tails,
        };
        band.solve(level, &log_fact);
        band
    }

    /// Bisection over the distinct tail probabilities for the largest threshold τ whose
    /// band {both tails ≥ τ} still covers `level`.
    fn solve(&mut self, level: f64, log_fact: &[f64]) {
        let mut cands: Vec<f64> = self
            .tails
            .iter()
            .flat_map(|t| (0..=self.n).map(|m| t.smaller(m)))
            .filter(|t| *t > 0.0 && *t <= 0.5)
            .collect();
        cands.sort_by(f64::total_cmp);
        cands.dedup_by(|a, b| *a <= *b * (1.0 + TIE_TOL));
        let cover = |tau: f64| {
            let (lo, hi) = self.intervals(tau, true);
            band_coverage_with(self.n, &self.z, &lo, &hi, log_fact)
        };
        // The coverage falls as τ grows: find the last candidate that still covers `level`.
        let (mut good, mut a, mut b) = (None, 0usize, cands.len());
        while a < b {
            let mid = (a + b) / 2;
            if cover(cands[mid]) >= level {
                good = Some(mid);
                a = mid + 1;
            } else {
                b = mid;
            }
        }
        let tau = good.map_or(0.0, |g| cands[g]);
        let (lower, upper) = self.intervals(tau, true);
        self.coverage = band_coverage_with(self.n, &self.z, &lower, &upper, log_fact);
        self.gamma = 1.0 - 2.0 * tau;
        self.lower = lower;
        self.upper = upper;
    }

    fn intervals(&self, tau: f64, inclusive: bool) -> (Vec<usize>, Vec<usize>) {
        self.tails.iter().map(|t| t.interval(tau, inclusive)).unzip()
    }

    /// Test N ranks (N = `self.n`) against the band: the ECDF difference, the band as ECDF
    /// differences, the p-value and the verdict.
    ///
    /// # Errors
    /// [`Error::NoRanks`] for no ranks; [`Error::RankOutOfRange`] for a rank above L.
    ///
    /// # Panics
    /// If the number of ranks is not the band's N (the caller built the band for them).
    pub fn test(&self, ranks: &[usize]) -> Result<EcdfTest, Error> {
        if ranks.is_empty() {
            return Err(Error::NoRanks);
        }
        assert_eq!(ranks.len(), self.n, "the band was built for {} ranks", self.n);
        if let Some(&rank) = ranks.iter().find(|&&r| r > self.l) {
            return Err(Error::RankOutOfRange { rank, l: self.l });
        }
        let counts = self.counts(ranks);
        let nf = self.n as f64;
        let t_obs = counts
            .iter()
            .zip(&self.tails)
            .map(|(&m, t)| t.smaller(m))
            .fold(f64::INFINITY, f64::min);
        let calibrated = counts
            .iter()
            .zip(self.lower.iter().zip(&self.upper))
            .all(|(m, (lo, hi))| lo <= m && m <= hi);
        let p_value = if counts.is_empty() {
            1.0
        } else {
            let (lo, hi) = self.intervals(t_obs, false);
            let log_fact = log_factorials(self.n);
            (1.0 - band_coverage_with(self.n, &self.z, &lo, &hi, &log_fact)).clamp(0.0, 1.0)
        };
        let diff_of = |m: usize, z: f64| m as f64 / nf - z;
        Ok(EcdfTest {
            n: self.n,
            l: self.l,
            k: self.k,
            z: self.z.clone(),
            diff: counts.iter().zip(&self.z).map(|(&m, &z)| diff_of(m, z)).collect(),
            lower: self
                .lower
                .iter()
                .zip(&self.z)
                .map(|(&m, &z)| diff_of(m, z))
                .collect(),
            upper: self
                .upper
                .iter()
                .zip(&self.z)
                .map(|(&m, &z)| diff_of(m, z))
                .collect(),
            gamma: self.gamma,
            p_value,
            calibrated,
        })
    }

    /// N F̂_i = #{ranks < c_i} per evaluation point.
    fn counts(&self, ranks: &[usize]) -> Vec<usize> {
        let mut hist = vec![0usize; self.l + 2];
        for &r in ranks {
            hist[r + 1] += 1;
        }
        for r in 1..hist.len() {
            hist[r] += hist[r - 1];
        }
        // hist[c] = #{ranks < c}
        self.thresholds.iter().map(|&c| hist[c]).collect()
    }
}

/// The counts of the central γ interval of Binomial(N, z_i) at each point, as scipy's
/// `binom.interval(γ, N, z)`: the smallest m with P(X ≤ m) ≥ (1 − γ)/2 and the smallest m
/// with P(X ≤ m) ≥ (1 + γ)/2.
pub fn pointwise_band(n: usize, z: &[f64], gamma: f64) -> (Vec<usize>, Vec<usize>) {
    let log_fact = log_factorials(n);
    let (a, b) = ((1.0 - gamma) / 2.0, (1.0 + gamma) / 2.0);
    z.iter()
        .map(|&zi| {
            let t = Tails::new(n, zi, &log_fact);
            let first = |q: f64| (0..=n).find(|&m| t.below[m] >= q).unwrap_or(n);
            (first(a), first(b))
        })
        .unzip()
}

/// The probability that the ECDF of N independent uniform values stays inside the band
/// `lower[i] ≤ N F̂(z_i) ≤ upper[i]` at every point of the increasing `z` (in (0, 1]): the
/// exact forward recursion over Binomial(N − m, (z_i − z_{i−1}) / (1 − z_{i−1})) steps.
///
/// # Panics
/// If the three slices differ in length.
pub fn band_coverage(n: usize, z: &[f64], lower: &[usize], upper: &[usize]) -> f64 {
    band_coverage_with(n, z, lower, upper, &log_factorials(n))
}

fn band_coverage_with(n: usize, z: &[f64], lower: &[usize], upper: &[usize], log_fact: &[f64]) -> f64 {
    assert!(
        z.len() == lower.len() && z.len() == upper.len(),
        "one interval per point"
    );
    // prob[j] = P(inside so far and N F̂ = from + j)
    let (mut from, mut prob) = (0usize, vec![1.0]);
    let mut z_prev = 0.0;
    for ((&zi, &lo), &hi) in z.iter().zip(lower).zip(upper) {
        let hi = hi.min(n);
        if lo > hi {
            return 0.0;
        }
        let q = ((zi - z_prev) / (1.0 - z_prev)).clamp(0.0, 1.0);
        let mut next = vec![0.0; hi - lo + 1];
        for (j, &p) in prob.iter().enumerate().filter(|(_, p)| **p >= CUT) {
            let m = from + j;
            if m <= hi {
                step(&mut next[..], lo, m, p, q, (n - m, hi - m), log_fact);
            }
        }
        (from, prob, z_prev) = (lo, next, zi);
    }
    prob.iter().sum()
}

/// Contributions p · P(K = k) below this are dropped: each Binomial row is summed outward
/// from its mode and stops there, so the coverage loses at most ~(N + 1) K · 10² · CUT
/// (< 10⁻¹⁴ for N K ≤ [`MAX_WORK`]) and the work per row is a few standard deviations.
const CUT: f64 = 1e-22;

/// Add p · P(K = k), K ~ Binomial(n_left, q), to `next[m + k − lo]` for k from
/// max(lo − m, 0) to min(`k_hi`.1, n_left), where the terms are not negligible.
fn step(
    next: &mut [f64],
    lo: usize,
    m: usize,
    p: f64,
    q: f64,
    (n_left, k_hi): (usize, usize),
    log_fact: &[f64],
) {
    let k0 = lo.saturating_sub(m);
    let k1 = k_hi.min(n_left);
    if k0 > k1 {
        return;
    }
    let at = |k: usize| m + k - lo;
    if q <= 0.0 || q >= 1.0 {
        let k = if q <= 0.0 { 0 } else { n_left };
        if (k0..=k1).contains(&k) {
            next[at(k)] += p;
        }
        return;
    }
    // The mode of the binomial, or the end of the range nearest it: terms fall away from it.
    let mode = (((n_left + 1) as f64 * q).floor() as usize).clamp(k0, k1);
    let f_mode = binom_pmf(mode, n_left, q, log_fact);
    next[at(mode)] += p * f_mode;
    let odds = q / (1.0 - q);
    let (mut f, mut k) = (f_mode, mode);
    while k < k1 {
        f *= (n_left - k) as f64 / (k + 1) as f64 * odds;
        k += 1;
        if p * f < CUT {
            break;
        }
        next[at(k)] += p * f;
    }
    let (mut f, mut k) = (f_mode, mode);
    while k > k0 {
        f *= k as f64 / (n_left - k + 1) as f64 / odds;
        k -= 1;
        if p * f < CUT {
            break;
        }
        next[at(k)] += p * f;
    }
}

/// ln j! for j = 0 … n, by summing logs.
fn log_factorials(n: usize) -> Vec<f64> {
    let mut out = vec![0.0; n + 1];
    for j in 1..=n {
        out[j] = out[j - 1] + (j as f64).ln();
    }
    out
}

/// P(X = k) for X ~ Binomial(n, q), from the log-factorial table.
fn binom_pmf(k: usize, n: usize, q: f64, log_fact: &[f64]) -> f64 {
    if k > n {
        return 0.0;
    }
    if q <= 0.0 {
        return f64::from(u8::from(k == 0));
    }
    if q >= 1.0 {
        return f64::from(u8::from(k == n));
    }
    let log_c = log_fact[n] - log_fact[k] - log_fact[n - k];
    (log_c + k as f64 * q.ln() + (n - k) as f64 * (-q).ln_1p()).exp()
}

/// VSBC's symmetry test of one parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VsbcTest {
    /// Number of simulations n.
    pub n: usize,
    /// The two-sample Kolmogorov–Smirnov statistic D between {p_j} and {1 − p_j}.
    pub statistic: f64,
    /// Its exact two-sample p-value P(D ≥ d) for samples of size n.
    pub p_value: f64,
}

/// VSBC: the two-sample KS test of p_j = Pr_q(θ < θ_true,j) against 1 − p_j (module doc). No
/// values give D = 0 and p = 1.
pub fn vsbc_test(p: &[f64]) -> VsbcTest {
    let n = p.len();
    let mut a: Vec<f64> = p.to_vec();
    let mut b: Vec<f64> = p.iter().map(|v| 1.0 - v).collect();
    a.sort_by(f64::total_cmp);
    b.sort_by(f64::total_cmp);
    let statistic = ks_statistic(&a, &b);
    let h = (statistic * n as f64).round() as usize;
    VsbcTest {
        n,
        statistic,
        p_value: ks_equal_sizes_p_value(n, h),
    }
}

/// sup_x |F̂_a(x) − F̂_b(x)| of two sorted samples, over every value of either.
fn ks_statistic(a: &[f64], b: &[f64]) -> f64 {
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if a.is_empty() || b.is_empty() {
        return 0.0;
    }
    let (mut i, mut j, mut d) = (0, 0, 0.0f64);
    while i < a.len() || j < b.len() {
        let x = match (a.get(i), b.get(j)) {
            (Some(&u), Some(&v)) => u.min(v),
            (Some(&u), None) => u,
            (None, Some(&v)) => v,
            (None, None) => unreachable!("the loop condition"),
        };
        while i < a.len() && a[i] <= x {
            i += 1;
        }
        while j < b.len() && b[j] <= x {
            j += 1;
        }
        d = d.max((i as f64 / na - j as f64 / nb).abs());
    }
    d
}

/// P(D ≥ h/n) for the two-sample KS statistic of two samples of size n:
/// 2 Σ_{j≥1} (−1)^{j+1} C(2n, n − j h) / C(2n, n), clamped to [0, 1].
fn ks_equal_sizes_p_value(n: usize, h: usize) -> f64 {
    if h == 0 || n == 0 {
        return 1.0;
    }
    let log_fact = log_factorials(2 * n);
    let mut sum = 0.0;
    let mut sign = 1.0;
    let mut j = 1;
    while j * h <= n {
        let log_ratio = 2.0 * log_fact[n] - log_fact[n - j * h] - log_fact[n + j * h];
        sum += sign * log_ratio.exp();
        sign = -sign;
        j += 1;
    }
    (2.0 * sum).clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests;
