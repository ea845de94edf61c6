//! Size budgets of the futures every request builds (issue 24: client CPU per request).
//! A future is moved and boxed whole, uninitialised room included: a request that carried
//! the room of every rare path (a token fetch, redirects, a `--deep` layer read) copied and
//! allocated about 20 KiB per request. These tests keep the common path small.

use std::sync::Arc;

use super::request::{Access, Kind};
use super::retry::Requests;
use super::{ClientOptions, RegistryClient};
use crate::auth::AuthStore;
use crate::digest::Digest;
use crate::graph::{WalkOptions, walk};
use crate::reference::ImageRef;
use crate::source::Source;
use crate::source::store::Store;

/// A source for a registry that is never asked: the futures are made, never polled.
fn store() -> Store {
    let client = Arc::new(RegistryClient::new(
        &ClientOptions::default(),
        AuthStore::default(),
    ));
    let ImageRef::Registry(reference) = "127.0.0.1:1/org/repo:v1".parse().unwrap() else {
        unreachable!("a registry reference")
    };
    Store::Registry {
        source: client.source(&reference),
        reference,
    }
}

#[test]
fn the_futures_of_a_read_stay_within_their_budgets() {
    let store = store();
    let digest = Digest::sha256(b"{}");
    let Store::Registry { source, reference } = &store else {
        unreachable!("a registry store")
    };
    let requests = Requests::new(&ClientOptions::default(), AuthStore::default());
    let access = Access {
        reference: reference.clone(),
        creds: Ok(None),
    };
    let req = access.by_digest(Kind::Manifest, &digest, 1 << 20);
    // (what, its size, the budget). Before the rare paths were boxed and the wrappers
    // stopped holding their argument twice, in this test's build: a request 9,424 bytes
    // (boxed per request), a manifest read 3,192, a walk 12,176; after: about a quarter.
    // A request stayed 2,560 bytes through hyper-util's pool, a pool of our own, and the
    // `Transport` seam: the answer's body is boxed, since an answer is held in several of
    // a request's states at once.
    let rows = [
        ("a request", size_of_val(&requests.fetch(&req)), 2560),
        (
            "a manifest read",
            size_of_val(&source.manifest(&digest, 1 << 20)),
            1024,
        ),
        (
            "a config read",
            size_of_val(&source.blob(&digest, 1 << 20)),
            1024,
        ),
        ("a tag's read", size_of_val(&source.top()), 1024),
        (
            "a walk",
            size_of_val(&walk(&store, WalkOptions::default())),
            3072,
        ),
    ];
    let over: Vec<String> = rows
        .iter()
        .filter(|(_, size, budget)| size > budget)
        .map(|(what, size, budget)| format!("{what}: {size} bytes (budget {budget})"))
        .collect();
    assert!(over.is_empty(), "futures over budget: {over:#?}");
}
