//! The list of a dry run, read as if it had been pushed: a [`Source`] serving the assembled
//! index from memory, each entry's manifest as it was read from its child, and each config and
//! layer from the child's own source. `push_list` walks and judges it as it walks and judges
//! the pushed list read back by digest, so a dry run gives the verdict the real run would give
//! before moving the tag, with nothing written.

use super::index::AssembledIndex;
use super::read::Piece;
use crate::digest::Digest;
use crate::source::store::Store;
use crate::source::{FetchError, Fetched, Source};

/// The unpushed list and where each of its objects is.
pub(super) struct Unpushed<'a> {
    /// `TARGET@DIGEST`, the name the pushed list would have.
    pub(super) name: String,
    /// The list.
    pub(super) index: &'a AssembledIndex,
    /// Its entries, as read from the children.
    pub(super) pieces: &'a [Piece],
    /// The children's sources, by [`Piece::source`].
    pub(super) sources: &'a [Store],
}

impl Unpushed<'_> {
    /// The piece whose manifest or blobs hold `digest`.
    fn piece_with(&self, digest: &Digest, blob: bool) -> Option<&Piece> {
        self.pieces.iter().find(|p| match blob {
            false => p.image.digest == *digest,
            true => p
                .blobs
                .iter()
                .any(|d| d.digest().is_ok_and(|b| b == *digest)),
        })
    }

    fn not_here(&self, digest: &Digest) -> FetchError {
        FetchError::NotFound(format!("{digest} is not part of the list {}", self.name))
    }
}

impl Source for Unpushed<'_> {
    fn name(&self) -> String {
        self.name.clone()
    }

    fn pinned(&self) -> Option<Digest> {
        Some(self.index.digest.clone())
    }

    async fn top(&self) -> Result<Fetched, FetchError> {
        Ok(Fetched {
            bytes: self.index.bytes.clone(),
            media_type: Some(self.index.format.media_type().to_string()),
            claimed_digest: Some(self.index.digest.clone()),
            claimed_size: Some(self.index.bytes.len() as u64),
        })
    }

    async fn manifest(&self, digest: &Digest, _limit: u64) -> Result<Vec<u8>, FetchError> {
        match self.piece_with(digest, false) {
            Some(piece) => Ok(piece.manifest.clone()),
            None => Err(self.not_here(digest)),
        }
    }

    async fn blob(&self, digest: &Digest, limit: u64) -> Result<Vec<u8>, FetchError> {
        match self.piece_with(digest, true) {
            Some(piece) => self.sources[piece.source].blob(digest, limit).await,
            None => Err(self.not_here(digest)),
        }
    }
}
