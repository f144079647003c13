//! What a report says about MCMC draws (nuts): R̂ and ESS per column, divergences,
//! tree-depth hits and E-BFMI, with the warnings Stan gives.
//!
//! Input: the sampler's [`Chains`] and the constrained draws (draws × columns, in chain
//! order). Output: an [`McmcReport`] the renderers print, and its warnings as notes.

use crate::posterior::mcmc::{convergence, Convergence, ESS_PER_CHAIN_OK, RHAT_OK};
use crate::posterior::{Chains, DrawStats};
use nalgebra::DMatrix;

/// E-BFMI below this means the momentum resampling explores the energy poorly (Stan's
/// threshold).
pub const EBFMI_OK: f64 = 0.3;

/// The sampler's numbers and the convergence diagnostics of one MCMC run.
#[derive(Debug, Clone, PartialEq)]
pub struct McmcReport {
    /// Draws kept per chain.
    pub lengths: Vec<usize>,
    /// Warm-up iterations per chain.
    pub warmup: usize,
    /// The largest tree depth allowed.
    pub max_depth: u64,
    /// CmdStan's sampler columns per draw, in the order of the draws.
    pub stats: Vec<DrawStats>,
    /// R̂ and bulk/tail ESS per report column.
    pub convergence: Vec<Convergence>,
    /// Draws after warm-up whose trajectory diverged.
    pub divergences: usize,
    /// Draws after warm-up that stopped at `max_depth`.
    pub depth_hits: usize,
    /// E-BFMI per chain (NaN for a chain with fewer than 2 draws).
    pub ebfmi: Vec<f64>,
}

impl McmcReport {
    /// The report of `chains`, with R̂ and ESS of every column of `draws` (draws × columns,
    /// rows in the same chain order).
    pub fn new(chains: &Chains, draws: &DMatrix<f64>) -> McmcReport {
        let convergence = draws
            .column_iter()
            .map(|col| {
                let col: Vec<f64> = col.iter().copied().collect();
                let per = per_chain(&col, &chains.lengths);
                convergence(&per)
            })
            .collect();
        let energies: Vec<f64> = chains.stats.iter().map(|s| s.energy).collect();
        McmcReport {
            lengths: chains.lengths.clone(),
            warmup: chains.warmup,
            max_depth: chains.max_depth,
            stats: chains.stats.clone(),
            convergence,
            divergences: chains.stats.iter().filter(|s| s.divergent).count(),
            depth_hits: chains
                .stats
                .iter()
                .filter(|s| s.treedepth >= chains.max_depth)
                .count(),
            ebfmi: per_chain(&energies, &chains.lengths)
                .iter()
                .map(|e| ebfmi(e))
                .collect(),
        }
    }

    /// The largest R̂ over the columns (NaN when none is finite).
    pub fn max_rhat(&self) -> f64 {
        self.convergence
            .iter()
            .map(|c| c.rhat)
            .filter(|r| r.is_finite())
            .fold(f64::NAN, f64::max)
    }

    /// Whether the run shows a problem Stan would warn about: R̂ > 1.01 or divergences.
    pub fn troubled(&self) -> bool {
        self.max_rhat() > RHAT_OK || self.divergences > 0
    }

    /// The warnings, in Stan's order: divergences, tree depth, E-BFMI, R̂, ESS.
    pub fn warnings(&self, columns: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        let total: usize = self.lengths.iter().sum();
        if self.divergences > 0 {
            out.push(format!(
                "{} of {total} draws after warm-up DIVERGED: the sampler could not follow the \
                 posterior's curvature (a funnel or a sharp ridge), so the draws may be biased. \
                 Raise `target_accept` (e.g. 0.95 or 0.99) or reparameterise (non-centred)",
                self.divergences
            ));
        }
        if self.depth_hits > 0 {
            out.push(format!(
                "{} of {total} draws stopped at the largest tree depth (`max_depth = {}`): \
                 the trajectories were cut short, which costs efficiency, not correctness; \
                 raise `max_depth`",
                self.depth_hits, self.max_depth
            ));
        }
        let low: Vec<String> = self
            .ebfmi
            .iter()
            .enumerate()
            .filter(|(_, e)| **e < EBFMI_OK)
            .map(|(c, e)| format!("chain {} ({e:.2})", c + 1))
            .collect();
        if !low.is_empty() {
            out.push(format!(
                "E-BFMI below {EBFMI_OK} in {}: the momentum resampling explores the energy \
                 poorly; reparameterise",
                low.join(", ")
            ));
        }
        let worst = |f: fn(&Convergence) -> f64, bad: &dyn Fn(f64) -> bool, rev: bool| {
            let mut hits: Vec<(f64, &str)> = self
                .convergence
                .iter()
                .zip(columns)
                .map(|(c, n)| (f(c), n.as_str()))
                .filter(|(v, _)| bad(*v))
                .collect();
            hits.sort_by(|a, b| {
                if rev {
                    b.0.total_cmp(&a.0)
                } else {
                    a.0.total_cmp(&b.0)
                }
            });
            hits
        };
        let rhat = worst(|c| c.rhat, &|v| v > RHAT_OK, true);
        if let Some((v, name)) = rhat.first() {
            out.push(format!(
                "R̂ = {v:.3} > {RHAT_OK} for `{name}`{}: the CHAINS DISAGREE, so these draws \
                 are not yet from the posterior. Run longer (`warmup`, `draws`), raise \
                 `target_accept`, or reparameterise",
                more(rhat.len())
            ));
        }
        let chains = self.lengths.iter().filter(|l| **l > 0).count().max(1) as f64;
        let min_ess = ESS_PER_CHAIN_OK * chains;
        let ess = worst(|c| c.ess_bulk.min(c.ess_tail), &|v| v < min_ess, false);
        if let Some((v, name)) = ess.first() {
            out.push(format!(
                "effective sample size {v:.0} for `{name}`{} is below {min_ess:.0} (100 per \
                 chain): means and quantiles are unreliable; run more `draws`",
                more(ess.len())
            ));
        }
        out
    }
}

fn more(n: usize) -> String {
    if n > 1 {
        format!(" (and {} more)", n - 1)
    } else {
        String::new()
    }
}

/// `x` cut into consecutive pieces of the given lengths.
fn per_chain<'a>(x: &'a [f64], lengths: &[usize]) -> Vec<&'a [f64]> {
    let mut out = Vec::with_capacity(lengths.len());
    let mut start = 0;
    for &n in lengths {
        out.push(&x[start..start + n]);
        start += n;
    }
    out
}

/// Energy Bayesian fraction of missing information: Σ (E_n − E_{n−1})² / Σ (E_n − Ē)².
fn ebfmi(energy: &[f64]) -> f64 {
    if energy.len() < 2 {
        return f64::NAN;
    }
    let mean = energy.iter().sum::<f64>() / energy.len() as f64;
    let num: f64 = energy.windows(2).map(|w| (w[1] - w[0]).powi(2)).sum();
    let den: f64 = energy.iter().map(|e| (e - mean).powi(2)).sum();
    num / den
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(divergent: bool, treedepth: u64, energy: f64) -> DrawStats {
        DrawStats {
            lp: 0.0,
            accept_stat: 0.9,
            stepsize: 0.5,
            treedepth,
            n_leapfrog: 3,
            divergent,
            energy,
        }
    }

    #[test]
    fn divergences_depth_hits_and_disagreeing_chains_are_warned_about() {
        // two chains of 8 draws, the second shifted far away
        let lengths = vec![8, 8];
        let mut st: Vec<DrawStats> = (0..16).map(|i| stats(false, 2, (i % 3) as f64)).collect();
        st[3].divergent = true;
        st[5].treedepth = 4;
        let chains = Chains {
            draws: DMatrix::zeros(1, 16),
            lengths,
            stats: st,
            warmup: 10,
            max_depth: 4,
        };
        let col: Vec<f64> = (0..16)
            .map(|i| {
                if i < 8 {
                    i as f64 * 0.1
                } else {
                    10.0 + i as f64 * 0.1
                }
            })
            .collect();
        let draws = DMatrix::from_column_slice(16, 1, &col);
        let r = McmcReport::new(&chains, &draws);
        assert_eq!((r.divergences, r.depth_hits), (1, 1));
        assert!(r.troubled());
        let w = r.warnings(&["mu".to_string()]).join("\n");
        assert!(w.contains("DIVERGED") && w.contains("max_depth = 4"), "{w}");
        assert!(w.contains("CHAINS DISAGREE") && w.contains("`mu`"), "{w}");
        assert!(w.contains("effective sample size"), "{w}");
    }
}
