//! The assembly step of `imgcheck build` ([`Assembler`], what the run asks of it, and
//! [`PushAssembler`]): the list is made by the assemble code ([`crate::assemble::build_index`] builds it,
//! [`crate::assemble::push_list`] pushes it raw), never by `buildah manifest`, so each entry's platform
//! (os.version included) is copied from the image's config.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::assemble::ChildSpec;
use crate::assemble::{Request, push_list};
use crate::builder::error::StepError;
use crate::digest::Digest;
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;

/// The assembly step: the pushed per-platform images of one image become its list, pushed to
/// `target`. Implemented over the assemble code ([`crate::assemble`]), not `buildah manifest`,
/// so every entry's platform (os.version included) is copied from the image's config.
pub trait Assembler {
    /// Assembles and pushes the list by digest; moves `target` to it when it passes
    /// `policy`. Returns its digest.
    fn assemble(
        &self,
        session: &Session,
        children: &[RegistryRef],
        target: &RegistryRef,
        policy: &Policy,
    ) -> impl std::future::Future<Output = Result<Digest, StepError>>;
}

/// Assembles through [`crate::assemble::push_list`]: the list is pushed by digest and verified
/// against the image's policy before the tag moves to it (never forced: a failing list
/// leaves the tag as it was, and the build's own verification reports it by digest).
pub struct PushAssembler;

impl Assembler for PushAssembler {
    async fn assemble(
        &self,
        session: &Session,
        children: &[RegistryRef],
        target: &RegistryRef,
        policy: &Policy,
    ) -> Result<Digest, StepError> {
        let request = Request {
            target: target.clone(),
            children: children
                .iter()
                .map(|c| ChildSpec {
                    input: c.to_string(),
                    reference: ImageRef::Registry(c.clone()),
                    os_version: None,
                })
                .collect(),
            format: None,
            annotations: BTreeMap::new(),
            dry_run: false,
            policy: policy.clone(),
            force: false,
        };
        let outcome = push_list(session, &request)
            .await
            .map_err(|e| StepError::Assemble(Arc::new(e)))?;
        Ok(outcome.index.digest)
    }
}
