//! `-v`: the library's `tracing` events (retries, token requests), each printed to standard
//! error as one `imgcheck: <message>` line. A minimal [`Subscriber`] of our own: it needs no
//! spans, fields or formatting beyond the message, so `tracing-subscriber` would add code
//! (and a dependency) for nothing. Events of other crates (h2, oci-client) are not shown.

use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing::level_filters::LevelFilter;
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Level, Metadata, Subscriber};

/// Prints imgcheck's events at `INFO` and above to standard error.
struct Verbose;

/// Installs the `-v` printer for the rest of the process, when `verbose`.
pub fn install(verbose: bool) {
    if !verbose {
        return;
    }
    // Only fails when a subscriber is already installed, which then keeps printing.
    let _ = tracing::subscriber::set_global_default(Verbose);
}

fn is_ours(metadata: &Metadata<'_>) -> bool {
    let target = metadata.target();
    let crate_target = target == "imgcheck" || target.starts_with("imgcheck::");
    metadata.is_event() && crate_target && *metadata.level() <= Level::INFO
}

impl Subscriber for Verbose {
    fn register_callsite(&self, metadata: &'static Metadata<'static>) -> Interest {
        if is_ours(metadata) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    fn enabled(&self, metadata: &Metadata<'_>) -> bool {
        is_ours(metadata)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::INFO)
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        // Spans are never enabled; tracing still needs an id to hand out.
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let mut message = Message(String::new());
        event.record(&mut message);
        super::output::eprintln(format_args!("imgcheck: {}", message.0));
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Collects an event's `message` field.
struct Message(String);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if field.name() == "message" {
            // `format_args!` messages print the same through Debug as through Display.
            let _ = write!(self.0, "{value:?}");
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.0.push_str(value);
        }
    }
}
