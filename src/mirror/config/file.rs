//! Reading a configuration file within its limits, and what can be wrong with one
//! ([`MirrorConfigError`], [`ConfigProblem`]).

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::scope::ScopeError;

/// A mirror configuration file that cannot be used, naming the file (and line when known).
#[derive(Debug, Clone)]
pub struct MirrorConfigError {
    /// The file.
    pub path: PathBuf,
    /// The line, when known.
    pub line: Option<usize>,
    /// What is wrong, and where in the file (boxed: errors stay small).
    pub problem: Box<ConfigProblem>,
}

impl fmt::Display for MirrorConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for MirrorConfigError {
    /// The problem's cause: the problem itself is part of this error's message.
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&*self.problem)
    }
}

/// What is wrong with a mirror configuration file.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ConfigProblem {
    /// The file, or its drop-in directory, cannot be read.
    #[error("cannot be read")]
    Read(#[source] Arc<std::io::Error>),
    /// The file is larger than `MAX_CONFIG_FILE_BYTES` (16 MiB).
    #[error("larger than {0} bytes")]
    TooLarge(u64),
    /// The drop-in directory holds more than `MAX_DROP_INS` (1000) entries.
    #[error("more than {0} entries")]
    TooManyDropIns(usize),
    /// A YAML document does not parse.
    #[error("{at}: not valid YAML")]
    Yaml {
        /// The document.
        at: String,
        /// The parser's error.
        #[source]
        source: Arc<serde_yaml_ng::Error>,
    },
    /// A mirror-set entry with unknown, missing or mistyped fields.
    #[error("{at}: not a valid entry")]
    Entry {
        /// The document, object and entry.
        at: String,
        /// The parser's error.
        #[source]
        source: Arc<serde_yaml_ng::Error>,
    },
    /// A registries.conf that does not parse or has unknown fields.
    #[error("not a valid registries.conf")]
    Toml(#[source] Arc<toml::de::Error>),
    /// A source, prefix, location or mirror that is not a registry scope.
    #[error("{at}: {what}'{value}'")]
    Scope {
        /// The entry.
        at: String,
        /// What the value is (`source `, `mirror `, `prefix `, …; empty when the place says).
        what: String,
        /// The value as written.
        value: String,
        /// Why it is not a scope.
        #[source]
        source: ScopeError,
    },
    /// Anything else wrong with the file, with its place in it.
    #[error("{0}")]
    Invalid(String),
}

/// A [`MirrorConfigError`] about `path` (at `line`, when known).
pub(super) fn error(path: &Path, line: Option<usize>, problem: ConfigProblem) -> MirrorConfigError {
    MirrorConfigError {
        path: path.to_path_buf(),
        line,
        problem: Box::new(problem),
    }
}

/// Largest configuration file read.
pub(super) const MAX_CONFIG_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Most entries read from one `.d` drop-in directory.
pub(super) const MAX_DROP_INS: usize = 1000;

/// The text of a configuration file, refused past `MAX_CONFIG_FILE_BYTES` (16 MiB) however
/// long its metadata says it is (a pipe, `/dev/zero`): read through the one capped input
/// reader.
pub(super) fn read(path: &Path) -> Result<String, MirrorConfigError> {
    crate::input::read_file(path, MAX_CONFIG_FILE_BYTES).map_err(|e| {
        let problem = match e.source {
            Some(e) => ConfigProblem::Read(Arc::new(e)),
            None => ConfigProblem::TooLarge(MAX_CONFIG_FILE_BYTES),
        };
        error(path, None, problem)
    })
}
