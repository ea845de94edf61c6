//! Verifying targets: each fetched through the run's session and judged under the run's
//! [`Settings`], a few at a time.

use super::bounded::run_bounded;
use super::outcome::Outcome;
use super::targets::{Target, sandbox_fetch_hint};
use crate::graph::WalkOptions;
use crate::platform::RuntimeProfile;
use crate::policy::Policy;
use crate::session::Session;

/// Settings of a verify run.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The policy (with `--nodes`, the cluster's hosts).
    pub policy: Policy,
    /// Runtime profiles to judge with.
    pub runtimes: Vec<RuntimeProfile>,
    /// Walk options (per image).
    pub walk: WalkOptions,
    /// Images in flight at once.
    pub images_in_flight: usize,
}

/// Verifies every target, at most `images_in_flight` at once, handing each outcome to `each`
/// in input order as soon as it and those before it are done (see [`run_bounded`]); an error
/// from `each` stops there.
pub async fn verify_all<E>(
    session: &Session,
    targets: &[Target],
    settings: &Settings,
    on_done: &(dyn Fn(&Outcome) + Sync),
    each: &mut dyn FnMut(Outcome) -> Result<(), E>,
) -> Result<(), E> {
    run_bounded(
        targets,
        settings.images_in_flight,
        on_done,
        |t| async move {
            match session.graph(&t.reference, settings.walk).await {
                Ok(graph) => Outcome::Report(t.judge(&graph, &settings.policy, &settings.runtimes)),
                Err(e) => {
                    let mut outcome = Outcome::fetch_failed(&t.reference, e);
                    if let Outcome::Report(r) = &mut outcome {
                        r.origins = t.origins.clone();
                        sandbox_fetch_hint(r, &t.origins);
                    }
                    outcome
                }
            }
        },
        each,
    )
    .await
}
