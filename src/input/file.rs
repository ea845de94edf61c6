//! Reading a user's input file, or standard input for `-` (reference lists, ImageSet
//! configurations, node lists).

use std::io::Read;

/// The text of `path`, or standard input for `-`; on failure, what could not be read
/// (`cannot read`, `cannot read standard input`) and why.
pub(crate) fn read_text(path: &str) -> Result<String, (&'static str, std::io::Error)> {
    if path == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| ("cannot read standard input", e))?;
        Ok(text)
    } else {
        std::fs::read_to_string(path).map_err(|e| ("cannot read", e))
    }
}
