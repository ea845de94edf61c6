//! Does a signature's `docker-reference` fit the image pulled, under a `signedIdentity`?
//! As containers/image decides it (`signature/policy_reference_match.go`): both sides parsed
//! with `reference.ParseNormalizedNamed` (`busybox` is `docker.io/library/busybox`), then
//! `matchesDockerReference` of each kind.

use super::document::SignedIdentity;
use crate::reference::RegistryRef;

/// `name` (`host/path`) of a parsed reference.
fn name(r: &RegistryRef) -> String {
    format!("{}/{}", r.registry, r.repository)
}

/// Neither a tag nor a digest (`reference.IsNameOnly`).
fn name_only(r: &RegistryRef) -> bool {
    r.tag.is_none() && r.digest.is_none()
}

/// `matchRepoDigestOrExact` on parsed values (`matchRepoDigestOrExactReferenceValues`): a
/// tagged intended image needs the same `name:tag`, a digested one the same repository.
fn repo_digest_or_exact(intended: &RegistryRef, signature: &RegistryRef) -> bool {
    if name_only(signature) {
        return false;
    }
    match (&intended.tag, &intended.digest) {
        (Some(_), _) => signature.to_string() == intended.to_string(),
        (None, Some(_)) => name(signature) == name(intended),
        (None, None) => false,
    }
}

/// Does `prefix` match `name` as `prmRemapIdentity.refMatchesPrefix` does: the whole name, or
/// a leading part of it followed by `/`.
fn prefix_matches(name: &str, prefix: &str) -> bool {
    name == prefix
        || (name.len() > prefix.len()
            && name.starts_with(prefix)
            && name.as_bytes()[prefix.len()] == b'/')
}

/// Does a signature naming `signed` (as written in its payload) fit the image pulled as
/// `intended` under `identity`? `signed` that does not parse never fits.
pub fn identity_matches(identity: &SignedIdentity, intended: &RegistryRef, signed: &str) -> bool {
    let Ok(signature) = RegistryRef::parse_pull_spec(signed) else {
        return false;
    };
    let parse = |s: &str| RegistryRef::parse_pull_spec(s).ok();
    match identity {
        SignedIdentity::MatchRepoDigestOrExact => repo_digest_or_exact(intended, &signature),
        SignedIdentity::MatchExact => {
            !name_only(intended)
                && !name_only(&signature)
                && signature.to_string() == intended.to_string()
        }
        SignedIdentity::MatchRepository => name(&signature) == name(intended),
        SignedIdentity::ExactReference(want) => parse(want).is_some_and(|want| {
            !name_only(&want) && !name_only(&signature) && want.to_string() == signature.to_string()
        }),
        SignedIdentity::ExactRepository(want) => {
            parse(want).is_some_and(|want| name(&want) == name(&signature))
        }
        SignedIdentity::RemapIdentity {
            prefix,
            signed_prefix,
        } => {
            let full = intended.to_string();
            let remapped = match prefix_matches(&name(intended), prefix) {
                true => parse(&full.replacen(prefix.as_str(), signed_prefix, 1)),
                false => Some(intended.clone()),
            };
            remapped.is_some_and(|r| repo_digest_or_exact(&r, &signature))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const D: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn r(s: &str) -> RegistryRef {
        RegistryRef::parse_pull_spec(s).unwrap()
    }

    /// Each row: signedIdentity, image pulled, signature's docker-reference, admitted.
    /// Source: containers/image signature/policy_reference_match.go, `matchesDockerReference`
    /// of prmMatchRepoDigestOrExact, prmMatchExact, prmMatchRepository, prmExactReference,
    /// prmExactRepository, prmRemapIdentity (`refMatchesPrefix`, `remapReferencePrefix`).
    #[rustfmt::skip]
    const TABLE: &[(&str, &str, &str, bool)] = &[
        ("repo-digest-or-exact", "q.io/a/b:v1", "q.io/a/b:v1", true),
        ("repo-digest-or-exact", "q.io/a/b:v1", "q.io/a/b:v2", false),
        ("repo-digest-or-exact", "q.io/a/b:v1", "q.io/a/b", false),
        ("repo-digest-or-exact", "q.io/a/b@D", "q.io/a/b:anything", true),
        ("repo-digest-or-exact", "q.io/a/b@D", "q.io/a/c:v1", false),
        ("repo-digest-or-exact", "docker.io/library/busybox:1", "busybox:1", true),
        ("repo-digest-or-exact", "q.io/a/b:v1", "not a reference", false),
        ("exact", "q.io/a/b:v1", "q.io/a/b:v1", true),
        ("exact", "q.io/a/b@D", "q.io/a/b:v1", false),
        ("repository", "q.io/a/b:v1", "q.io/a/b:v9", true),
        ("repository", "q.io/a/b:v1", "q.io/a/c:v1", false),
        ("exact-reference q.io/x/y:v1", "q.io/a/b:v1", "q.io/x/y:v1", true),
        ("exact-reference q.io/x/y:v1", "q.io/a/b:v1", "q.io/a/b:v1", false),
        ("exact-repository q.io/x/y", "q.io/a/b:v1", "q.io/x/y:v7", true),
        ("exact-repository q.io/x/y", "q.io/a/b:v1", "q.io/a/b:v1", false),
        ("remap mirror.local/ocp q.io/a", "mirror.local/ocp/b:v1", "q.io/a/b:v1", true),
        ("remap mirror.local/ocp q.io/a", "mirror.local/ocp/b:v1", "mirror.local/ocp/b:v1", false),
        ("remap mirror.local/ocp q.io/a", "mirror.local/ocpx/b:v1", "q.io/a/b:v1", false),
        ("remap mirror.local/ocp q.io/a", "mirror.local/ocp/b@D", "q.io/a/b:v3", true),
        ("remap mirror.local/ocp q.io/a", "q.io/a/b:v1", "q.io/a/b:v1", true),
    ];

    /// The identity a row names.
    fn identity(row: &str) -> SignedIdentity {
        let words: Vec<String> = row.split(' ').map(String::from).collect();
        match words[0].as_str() {
            "repo-digest-or-exact" => SignedIdentity::MatchRepoDigestOrExact,
            "exact" => SignedIdentity::MatchExact,
            "repository" => SignedIdentity::MatchRepository,
            "exact-reference" => SignedIdentity::ExactReference(words[1].clone()),
            "exact-repository" => SignedIdentity::ExactRepository(words[1].clone()),
            _ => SignedIdentity::RemapIdentity {
                prefix: words[1].clone(),
                signed_prefix: words[2].clone(),
            },
        }
    }

    #[test]
    fn signed_identities_match_as_containers_image_matches_them() {
        for (row, intended, signed, want) in TABLE {
            let intended = intended.replace("@D", &format!("@{D}"));
            let got = identity_matches(&identity(row), &r(&intended), signed);
            assert_eq!(got, *want, "{row}: {intended} signed as {signed}");
        }
    }
}
