//! `imgcheck assemble` (and `imgcheck build`'s lists and per-platform tags): a manifest list
//! built from per-platform images, pushed by digest, verified, then tagged.
//!
//! One job per file:
//! - `request`: what to assemble, as the user gives it (children, `--target`, annotations);
//! - `index`: the list built from the children's configs, without I/O ([`build_index`]);
//! - `read`: each child read through the source the session opens for it;
//! - `copy`: blobs and manifests copied into the target through a
//!   [`WriteSink`](crate::source::sink::WriteSink), and what was copied ([`CopyStats`]);
//! - `push`: the flows, [`push_list`] and [`push_image`]: copy, push by digest, read back,
//!   verify, and only then move the tag;
//! - `unpushed`: the list of a dry run as a source, judged as the pushed list is;
//! - `failure`: why it refuses ([`AssembleRefusal`]) or stops ([`Failure`]).

mod copy;
mod failure;
mod index;
mod push;
mod read;
mod request;
mod unpushed;

pub use copy::CopyStats;
pub use failure::{AssembleRefusal, Failure, ReadFailure};
pub use index::{AssembledIndex, ChildImage, IndexFormat, build_index, entry_platform};
pub use push::{PushOutcome, Tag, push_image, push_list};
pub use request::{ChildSpec, Request, parse_annotations, target_ref};
