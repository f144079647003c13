//! The driver of one `pmfvb` run: its particles drawn from the start and decoupled into
//! mean-field blocks, the sweeps with their stopping rule, the curvature refreshes, the bound
//! estimate, and the posterior.
//!
//! Input: a model, the settings, the blocks, the starting Gaussian and θ. Output: a
//! [`Posterior`] of particles with the run's trace and notes. A run stops when `patience`
//! smoothing windows in a row fail to beat the best earlier window by `tol`, at `max_iters`,
//! or when the observer asks; the moves of one block are in `moves.rs`.

use super::curvature::{curvature_root, Seeds};
use super::moves::index_below;
use super::{cross_affordable, Run, Settings};
use crate::density::{LogDensity, Want};
use crate::infer::Observer;
use crate::posterior::{Approximation, Gaussian, IterRecord, Posterior};
use nalgebra::{DMatrix, DVector};
use rand::RngCore;

/// Particles whose Hessians are averaged for the curvature preconditioner.
const CURVATURE_PARTICLES: usize = 8;

/// Whether each of the last `patience` window means fails to exceed the best window mean
/// before them by `tol` (false while there are not more than `patience` windows).
fn stalled(means: &[f64], tol: f64, patience: usize) -> bool {
    if means.len() <= patience {
        return false;
    }
    let (before, recent) = means.split_at(means.len() - patience);
    let best = before.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    recent.iter().all(|&m| m - best < tol)
}

impl<'a> Run<'a> {
    pub(super) fn new(
        model: &'a dyn LogDensity,
        settings: &'a Settings,
        blocks: Vec<Vec<usize>>,
        start: &Gaussian,
        theta: DVector<f64>,
        curvature: bool,
        rng: &mut dyn RngCore,
    ) -> Self {
        let mut x = start.draw(settings.particles, rng);
        decouple_blocks(&mut x, &blocks, rng);
        let precond = start.cov().diagonal().map(|v| v.max(1e-12));
        let sq_grad = precond.map(|v| 1.0 / v);
        let metropolis = settings.algorithm == 1 && settings.metropolis;
        let n_blocks = blocks.len();
        let mut run = Run {
            model,
            settings,
            blocks,
            x,
            precond,
            sq_grad,
            roots: None,
            seeds: None,
            cross: None,
            metropolis,
            steps: vec![settings.step; n_blocks],
            accept: vec![f64::NAN; n_blocks],
            factors: vec![vec![1.0; settings.particles]; n_blocks],
            theta,
            trace: Vec::new(),
            smoothed: Vec::new(),
            converged: false,
            stopped_by_observer: false,
        };
        // Metropolis-adjusted steps need the curvature preconditioner: with diag Σ_LA (the
        // marginal variances, larger than the conditional ones) large accepted steps
        // overshoot each block's conditional mean, and through the random pairing of the
        // blocks' particles outliers then grow from sweep to sweep.
        if (curvature || metropolis) && settings.algorithm == 1 {
            run.refresh_roots();
        }
        run
    }

    /// The full run after a warm-up: its particles repeated up to `settings.particles`
    /// (each block's independently shuffled), its preconditioner and step sizes.
    pub(super) fn resume(
        model: &'a dyn LogDensity,
        settings: &'a Settings,
        warm: Run<'_>,
        rng: &mut dyn RngCore,
    ) -> Run<'a> {
        let (d, pw) = (warm.x.nrows(), warm.x.ncols());
        let mut x = DMatrix::from_fn(d, settings.particles, |c, i| warm.x[(c, i % pw)]);
        decouple_blocks(&mut x, &warm.blocks, rng);
        let n_blocks = warm.blocks.len();
        Run {
            model,
            settings,
            blocks: warm.blocks,
            x,
            precond: warm.precond,
            sq_grad: warm.sq_grad,
            roots: warm.roots,
            seeds: warm.seeds,
            cross: warm.cross,
            metropolis: warm.metropolis,
            steps: warm.steps,
            accept: vec![f64::NAN; n_blocks],
            factors: vec![vec![1.0; settings.particles]; n_blocks],
            theta: warm.theta,
            trace: Vec::new(),
            smoothed: Vec::new(),
            converged: false,
            stopped_by_observer: false,
        }
    }

    /// Recompute each block's curvature preconditioner: the Hessian of E_q[log p̃],
    /// estimated as the mean Hessian at [`CURVATURE_PARTICLES`] particles (a Hessian at
    /// the particle mean would miss E_q[1/σ²] ≥ 1/E_q[σ]² and step too far).
    fn refresh_roots(&mut self) {
        let h = self.mean_block_hessian();
        let m = self.settings.subset.min(self.x.ncols());
        let affordable = cross_affordable(self.x.nrows(), self.blocks.len(), m);
        let wanted = self.settings.control_variate && self.seeds.is_none() && affordable;
        self.cross = wanted.then(|| h.clone());
        let roots = self
            .blocks
            .iter()
            .map(|coords| curvature_root(&h, coords, &self.x))
            .collect();
        self.roots = Some(roots);
    }

    /// The mean Hessian at the first [`CURVATURE_PARTICLES`] particles (those with a finite
    /// one), exact inside the blocks: full Hessians at the first call, which also look for
    /// a sparse pattern, and after that products with the seed vectors when one was found.
    pub(super) fn mean_block_hessian(&mut self) -> DMatrix<f64> {
        let k = CURVATURE_PARTICLES.min(self.x.ncols());
        let d = self.x.nrows();
        let finite = |m: &DMatrix<f64>| m.iter().all(|v| v.is_finite());
        let mean = |sum: DMatrix<f64>, n: usize| if n > 0 { sum / n as f64 } else { sum };
        if let Some(seeds) = &self.seeds {
            let v = seeds.vectors();
            let (mut sum, mut n) = (DMatrix::zeros(d, v.ncols()), 0);
            for i in 0..k {
                let hv = self
                    .model
                    .hessian_times(&self.theta, &self.x.column(i).into_owned(), v);
                if finite(&hv) {
                    sum += hv;
                    n += 1;
                }
            }
            return seeds.recover(&mean(sum, n));
        }
        let hessians: Vec<DMatrix<f64>> = (0..k)
            .map(|i| self.model.hessian(&self.theta, &self.x.column(i).into_owned()))
            .filter(finite)
            .collect();
        self.seeds = Seeds::from_hessians(&hessians, &self.blocks);
        let n = hessians.len();
        mean(hessians.into_iter().fold(DMatrix::zeros(d, d), |a, h| a + h), n)
    }

    pub(super) fn sweeps(&mut self, rng: &mut dyn RngCore, obs: &mut dyn Observer) {
        for iter in 1..=self.settings.max_iters {
            let grad_norm = self.sweep(rng);
            let objective = self.bound_estimate();
            let record = IterRecord {
                iter,
                objective,
                grad_norm,
            };
            self.trace.push(record);
            if !obs.iteration(&record) {
                self.stopped_by_observer = true;
                return;
            }
            if iter.is_multiple_of(self.settings.window) {
                if self.window_done() {
                    self.converged = true;
                    return;
                }
                if self.roots.is_some() {
                    self.refresh_roots();
                }
            }
        }
    }

    /// Close a smoothing window; true when the smoothed bound stopped improving.
    fn window_done(&mut self) -> bool {
        let w = self.settings.window;
        let last = &self.trace[self.trace.len() - w..];
        let mean = last.iter().map(|r| r.objective).sum::<f64>() / w as f64;
        self.smoothed.push(mean);
        stalled(&self.smoothed, self.settings.tol, self.settings.patience)
    }

    /// One sweep over all blocks; returns the mean norm of the averaged gradients.
    fn sweep(&mut self, rng: &mut dyn RngCore) -> f64 {
        let mut norm = 0.0;
        for j in 0..self.blocks.len() {
            norm += match self.settings.algorithm {
                2 => self.step_block_alg2(j, rng),
                _ => self.step_block_alg1(j, rng),
            };
        }
        norm / self.blocks.len() as f64
    }

    /// Particle mean of log p̃ plus the Gaussian entropy of each block's particles.
    fn bound_estimate(&self) -> f64 {
        let v = self.model.eval(&self.theta, &self.x, Want::VALUE).values;
        let log_p = v.iter().sum::<f64>() / v.len() as f64;
        log_p
            + self
                .blocks
                .iter()
                .map(|b| gaussian_entropy(&self.x, b))
                .sum::<f64>()
    }

    pub(super) fn into_posterior(self, start_notes: Vec<String>) -> Posterior {
        let mut notes = start_notes;
        notes.extend([
            "PSIS k̂ not available: particles have no density".to_string(),
            "bound = particle mean of log p̃ + Gaussian entropy of each block's particle covariance (an estimate, not a bound)".to_string(),
        ]);
        if self.stopped_by_observer {
            notes.push("stopped early on request".to_string());
        } else if !self.converged {
            notes.push(format!(
                "smoothed bound still improving after {} sweeps",
                self.settings.max_iters
            ));
        }
        let objective = self
            .smoothed
            .last()
            .copied()
            .or_else(|| self.trace.last().map(|r| r.objective));
        Posterior {
            method: "pmfvb".to_string(),
            approx: Approximation::Particles(self.x),
            theta: self.theta,
            objective,
            log_evidence: None,
            iterations: self.trace.len(),
            trace: self.trace,
            converged: self.converged,
            notes,
            fresh_elbo: None,
            resampling: None,
        }
    }
}

/// ½ log det(2πe Ĉ) of the sample covariance Ĉ of rows `coords` of the particles; for a
/// block too long for its particles to estimate a full covariance (2·len ≥ P, where Ĉ is
/// singular or nearly so) the diagonal of Ĉ instead, which by Hadamard's inequality is
/// again an upper bound (log det Ĉ ≤ Σ log Ĉ_ii).
fn gaussian_entropy(x: &DMatrix<f64>, coords: &[usize]) -> f64 {
    let (k, p) = (coords.len(), x.ncols());
    if 2 * k >= p {
        return diagonal_entropy(x, coords);
    }
    let mut sub = DMatrix::zeros(k, p);
    for (r, &c) in coords.iter().enumerate() {
        sub.row_mut(r).copy_from(&x.row(c));
    }
    let mean = sub.column_mean();
    for mut col in sub.column_iter_mut() {
        col -= &mean;
    }
    let cov = &sub * sub.transpose() / (p.max(2) - 1) as f64;
    let log_det = match cov.cholesky() {
        Some(ch) => 2.0 * ch.l().diagonal().iter().map(|v| v.ln()).sum::<f64>(),
        None => f64::NEG_INFINITY,
    };
    0.5 * (k as f64 * (2.0 * std::f64::consts::PI * std::f64::consts::E).ln() + log_det)
}

/// Σ_c ½ log(2πe Ĉ_cc) over rows `coords` (−∞ when a row has no spread).
fn diagonal_entropy(x: &DMatrix<f64>, coords: &[usize]) -> f64 {
    let p = x.ncols();
    let c = (2.0 * std::f64::consts::PI * std::f64::consts::E).ln();
    coords
        .iter()
        .map(|&r| {
            let row = x.row(r);
            let m = row.mean();
            let var = row.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (p.max(2) - 1) as f64;
            0.5 * (c + var.ln())
        })
        .sum()
}

/// Shuffle each block's particles independently, so the start is the product of the
/// starting Gaussian's block marginals (mean-field) rather than the joint.
fn decouple_blocks(x: &mut DMatrix<f64>, blocks: &[Vec<usize>], rng: &mut dyn RngCore) {
    let p = x.ncols();
    for coords in blocks.iter().skip(1) {
        for i in (1..p).rev() {
            let k = index_below(i + 1, rng);
            for &c in coords {
                x.swap((c, i), (c, k));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::posterior::standard_normal;
    use rand::SeedableRng;

    #[test]
    fn stopping_needs_patience_windows_without_progress() {
        // a slow climb with one noisy dip: one window below the best does not stop it
        let climb = [-100.0, -90.0, -85.0, -86.0, -80.0];
        assert!(!(1..=climb.len()).any(|n| stalled(&climb[..n], 0.01, 2)));
        assert!(stalled(&climb[..4], 0.01, 1), "patience 1 stops at the dip");
        // a plateau: two windows in a row that do not beat the best by tol
        let flat = [-100.0, -90.0, -89.995, -90.3];
        assert!(!stalled(&flat[..3], 0.01, 2));
        assert!(stalled(&flat, 0.01, 2));
        // compared with the best window, not the previous one
        assert!(stalled(&[-90.0, -95.0, -94.0, -93.0], 0.01, 2));
        assert!(!stalled(&[-90.0], 0.01, 1) && !stalled(&[-90.0, -91.0], 0.01, 2));
    }

    #[test]
    fn gaussian_entropy_of_unit_particles_is_close_to_closed_form() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(1);
        let x = standard_normal(2, 20_000, &mut rng);
        let h = gaussian_entropy(&x, &[0, 1]);
        let exact = (2.0 * std::f64::consts::PI * std::f64::consts::E).ln();
        assert!((h - exact).abs() < 0.03, "{h} vs {exact}");
    }

    #[test]
    fn entropy_of_a_block_longer_than_half_the_particles_is_the_finite_diagonal_one() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(2);
        let x = standard_normal(30, 40, &mut rng) * 2.0;
        let coords: Vec<usize> = (0..30).collect();
        let h = gaussian_entropy(&x, &coords);
        assert!(h.is_finite());
        assert!((h - diagonal_entropy(&x, &coords)).abs() < 1e-12);
        // Each coordinate has variance ≈ 4: ½ log(2πe·4) per coordinate.
        let per = 0.5 * (2.0 * std::f64::consts::PI * std::f64::consts::E * 4.0).ln();
        assert!((h / 30.0 - per).abs() < 0.1, "{h}");
    }
}
