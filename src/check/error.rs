//! Helpers for the checker's diagnostics: "did you mean" suggestions by edit distance.

/// Levenshtein distance between two names.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The candidate closest to `name`, if it is close enough to be a likely typo.
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let n = name.chars().count();
    let limit = n.div_ceil(3).max(1) + usize::from(n > 6);
    candidates
        .into_iter()
        .filter(|c| *c != name)
        .map(|c| {
            (
                edit_distance(name, c),
                edit_distance(&name.to_lowercase(), &c.to_lowercase()),
                c,
            )
        })
        .filter(|(d, _, _)| *d <= limit)
        .min_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2)))
        .map(|(_, _, c)| c)
}

/// `did you mean `x`?` or an empty string.
pub fn did_you_mean<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    closest(name, candidates).map(|c| format!("did you mean `{c}`?"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distance_counts_single_edits() {
        assert_eq!(edit_distance("sigma", "sigma2"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    #[test]
    fn closest_ignores_far_names() {
        assert_eq!(closest("sigam", ["sigma", "mu"]), Some("sigma"));
        assert_eq!(closest("zzz", ["sigma", "mu"]), None);
        assert_eq!(closest("y", ["X", "Y"]), Some("Y"));
    }
}
