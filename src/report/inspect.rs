//! The `inspect` view: each entry's list platform next to its config platform.

use crate::engine::InspectView;
use crate::platform::Platform;

use super::labels::short;
use crate::escape::escape;

/// The text form of an [`InspectView`]: a header line, then one row per entry.
pub fn inspect_text(view: &InspectView) -> String {
    let mut out = format!(
        "{}  {}  {}\n",
        escape(&view.reference),
        escape(&view.digest),
        escape(&view.kind)
    );
    out.push_str(&format!(
        "  {:<20} {:<34} {:<34} status\n",
        "entry", "list platform", "config platform"
    ));
    let p = |p: &Option<Platform>| {
        p.as_ref()
            .map_or("-".to_string(), |p| escape(&p.to_string()).into_owned())
    };
    for e in &view.entries {
        out.push_str(&format!(
            "  {:<20} {:<34} {:<34} {}\n",
            escape(&short(&e.digest)),
            p(&e.platform),
            p(&e.config_platform),
            escape(&e.status)
        ));
    }
    out
}

/// The JSON form of an [`InspectView`], pretty-printed, without a final newline.
pub fn inspect_json(view: &InspectView) -> String {
    serde_json::to_string_pretty(view).expect("serialises")
}
