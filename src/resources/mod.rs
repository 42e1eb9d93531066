//! Trusted-root resource loader (docs/spec.md section 2, rules ).
//!
//! A [`ResourceLoader`] reads UTF-8 text files from an ordered list of
//! trusted [`ResourceRoot`]s. The first root that holds a path answers; a
//! root that does not hold it passes the question on; any other failure
//! stops the search (fail closed).
//!
//! What holds for every load:
//!
//! * the path is checked against a platform-independent grammar before any
//!   filesystem access ([`validate_resource_path`], R-3);
//! * each root's directory is checked to still be the one captured at
//!   creation;
//! * resolution happens beneath the root's directory handle with cap-std, so
//!   no path and no symlink leads outside it;
//! * only regular files are read, and opening a FIFO never blocks;
//! * the file read is the file the path names, before and after the read
//!
//! * at most [`MAX_RESOURCE_TEXT_BYTES`] bytes, strict UTF-8, one leading
//!   byte-order mark removed.
//!
//! The limits (hard links, the file boundary, races) are in
//! `docs/resources.md`.
//!
//! The filesystem part needs a Unix platform: file identity is the device
//! and inode pair.

#[cfg(not(unix))]
compile_error!(
    "exthost's resource loader needs a Unix platform: file identity is (st_dev, st_ino)"
);

mod error;
mod loader;
mod path;
mod read;
mod root;

pub use error::{
    ChangeReason, IoFailure, IoOperation, NotFileKind, PathInvalidReason, ResourceError,
    RootChangedReason, RootInvalidReason,
};
pub use loader::{Resource, ResourceLoader};
pub use path::{MAX_PATH_BYTES, MAX_SEGMENT_BYTES, validate_resource_path};
pub use root::ResourceRoot;

/// The largest resource, in encoded bytes (byte-order mark included): 1 MiB.
///
/// A file of exactly this size loads; one byte more fails with
/// `RESOURCE_TOO_LARGE`.
pub const MAX_RESOURCE_TEXT_BYTES: usize = 1_048_576;
