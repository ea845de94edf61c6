//! Reference lists: plain files of references (`--from-file`).

use super::error::InputError;
use super::file::read_text;
use crate::reference::ImageRef;

/// Reads `path` (or standard input for `-`) as text, the error naming the path.
pub(super) fn read_all(path: &str, max_bytes: u64) -> Result<String, InputError> {
    read_text(path, max_bytes).map_err(|e| {
        let error = InputError::new(path, e.reason);
        match e.source {
            Some(cause) => error.caused_by(cause),
            None => error,
        }
    })
}

/// Parses a reference list: one reference per line, `#` starts a comment, blank lines ignored.
pub fn parse_reference_list(text: &str, origin: &str) -> Result<Vec<ImageRef>, InputError> {
    let mut refs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let r = line
            .parse::<ImageRef>()
            .map_err(|e| InputError::new(format!("{origin}:{}", n + 1), e.to_string()))?;
        refs.push(r);
    }
    Ok(refs)
}

/// Reads a reference list from a file, or standard input for `-`, of at most `max_bytes`.
pub fn read_reference_list(path: &str, max_bytes: u64) -> Result<Vec<ImageRef>, InputError> {
    parse_reference_list(&read_all(path, max_bytes)?, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reference_lists() {
        let text = "# release 4.18\nquay.io/a/b:v1\n\n  oci:fixtures/layouts/good  # local\nquay.io/a/c@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n";
        let refs = parse_reference_list(text, "list.txt").unwrap();
        assert_eq!(refs.len(), 3);
        assert_eq!(refs[1].to_string(), "oci:fixtures/layouts/good");
        let err = parse_reference_list("quay.io/a/b:v1\nNOT VALID\n", "list.txt").unwrap_err();
        assert_eq!(err.origin.as_deref(), Some("list.txt:2"));
        assert!(err.to_string().contains("invalid reference 'NOT VALID'"));
        assert!(parse_reference_list("# nothing\n", "x").unwrap().is_empty());
    }
}
