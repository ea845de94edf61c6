//! Whose fault an error is, and an error's whole story on one line.
//!
//! Every error the library returns says whose fault it is through [`Blame`]: the user's input,
//! the image (a policy failure), the world (the check could not be completed), or the output.
//! The library never names an exit code; the command line maps a [`Fault`] to one.

/// Whose fault an error is: the question every caller of the library asks of an error.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Fault {
    /// The user's input is wrong (a reference, policy, plan, file or flag): fix it and
    /// run again.
    Input,
    /// What was checked fails its policy (a reference that names nothing, a list no host can
    /// pull): asking again cannot fix it.
    Policy,
    /// The check could not be completed (network, registry, a tool that failed): it may
    /// succeed later.
    Unavailable,
    /// The result could not be written where it was asked for.
    Output,
}

/// An error that knows whose fault it is.
pub trait Blame {
    /// Whose fault this error is.
    fn fault(&self) -> Fault;
}

/// Implements [`Blame`] for error types that are always the user's input.
macro_rules! input_errors {
    ($($t:ty),* $(,)?) => {
        $(impl $crate::error::Blame for $t {
            fn fault(&self) -> $crate::error::Fault {
                $crate::error::Fault::Input
            }
        })*
    };
}
pub(crate) use input_errors;

/// An error and its causes on one line, joined with `": "`: for report fields and messages
/// that hold text (a finding's message), where the command line's `caused by:` lines cannot go.
pub fn one_line(error: &dyn std::error::Error) -> String {
    let mut line = error.to_string();
    let mut cause = error.source();
    while let Some(c) = cause {
        line = format!("{line}: {c}");
        cause = c.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("outer")]
    struct Outer(#[source] Inner);

    #[derive(Debug, thiserror::Error)]
    #[error("inner")]
    struct Inner;

    #[test]
    fn one_line_joins_the_causes() {
        let io = std::io::Error::other("disk on fire");
        let list = crate::input::InputError::new("refs.txt", "cannot read").caused_by(io);
        assert_eq!(one_line(&list), "refs.txt: cannot read: disk on fire");
    }

    #[test]
    fn one_line_joins_every_cause() {
        assert_eq!(one_line(&Outer(Inner)), "outer: inner");
        assert_eq!(one_line(&Inner), "inner");
    }
}
