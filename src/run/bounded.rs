//! Many images at once, a bounded number in flight.

use futures::StreamExt;

use super::outcome::Outcome;

/// Runs `check` on every item, at most `in_flight` at once, calling `on_done` as each
/// finishes; results come back in input order. One item's failure does not stop the others.
pub async fn run_bounded<'a, T, F, Fut>(
    items: &'a [T],
    in_flight: usize,
    on_done: &(dyn Fn(&Outcome) + Sync),
    check: F,
) -> Vec<Outcome>
where
    F: Fn(&'a T) -> Fut,
    Fut: Future<Output = Outcome>,
{
    futures::stream::iter(items.iter().map(|item| {
        // Boxed: a check's future is large, and the stream moves each one several times
        // (into the stream, into its queue); a box moves as one pointer.
        let pending = Box::pin(check(item));
        async move {
            let outcome = pending.await;
            on_done(&outcome);
            outcome
        }
    }))
    .buffered(in_flight.max(1))
    .collect()
    .await
}
