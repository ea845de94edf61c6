//! What a run tells while it works. The library never prints: the command line implements
//! [`Reporter`] (bars on a terminal, plain lines otherwise).

/// Receives a run's progress.
pub trait Reporter: Send + Sync {
    /// A line that must stay visible (the Buildah version, warnings, failures).
    fn line(&self, text: &str);
    /// A build is planned, shown by `label` (`driver linux/amd64`); it is waiting.
    fn job(&self, label: &str) -> Box<dyn JobProgress>;
    /// Every build has ended: whatever was drawn for them can go.
    fn jobs_done(&self);
}

/// The progress of one build.
pub trait JobProgress: Send + Sync {
    /// What the build is doing now (`building`, a Buildah step, `pushing to …`).
    fn status(&self, text: &str);
    /// How it ended.
    fn finish(&self, text: &str);
}
