//! What every layer above shares: the run's options, its deadline, its request counters and
//! its HTTP clients; and the two bounds on a request's time (a step within the request
//! timeout, the whole run within the deadline).

use std::time::{Duration, Instant};

use futures::FutureExt;

use super::failure::Failure;
use super::options::{ClientOptions, Stats};
use super::tls::HttpClients;
use crate::source::FetchError;

/// The run's options, deadline, counters and HTTP clients.
pub(super) struct Link {
    pub(super) options: ClientOptions,
    /// When the run's work must be over (`--timeout`), counted from the run's start.
    pub(super) deadline: Option<Instant>,
    pub(super) stats: Stats,
    pub(super) http: HttpClients,
}

impl Link {
    /// The link for a run that starts now.
    pub(super) fn new(options: &ClientOptions) -> Link {
        Link {
            options: options.clone(),
            deadline: options.ends_at(),
            stats: Stats::default(),
            http: HttpClients::new(options),
        }
    }

    /// What is left of the run's deadline, when it has one.
    pub(super) fn remaining(&self) -> Option<Duration> {
        self.deadline
            .map(|d| d.saturating_duration_since(Instant::now()))
    }

    /// The error of a request the run's deadline cut off.
    pub(super) fn deadline_error(&self, what: &str) -> FetchError {
        FetchError::unavailable(format!(
            "{what}: the overall deadline (--timeout {}s) passed",
            self.options.deadline.unwrap_or_default().as_secs_f64()
        ))
    }

    /// Runs one step of a request (an answer, the next piece of a body) within the request
    /// timeout; a step that takes longer is a fault that may heal. A plain function over
    /// `step` rather than an `async fn`: the step is stored once, in the timeout, not also
    /// as the async fn's argument (every request's future is that much smaller to build,
    /// move and box).
    pub(super) fn within<'a, F: Future + 'a>(
        &self,
        what: &'a str,
        step: F,
    ) -> impl Future<Output = Result<F::Output, Failure>> + 'a {
        let limit = self.options.request_timeout;
        tokio::time::timeout(limit, step).map(move |r| {
            r.map_err(|_| {
                Failure::Retry(
                    FetchError::unavailable(format!(
                        "{what}: nothing received for {:.1}s (--request-timeout)",
                        limit.as_secs_f64()
                    )),
                    None,
                )
            })
        })
    }
}
