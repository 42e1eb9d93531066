//! Choosing what a client sees: a manifest's `expose` block, with `allow`
//! and `deny` patterns over the extension's own tool names.
//!
//! A pattern is a whole-name match where `*` stands for any run of
//! characters, none included (`get-*`, `*_delete`, `*`); every other
//! character stands for itself, case-sensitively. A tool is shown when the
//! `allow` list is empty or one of its patterns matches, and no `deny`
//! pattern matches: deny wins.
//!
//! Filtering is applied after the declaration match (M-5): a hidden tool
//! is still declared, listed by its server, checked and pinned; it is only
//! left out of what a client sees and refused when a client calls it.

use serde::Serialize;

/// The longest pattern, in bytes.
pub const MAX_EXPOSE_PATTERN_BYTES: usize = 128;
/// The most patterns in one list.
pub const MAX_EXPOSE_PATTERNS: usize = 256;

/// The `expose` block of a manifest: which of its tools a gateway shows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ExposeRules {
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) allow: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) deny: Vec<String>,
}

impl ExposeRules {
    /// Rules from two lists of patterns, each checked with
    /// [`is_valid_pattern`]; `None` when one is not valid.
    pub fn new(allow: Vec<String>, deny: Vec<String>) -> Option<Self> {
        let valid = |list: &[String]| {
            list.len() <= MAX_EXPOSE_PATTERNS && list.iter().all(|p| is_valid_pattern(p))
        };
        (valid(&allow) && valid(&deny)).then_some(Self { allow, deny })
    }

    /// The `allow` patterns (empty: every tool is allowed).
    pub fn allow(&self) -> &[String] {
        &self.allow
    }

    /// The `deny` patterns.
    pub fn deny(&self) -> &[String] {
        &self.deny
    }

    /// True when neither list has a pattern: every tool is shown.
    pub fn is_empty(&self) -> bool {
        self.allow.is_empty() && self.deny.is_empty()
    }

    /// Whether the tool `name` is shown: allowed (or no allow list) and not
    /// denied.
    pub fn shows(&self, name: &str) -> bool {
        (self.allow.is_empty() || self.allow.iter().any(|p| pattern_matches(p, name)))
            && !self.deny.iter().any(|p| pattern_matches(p, name))
    }

    /// The first pattern that hides `name`: a `deny` pattern that matches
    /// (`("deny", pattern)`), or `("allow", "")` when an allow list exists
    /// and none of it matches. `None` when the tool is shown.
    pub fn hidden_by(&self, name: &str) -> Option<(&'static str, &str)> {
        if let Some(p) = self.deny.iter().find(|p| pattern_matches(p, name)) {
            return Some(("deny", p));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|p| pattern_matches(p, name)) {
            return Some(("allow", ""));
        }
        None
    }
}

/// Whether `pattern` is 1 to [`MAX_EXPOSE_PATTERN_BYTES`] bytes of ASCII
/// letters, digits, `_`, `-`, `.` and `*`.
pub fn is_valid_pattern(pattern: &str) -> bool {
    !pattern.is_empty()
        && pattern.len() <= MAX_EXPOSE_PATTERN_BYTES
        && pattern
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'*'))
}

/// Whether `name` matches `pattern` as a whole, where `*` is any run of
/// bytes (none included). Iterative, linear in practice (the classic
/// backtracking to the last star).
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let (p, n) = (pattern.as_bytes(), name.as_bytes());
    let (mut i, mut j) = (0usize, 0usize);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && p[i] == b'*' {
            star = Some((i, j));
            i += 1;
        } else if i < p.len() && p[i] == n[j] {
            i += 1;
            j += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&b| b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stars_match_any_run_and_the_rest_is_literal() {
        assert!(pattern_matches("*", ""));
        assert!(pattern_matches("*", "echo"));
        assert!(pattern_matches("get-*", "get-env"));
        assert!(!pattern_matches("get-*", "xget-env"));
        assert!(pattern_matches("*delete*", "bulk_delete_all"));
        assert!(pattern_matches("a*b*c", "aXbYc"));
        assert!(!pattern_matches("a*b*c", "aXbY"));
        assert!(!pattern_matches("Echo", "echo"));
        assert!(pattern_matches("echo", "echo"));
        assert!(!pattern_matches("echo", "echo2"));
    }

    #[test]
    fn deny_wins_and_an_allow_list_hides_the_rest() {
        let rules = ExposeRules::new(vec!["get-*".into()], vec!["get-secret".into()]).unwrap();
        assert!(rules.shows("get-env"));
        assert!(!rules.shows("get-secret"));
        assert!(!rules.shows("echo"));
        assert_eq!(rules.hidden_by("get-secret"), Some(("deny", "get-secret")));
        assert_eq!(rules.hidden_by("echo"), Some(("allow", "")));
        assert!(ExposeRules::default().shows("anything"));
        assert!(ExposeRules::new(vec!["a b".into()], vec![]).is_none());
    }
}
