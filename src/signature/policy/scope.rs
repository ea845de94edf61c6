//! Which scope of a policy (or of registries.d) applies to a reference, as containers/image
//! picks it: `policyContext.requirementsForImageRef` (`signature/policy_eval.go`) looks up the
//! reference's `PolicyConfigurationIdentity` (`name:tag` or `name@digest`), then each of its
//! `PolicyConfigurationNamespaces` (`docker/policyconfiguration/naming.go`,
//! `DockerReferenceNamespaces`: the repository, each parent namespace, the host, then
//! `*.`-wildcards of the host's domains, port dropped), then the transport's `""` scope, then
//! `default`. registries.d's `use-sigstore-attachments` is looked up the same way
//! (`docker/registries_d.go`, `useSigstoreAttachments`), then `default-docker`.

use super::document::{PolicyRequirement, SignaturePolicy};
use crate::reference::RegistryRef;

/// The reference as containers/image names it for policy lookups: `host/path:tag` or
/// `host/path@digest` (a digest wins over a tag; a bare name is `:latest`).
pub fn policy_identity(reference: &RegistryRef) -> String {
    let name = format!("{}/{}", reference.registry, reference.repository);
    match (&reference.digest, &reference.tag) {
        (Some(d), _) => format!("{name}@{d}"),
        (None, Some(t)) => format!("{name}:{t}"),
        (None, None) => format!("{name}:latest"),
    }
}

/// The namespaces searched after the identity, most specific first.
pub fn policy_namespaces(reference: &RegistryRef) -> Vec<String> {
    let mut out = Vec::new();
    let mut name = format!("{}/{}", reference.registry, reference.repository);
    loop {
        out.push(name.clone());
        match name.rfind('/') {
            Some(i) => name.truncate(i),
            None => break,
        }
    }
    if let Some(i) = name.find(':') {
        name.truncate(i);
    }
    while let Some(i) = name.find('.') {
        name = name[i + 1..].to_string();
        out.push(format!("*.{name}"));
    }
    out
}

/// Every key looked up for `reference`, in order: its identity, then its namespaces.
pub fn search_order(reference: &RegistryRef) -> Vec<String> {
    let mut keys = vec![policy_identity(reference)];
    keys.extend(policy_namespaces(reference));
    keys
}

/// The scope that applies to `reference` (`""` for the transport's default scope, `None` for
/// the policy's `default`) and its requirements.
pub fn requirements_for<'p>(
    policy: &'p SignaturePolicy,
    reference: &RegistryRef,
) -> (Option<String>, &'p [PolicyRequirement]) {
    let found = search_order(reference)
        .into_iter()
        .chain(std::iter::once(String::new()))
        .find_map(|key| policy.docker.get(&key).map(|reqs| (key, reqs)));
    match found {
        Some((key, reqs)) => (Some(key), reqs),
        None => (None, &policy.default),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::policy::document::parse_policy;

    fn r(s: &str) -> RegistryRef {
        RegistryRef::parse_pull_spec(s).unwrap()
    }

    /// containers/image `DockerReferenceNamespaces` (docker/policyconfiguration/naming.go):
    /// repository, parents, host, then the host's wildcard domains without the port.
    #[test]
    fn namespaces_are_the_repository_its_parents_the_host_then_wildcards() {
        let cases = [
            (
                "a.b.example.com:5000/ns/repo:v1",
                "a.b.example.com:5000/ns/repo:v1",
                &[
                    "a.b.example.com:5000/ns/repo",
                    "a.b.example.com:5000/ns",
                    "a.b.example.com:5000",
                    "*.b.example.com",
                    "*.example.com",
                    "*.com",
                ][..],
            ),
            (
                "busybox",
                "docker.io/library/busybox:latest",
                &[
                    "docker.io/library/busybox",
                    "docker.io/library",
                    "docker.io",
                    "*.io",
                ][..],
            ),
            (
                "localhost:5000/x@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                "localhost:5000/x@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                &["localhost:5000/x", "localhost:5000"][..],
            ),
        ];
        for (input, identity, namespaces) in cases {
            assert_eq!(policy_identity(&r(input)), identity, "{input}");
            assert_eq!(policy_namespaces(&r(input)), namespaces, "{input}");
        }
    }

    /// containers/image `requirementsForImageRef` (signature/policy_eval.go): the most
    /// specific scope wins; `""` before `default`.
    #[test]
    fn the_most_specific_scope_wins() {
        let policy = parse_policy(
            r#"{"default":[{"type":"reject"}],"transports":{"docker":{
                "q.example.com/ns/repo:v1":[{"type":"insecureAcceptAnything"}],
                "q.example.com/ns":[{"type":"reject"}],
                "q.example.com":[{"type":"insecureAcceptAnything"}],
                "*.example.com":[{"type":"reject"}]
            }}}"#,
        )
        .unwrap();
        let table = [
            // (reference, scope chosen; source: policy_eval.go requirementsForImageRef)
            ("q.example.com/ns/repo:v1", Some("q.example.com/ns/repo:v1")),
            ("q.example.com/ns/repo:v2", Some("q.example.com/ns")),
            ("q.example.com/other/repo:v1", Some("q.example.com")),
            ("r.example.com/x:v1", Some("*.example.com")),
            ("quay.io/x:v1", None),
        ];
        for (input, scope) in table {
            let (got, _) = requirements_for(&policy, &r(input));
            assert_eq!(got.as_deref(), scope, "{input}");
        }
        let with_default = parse_policy(
            r#"{"default":[{"type":"reject"}],"transports":{"docker":{"":[{"type":"insecureAcceptAnything"}]}}}"#,
        )
        .unwrap();
        let (scope, reqs) = requirements_for(&with_default, &r("quay.io/x:v1"));
        assert_eq!(scope.as_deref(), Some(""));
        assert_eq!(reqs[0].type_name(), "insecureAcceptAnything");
    }
}
