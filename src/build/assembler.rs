//! The assembly step of `imgcheck build`: the list is made by the assemble code
//! ([`crate::assemble`] builds it, [`crate::push`] pushes it raw), never by `buildah manifest`,
//! so each entry's platform (os.version included) is copied from the image's config.

use std::collections::BTreeMap;

use crate::assemble::ChildSpec;
use crate::build::run::{Assembler, StepError};
use crate::digest::Digest;
use crate::exit::{Classify, ExitKind};
use crate::push::{Request, assemble};
use crate::reference::{ImageRef, RegistryRef};
use crate::session::Session;

/// Assembles through [`crate::push::assemble`] and pushes the list by tag.
pub struct PushAssembler;

impl Assembler for PushAssembler {
    async fn assemble(
        &self,
        session: &Session,
        children: &[RegistryRef],
        target: &RegistryRef,
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
        };
        let outcome = assemble(session, &request).await.map_err(|e| {
            // The step's message is the error and its causes on one line, as before.
            let m = crate::report::one_line(&e);
            match e.exit_kind() {
                ExitKind::Usage => StepError::Failed(m),
                _ => StepError::Unavailable(m),
            }
        })?;
        Ok(outcome.index.digest)
    }
}
