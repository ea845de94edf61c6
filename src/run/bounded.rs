//! Many images at once, a bounded number in flight, their outcomes handed on in input order.

use futures::StreamExt;

use super::outcome::Outcome;

/// Runs `check` on every item, at most `in_flight` at once, calling `on_done` as each
/// finishes (in any order), and hands each outcome to `each` in input order as soon as it and
/// every one before it are done: an outcome waits only behind those still in flight, so at
/// most `in_flight` outcomes are held at once. One item's failure does not stop the others;
/// an error from `each` stops the run there (the checks in flight are dropped) and is
/// returned.
pub async fn run_bounded<'a, T, F, Fut, E>(
    items: &'a [T],
    in_flight: usize,
    on_done: &(dyn Fn(&Outcome) + Sync),
    check: F,
    each: &mut dyn FnMut(Outcome) -> Result<(), E>,
) -> Result<(), E>
where
    F: Fn(&'a T) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let mut outcomes = std::pin::pin!(
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
    );
    while let Some(outcome) = outcomes.next().await {
        each(outcome)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::ImageReport;
    use std::cell::RefCell;
    use std::convert::Infallible;
    use tokio::sync::Notify;

    fn report(name: &str) -> Outcome {
        Outcome::Report(ImageReport::not_found(name, "m"))
    }

    fn name(o: &Outcome) -> String {
        match o {
            Outcome::Report(r) => r.reference.clone(),
            Outcome::BadInput(e) => e.to_string(),
        }
    }

    /// Issue 24: the first outcome reaches `each` while the last item is still being
    /// checked — the last one finishes only once the first was handed on (a run that kept
    /// every outcome until the end would never finish: the test's timeout says so).
    #[tokio::test]
    async fn the_first_outcome_is_handed_on_before_the_last_is_done() {
        let first_out = Notify::new();
        let items = ["a", "b", "c"];
        let handed = RefCell::new(Vec::new());
        let mut each = |o: Outcome| {
            if name(&o) == "a" {
                first_out.notify_one();
            }
            handed.borrow_mut().push(name(&o));
            Ok::<(), Infallible>(())
        };
        let run = run_bounded(
            &items,
            3,
            &|_| {},
            |item| {
                let first_out = &first_out;
                async move {
                    if *item == "c" {
                        first_out.notified().await;
                    }
                    report(item)
                }
            },
            &mut each,
        );
        tokio::time::timeout(std::time::Duration::from_secs(10), run)
            .await
            .expect("the last item waits for the first outcome to be handed on")
            .unwrap();
        assert_eq!(*handed.borrow(), ["a", "b", "c"]);
    }

    /// Outcomes come in input order whatever order the checks finish in, and at most
    /// `in_flight` checks run at once; an error from `each` stops the run there.
    #[tokio::test]
    async fn outcomes_come_in_input_order_and_an_error_stops() {
        let running = std::sync::atomic::AtomicUsize::new(0);
        let most = std::sync::atomic::AtomicUsize::new(0);
        let items: Vec<u64> = (0..20).collect();
        let check = |i: &u64| {
            let (running, most) = (&running, &most);
            let i = *i;
            async move {
                use std::sync::atomic::Ordering::SeqCst;
                let now = running.fetch_add(1, SeqCst) + 1;
                most.fetch_max(now, SeqCst);
                // later items finish first
                tokio::time::sleep(std::time::Duration::from_millis(20 - i)).await;
                running.fetch_sub(1, SeqCst);
                report(&i.to_string())
            }
        };
        let mut seen = Vec::new();
        let ended = run_bounded(&items, 4, &|_| {}, check, &mut |o| {
            seen.push(name(&o));
            match seen.len() {
                12 => Err("stop"),
                _ => Ok(()),
            }
        })
        .await;
        assert_eq!(ended, Err("stop"));
        let want: Vec<String> = (0..12).map(|i| i.to_string()).collect();
        assert_eq!(seen, want);
        assert!(most.load(std::sync::atomic::Ordering::SeqCst) <= 4);
    }
}
