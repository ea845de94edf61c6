//! The assembly step of `imgcheck build`: the list is made by the assemble code
//! ([`crate::assemble::build_index`] builds it, [`crate::assemble::push_list`] pushes it raw),
//! never by `buildah manifest`, so each entry's platform (os.version included) is copied from
//! the image's config.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::assemble::{ChildSpec, Request, push_list};
use crate::build::error::StepError;
use crate::build::run::Assembler;
use crate::digest::Digest;
use crate::policy::Policy;
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;

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
