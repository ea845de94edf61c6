//! Registry scopes as mirror configuration names them: a source, prefix, location or mirror
//! is `host[:port][/path…]`, or `*.domain` where a wildcard is allowed.

use crate::reference::valid_path_component;

/// Why a string is not a registry scope.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScopeError {
    /// Nothing but slashes.
    #[error("empty")]
    Empty,
    /// Written as a URL.
    #[error("URI schemes are not supported (write host[:port]/path)")]
    Scheme,
    /// A registries.conf location or prefix written as a URL.
    #[error("URI schemes are not supported")]
    LocationScheme,
    /// User information (`user:password@host`): not a registry host; the pull reference
    /// made of it does not parse.
    #[error("holds user information (user[:password]@), which no registry host name has")]
    Credentials,
    /// Names a digest.
    #[error("must not contain a digest")]
    Digest,
    /// A wildcard where none is allowed.
    #[error("wildcards are not allowed here")]
    Wildcard,
    /// A wildcard with a port, a path or a bad domain.
    #[error("a wildcard must have the form *.example.com (no port or path)")]
    WildcardForm,
    /// The host part is not a host name or bracketed IPv6 address.
    #[error("'{0}' is not a registry host")]
    Host(String),
    /// What follows the host's `:` is not a port.
    #[error("'{0}' is not a port (tags are not allowed here)")]
    Port(String),
    /// Names a tag.
    #[error("must not contain a tag (name a registry, namespace or repository)")]
    Tag,
    /// A path component outside the reference grammar.
    #[error(
        "path component '{0}' must be lowercase letters and digits, separated by '.', '_', '__' or '-'"
    )]
    PathComponent(String),
}

/// Checks a source, prefix or mirror: `host[:port][/path…]`, or `*.domain` where
/// `wildcard` is allowed. Returns it without a trailing slash.
pub fn validate_scope(scope: &str, wildcard: bool) -> Result<String, ScopeError> {
    let s = scope.trim_end_matches('/');
    if s.is_empty() {
        return Err(ScopeError::Empty);
    }
    if s.contains("://") {
        return Err(ScopeError::Scheme);
    }
    if s.split('/').next().is_some_and(|host| host.contains('@')) {
        return Err(ScopeError::Credentials);
    }
    if s.contains('@') {
        return Err(ScopeError::Digest);
    }
    if let Some(domain) = s.strip_prefix("*.") {
        if !wildcard {
            return Err(ScopeError::Wildcard);
        }
        if domain.contains(['/', ':', '*']) || !valid_host(domain) {
            return Err(ScopeError::WildcardForm);
        }
        return Ok(s.to_string());
    }
    let (host, path) = match s.split_once('/') {
        Some((h, p)) => (h, Some(p)),
        None => (s, None),
    };
    let (name, port) = split_port(host)?;
    if let Some(port) = port
        && (port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()))
    {
        return Err(ScopeError::Port(port.to_string()));
    }
    if !(valid_host(name) || (name.starts_with('[') && name.ends_with(']') && name.len() > 2)) {
        return Err(ScopeError::Host(host.to_string()));
    }
    if path.is_some_and(|p| p.contains(':')) {
        return Err(ScopeError::Tag);
    }
    if let Some(path) = path
        && let Some(bad) = path.split('/').find(|c| !valid_path_component(c))
    {
        return Err(ScopeError::PathComponent(bad.to_string()));
    }
    Ok(s.to_string())
}

/// `host[:port]` (or `[v6][:port]`) into the name and the port, if any.
fn split_port(host: &str) -> Result<(&str, Option<&str>), ScopeError> {
    if !host.starts_with('[') {
        return Ok(match host.split_once(':') {
            Some((n, p)) => (n, Some(p)),
            None => (host, None),
        });
    }
    match host.find(']') {
        Some(end) => Ok(match &host[end + 1..] {
            "" => (&host[..=end], None),
            rest => (&host[..=end], Some(rest.strip_prefix(':').unwrap_or(rest))),
        }),
        None => Err(ScopeError::Host(host.to_string())),
    }
}

fn valid_host(h: &str) -> bool {
    !h.is_empty()
        && h.len() <= 253
        && h.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes() {
        for ok in [
            "quay.io",
            "quay.io/org",
            "127.0.0.1:5000/a/b",
            "localhost:5000",
            "[::1]:5000/x",
            "my-registry.example.com/a_b/c.d",
        ] {
            assert_eq!(validate_scope(ok, false).as_deref(), Ok(ok), "{ok}");
        }
        assert_eq!(
            validate_scope("*.example.com", true).as_deref(),
            Ok("*.example.com")
        );
        for bad in [
            "",
            "quay.io/org@sha256:abc",
            "-bad.io",
            "quay.io:port",
            "*.ex.com/x",
            "quay.io//x",
            "[::1",
        ] {
            assert!(validate_scope(bad, true).is_err(), "{bad}");
        }
    }
}
