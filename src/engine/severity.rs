//! A finding's [`Severity`]: every rule has one (its row in the rule table), and a check may
//! raise it.

use serde::Serialize;

/// A finding's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The image fails the policy.
    Error,
    /// Worth fixing, does not fail the image.
    Warning,
    /// For information.
    Info,
}
