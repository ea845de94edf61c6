//! Secrets in text imgcheck shows but did not write — a registry's or token service's error
//! body, a header, a credential helper's error — taken out before it is shown
//! (docs/output.md): the credential of every `Basic`/`Bearer` value, the query and fragment of
//! every URL (a presigned URL's `X-Amz-Signature`, a SAS `sig`), and the value of every known
//! secret parameter (`token=…`, `"password": "…"`). The registry client's own URLs lose their
//! query the same way (`source::registry::failure::scrubbed`).

/// What stands for a secret in anything printed.
pub(crate) const REDACTED: &str = "<redacted>";

/// Parameter names whose values are secrets, lower case: signed URLs (AWS SigV4, Google Cloud
/// Storage, Azure SAS, CloudFront), what S3 echoes in a `SignatureDoesNotMatch` error, OAuth2
/// and the common password and key fields.
const SECRET_NAMES: [&str; 19] = [
    "x-amz-signature",
    "x-amz-credential",
    "x-amz-security-token",
    "x-goog-signature",
    "x-goog-credential",
    "signature",
    "signatureprovided",
    "awsaccesskeyid",
    "sig",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "password",
    "passwd",
    "secret",
    "client_secret",
    "api_key",
    "apikey",
];

/// `text` without the secrets it carries in known places (the module's list).
pub(crate) fn scrub(text: &str) -> String {
    redact_schemes(&redact_parameters(&redact_queries(text)))
}

/// [`scrub`], and every word that looks like a token (16 characters or more of a token's
/// alphabet, mixing two of digits, upper and lower case) redacted too: for text of unknown
/// shape that may hold a secret anywhere (a failing credential helper's message).
pub(crate) fn scrub_words(text: &str) -> String {
    let text = scrub(text);
    let in_word = |c: char| c.is_ascii_alphanumeric() || "+/=_-.~".contains(c);
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while let Some(start) = rest.find(in_word) {
        out.push_str(&rest[..start]);
        let word = &rest[start..];
        let end = word.find(|c| !in_word(c)).unwrap_or(word.len());
        let (word, after) = word.split_at(end);
        out.push_str(if looks_like_token(word) {
            REDACTED
        } else {
            word
        });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// 16 characters or more, mixing two of digits, upper and lower case.
fn looks_like_token(word: &str) -> bool {
    let has = |f: fn(&char) -> bool| word.chars().any(|c| f(&c));
    let kinds = [
        has(char::is_ascii_digit),
        has(char::is_ascii_uppercase),
        has(char::is_ascii_lowercase),
    ];
    word.len() >= 16 && kinds.iter().filter(|k| **k).count() >= 2
}

/// Where a URL (or a parameter value) ends in prose.
fn ends_value(c: char) -> bool {
    c.is_whitespace() || c.is_control() || "\"'<>`)]}".contains(c)
}

/// A registry location or host URL as it may be printed: `[scheme://][user[:password]@]host
/// [/path][?query][#fragment]` with the user information, the query and the fragment each
/// replaced by [`REDACTED`] (Go's `url.Parse` order: the fragment from the first `#`, the
/// query from the first `?`, the authority up to the first `/`, its user information up to
/// the last `@`).
pub(crate) fn redact_location(location: &str) -> String {
    let (rest, fragment) = match location.split_once('#') {
        Some((rest, _)) => (rest, format!("#{REDACTED}")),
        None => (location, String::new()),
    };
    let (rest, query) = match rest.split_once('?') {
        Some((rest, _)) => (rest, format!("?{REDACTED}")),
        None => (rest, String::new()),
    };
    let (scheme, rest) = match rest.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), rest),
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let authority = match authority.rsplit_once('@') {
        Some((_, host)) => format!("{REDACTED}@{host}"),
        None => authority.to_string(),
    };
    format!("{scheme}{authority}{path}{query}{fragment}")
}

/// The query and fragment of every `scheme://…` URL replaced by [`REDACTED`]:
/// `https://bucket/blob?<redacted>`.
fn redact_queries(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        let (before, url) = rest.split_at(at);
        out.push_str(before);
        let end = url.find(ends_value).unwrap_or(url.len());
        let (url, after) = url.split_at(end);
        match url.find(['?', '#']) {
            Some(q) if q + 1 < url.len() => {
                out.push_str(&url[..=q]);
                out.push_str(REDACTED);
            }
            _ => out.push_str(url),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// The value of every known secret parameter replaced by [`REDACTED`]: `NAME=VALUE`,
/// `NAME: VALUE`, `"NAME": "VALUE"` and `<NAME>VALUE<`, the name in any case and not part of a
/// longer name.
fn redact_parameters(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let bytes = lower.as_bytes();
    let part_of_name = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'-';
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        let boundary = i == 0 || !part_of_name(bytes[i - 1]);
        let value = boundary
            .then(|| {
                SECRET_NAMES
                    .iter()
                    .find_map(|name| value_after(&lower, i, name))
            })
            .flatten();
        match value {
            Some((start, end)) => {
                out.push_str(&text[copied..start]);
                out.push_str(REDACTED);
                copied = end;
                i = end.max(i + 1);
            }
            None => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Where the value of `name` at `at` in `lower` is (`start..end`), when `name` stands there as
/// a parameter: followed by an optional closing quote, `=`, `:` or `>`, and a non-empty value.
fn value_after(lower: &str, at: usize, name: &str) -> Option<(usize, usize)> {
    let after = lower.get(at..)?.strip_prefix(name)?;
    let after = after.strip_prefix('"').unwrap_or(after);
    let after = after.trim_start_matches(' ');
    let after = after.strip_prefix(['=', ':', '>'])?;
    let after = after.trim_start_matches(' ');
    let after = after.strip_prefix('"').unwrap_or(after);
    let start = lower.len() - after.len();
    let len = after
        .find(|c: char| ends_value(c) || "&,;".contains(c))
        .unwrap_or(after.len());
    let value = &after[..len];
    (len > 0 && value != REDACTED.to_ascii_lowercase()).then_some((start, start + len))
}

/// Replaces the credential after every `Basic ` or `Bearer ` (any case) with [`REDACTED`],
/// when it looks like one (so `Bearer realm=…` and `Basic authentication` stay readable).
fn redact_schemes(text: &str) -> String {
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    loop {
        let next = ["basic ", "bearer "]
            .iter()
            .filter_map(|s| lower[at..].find(s).map(|i| at + i + s.len()))
            .min();
        let Some(value) = next else { break };
        let body_end = text[value..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || "+/._~-".contains(c)))
            .map_or(text.len(), |i| value + i);
        let end =
            body_end + text[body_end..].len() - text[body_end..].trim_start_matches('=').len();
        out.push_str(&text[at..value]);
        if looks_secret(&text[value..body_end]) {
            out.push_str(REDACTED);
        } else {
            out.push_str(&text[value..end]);
        }
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// Long enough, and mixed enough (digits, both cases, or token punctuation), to be a
/// credential rather than a word.
fn looks_secret(value: &str) -> bool {
    let has = |f: fn(char) -> bool| value.chars().any(f);
    value.len() >= 8
        && (has(|c| c.is_ascii_digit())
            || (has(|c| c.is_ascii_uppercase()) && has(|c| c.is_ascii_lowercase()))
            || has(|c| "+/._~-".contains(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A presigned S3 URL.
    const S3: &str = "https://b.s3.amazonaws.com/x/data?X-Amz-Algorithm=AWS4-HMAC-SHA256&\
                      X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20260101&X-Amz-Signature=f00dfeed";

    /// Each row: text, what must be gone, what must stay.
    const SCRUBBED: [(&str, &[&str], &[&str]); 13] = [
        (
            S3,
            &["AKIAIOSFODNN7EXAMPLE", "f00dfeed", "HMAC"],
            &["https://b.s3.amazonaws.com/x/data?<redacted>"],
        ),
        (
            "see https://acct.blob.core.windows.net/c/b?sv=2022&sig=SAS%2Bsig) now",
            &["SAS%2Bsig", "sv=2022"],
            &["windows.net/c/b?<redacted>) now"],
        ),
        (
            "gcs http://storage/x#access_token=ya29.a0Af",
            &["ya29"],
            &["http://storage/x#<redacted>"],
        ),
        (
            "no query https://auth.example/token, ok",
            &[],
            &["https://auth.example/token, ok"],
        ),
        (
            "Signature=c2lnbmF0dXJl; sig=s1g, token=t0k&x=1",
            &["c2lnbmF0dXJl", "s1g", "t0k"],
            &[
                "x=1",
                "Signature=<redacted>; sig=<redacted>, token=<redacted>&",
            ],
        ),
        (
            r#"{"Secret":"s3cr3t","password": "pw 2","Username":"al"}"#,
            &["s3cr3t", "pw"],
            &[r#""Username":"al""#],
        ),
        (
            "token: abc123 expired",
            &["abc123"],
            &["token: <redacted> expired"],
        ),
        (
            "refresh_token=r3fresh&client_id=imgcheck",
            &["r3fresh"],
            &["client_id=imgcheck"],
        ),
        (
            "mytoken=kept sigma=kept tokens kept",
            &[],
            &["mytoken=kept sigma=kept tokens kept"],
        ),
        (
            r#"Bearer realm="https://auth.example/token",service="x""#,
            &[],
            &[r#"Bearer realm="https://auth.example/token",service="x""#],
        ),
        (
            "Authorization: Bearer eyJhbGciOi.eyJzdWIi.c2ln",
            &["eyJ"],
            &["Bearer <redacted>"],
        ),
        (
            "ünïcode token=ü-secret end",
            &["ü-secret"],
            &["ünïcode token=<redacted> end"],
        ),
        (
            "<Error><Code>SignatureDoesNotMatch</Code><AWSAccessKeyId>AKIAEXAMPLE</AWSAccessKeyId>\
             <SignatureProvided>0badc0de</SignatureProvided></Error>",
            &["AKIAEXAMPLE", "0badc0de"],
            &["<Code>SignatureDoesNotMatch</Code><AWSAccessKeyId><redacted></AWSAccessKeyId>"],
        ),
    ];

    #[test]
    fn signed_urls_and_secret_parameters_are_scrubbed() {
        for (text, gone, kept) in SCRUBBED {
            let out = scrub(text);
            for g in gone {
                assert!(!out.contains(g), "{text} -> {out}: {g}");
            }
            for k in kept {
                assert!(out.contains(k), "{text} -> {out}: {k}");
            }
            assert_eq!(scrub(&out), out, "scrubbing is idempotent");
        }
    }

    #[test]
    fn words_that_look_like_tokens_are_redacted() {
        let table = [
            (
                "refresh failed for alice key AKIAxQ7Zr4Secret99Word",
                "refresh failed for alice key <redacted>",
            ),
            (
                "docker-credential-pass: exit status 1 at 127.0.0.1:5000, ip-10-0-16-20",
                "docker-credential-pass: exit status 1 at 127.0.0.1:5000, ip-10-0-16-20",
            ),
            (
                "ghp_16C7e42F292c6912E7710c838347Ae178B4a bad",
                "<redacted> bad",
            ),
        ];
        for (text, want) in table {
            assert_eq!(scrub_words(text), want, "{text}");
        }
    }
}
