//! R-2, R-4, R-6, R-7, R-10: the loader and one load.

use std::collections::HashSet;
use std::fmt;
use std::io;
use std::sync::Arc;

use cap_std::fs::{OpenOptions, OpenOptionsExt};
use rustix::fs::{FileType, OFlags};
use rustix::io::Errno;

use super::MAX_RESOURCE_TEXT_BYTES;
use super::error::{
    ChangeReason, IoFailure, IoOperation, NotFileKind, ResourceError, RootInvalidReason,
};
use super::path;
use super::read::{decode, read_capped};
use super::root::{
    FileIdentity, OpenedRoot, ResourceRoot, file_type, not_file_kind, not_file_kind_cap,
};

/// A text resource: which root answered, the path as requested, the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    /// The id of the first root that holds the path.
    pub root_id: String,
    /// The path exactly as it was requested.
    pub path: String,
    /// The file's text, without a leading byte-order mark.
    pub content: String,
}

/// Reads UTF-8 text files from ordered trusted roots, confined beneath each
/// root (docs/spec.md section 2).
///
/// Blocking; `Send + Sync`, and `Clone` is cheap (the roots are shared
/// behind an `Arc`). Callers on an async runtime use `spawn_blocking`.
/// Nothing is cached between loads; every load re-checks each root it asks.
///
/// ```
/// use exthost::{ResourceLoader, ResourceRoot};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let user = tempfile::tempdir()?;
/// let builtin = tempfile::tempdir()?;
/// std::fs::create_dir(builtin.path().join("prompts"))?;
/// std::fs::write(builtin.path().join("prompts/system.md"), "\u{feff}Be brief.")?;
///
/// let loader = ResourceLoader::create([
///     ResourceRoot::new("user", user.path()),
///     ResourceRoot::new("builtin", builtin.path()),
/// ])?;
/// // "user" does not hold the file, so the search falls through to "builtin".
/// let found = loader.load_text("prompts/system.md")?.expect("builtin holds it");
/// assert_eq!(found.root_id, "builtin");
/// assert_eq!(found.content, "Be brief."); // the byte-order mark is removed
///
/// assert_eq!(loader.load_text("prompts/missing.md")?, None);
/// assert_eq!(loader.load_text("../etc/passwd").unwrap_err().code(), "RESOURCE_PATH_INVALID");
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct ResourceLoader {
    roots: Arc<[OpenedRoot]>,
}

impl fmt::Debug for ResourceLoader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceLoader")
            .field("roots", &self.roots)
            .finish()
    }
}

/// The answer of one root.
enum Lookup {
    /// The root holds the path: its text.
    Found(String),
    /// The root does not hold it; ask the next one.
    NotHere,
}

impl ResourceLoader {
    /// Makes a loader over `roots`, asked in the given order (R-1).
    ///
    /// Each root id must obey ID-1 and be unique; each directory must exist
    /// and be a directory. Each is canonicalised once, opened, and its
    /// identity (device, inode) captured. The first root that breaks a rule
    /// is named in a [`ResourceError::RootInvalid`]; an empty list is
    /// [`ResourceError::NoRoots`]. Both have the code
    /// `RESOURCE_ROOT_INVALID`, and no loader is made.
    pub fn create(
        roots: impl IntoIterator<Item = ResourceRoot>,
    ) -> Result<ResourceLoader, ResourceError> {
        let mut seen = HashSet::new();
        let mut opened = Vec::new();
        for root in roots {
            let invalid = |reason| ResourceError::RootInvalid {
                root_id: root.id().to_owned(),
                directory: root.directory().to_owned(),
                reason,
            };
            if let Err(error) = crate::id::validate_id_segment(root.id()) {
                return Err(invalid(RootInvalidReason::InvalidId(error)));
            }
            if !seen.insert(root.id().to_owned()) {
                return Err(invalid(RootInvalidReason::DuplicateId));
            }
            opened.push(OpenedRoot::open(root)?);
        }
        if opened.is_empty() {
            return Err(ResourceError::NoRoots);
        }
        Ok(ResourceLoader {
            roots: opened.into(),
        })
    }

    /// The root ids, in the order the roots are asked.
    pub fn root_ids(&self) -> Vec<String> {
        self.roots.iter().map(|root| root.id.clone()).collect()
    }

    /// Loads the text at `path` from the first root that holds it.
    ///
    /// The path is checked against the grammar first ([`validate_resource_path`](super::validate_resource_path)),
    /// before any filesystem access. Then each root is asked in order: its
    /// identity is checked again (R-5), the path is resolved and opened
    /// beneath it (R-4), the handle must be a regular file (R-6), at most
    /// [`MAX_RESOURCE_TEXT_BYTES`] + 1 bytes are read (R-8), the path must
    /// still resolve to the same file afterwards (R-7), and the bytes must be
    /// UTF-8 (R-9). A root that does not hold the path passes the question to
    /// the next; every other failure is returned at once (R-2). `Ok(None)`
    /// when no root holds the path.
    pub fn load_text(&self, path: &str) -> Result<Option<Resource>, ResourceError> {
        self.load_text_with_hook(path, |_| {})
    }

    /// [`load_text`](Self::load_text) with a test seam: `between_open_and_read`
    /// runs with the root id after the file was opened and its handle checked,
    /// before the first byte is read and before the post-read identity check.
    ///
    /// Tests use it to replace, remove or grow the file at a known point,
    /// deterministically, to show R-7 and R-8 hold. It is not part of the
    /// stable API.
    #[doc(hidden)]
    pub fn load_text_with_hook(
        &self,
        path: &str,
        mut between_open_and_read: impl FnMut(&str),
    ) -> Result<Option<Resource>, ResourceError> {
        path::validate_resource_path(path)?;
        for root in self.roots.iter() {
            match load_from(root, path, &mut between_open_and_read)? {
                Lookup::Found(content) => {
                    return Ok(Some(Resource {
                        root_id: root.id.clone(),
                        path: path.to_owned(),
                        content,
                    }));
                }
                Lookup::NotHere => {}
            }
        }
        Ok(None)
    }
}

/// The flags added to a read-only open: `O_NONBLOCK` so that opening a FIFO
/// returns at once instead of waiting for a writer, `O_NOCTTY` so that a
/// terminal device never becomes the controlling terminal. cap-std adds
/// `O_CLOEXEC`. Neither flag changes how a regular file is read.
fn open_options() -> OpenOptions {
    let mut options = OpenOptions::new();
    options.read(true);
    options.custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32);
    options
}

/// Asks one root for `path` (already valid per R-3).
fn load_from(
    root: &OpenedRoot,
    path: &str,
    between_open_and_read: &mut dyn FnMut(&str),
) -> Result<Lookup, ResourceError> {
    // R-5: the configured directory still is the captured one.
    root.check_identity()?;

    // R-4: resolve and open beneath the root handle. cap-std refuses any
    // resolution that leaves the root (`..` above it, an absolute symlink
    // target), whether or not the target exists.
    let file = match root.dir.open_with(path, &open_options()) {
        Ok(file) => file.into_std(),
        Err(error) => return classify_open_error(root, path, &error),
    };

    // R-6: the handle must be a regular file. Its identity is the identity
    // seen while resolving: resolution and open are one step.
    let stat = rustix::fs::fstat(&file)
        .map_err(|errno| io_error(root, path, IoOperation::Inspect, &errno.into()))?;
    let kind = file_type(&stat);
    if kind != FileType::RegularFile {
        return Err(not_file(root, path, not_file_kind(kind)));
    }
    let identity = FileIdentity::of_stat(&stat);

    between_open_and_read(&root.id);

    // R-8: read at most cap + 1 bytes.
    let size_hint = u64::try_from(stat.st_size).unwrap_or(0);
    let bytes = read_capped(&file, size_hint, MAX_RESOURCE_TEXT_BYTES + 1)
        .map_err(|error| io_error(root, path, IoOperation::Read, &error))?;

    // R-7: after the read the path still resolves, beneath the root, to the
    // file that was read. The handle stays open until this check is done, so
    // the file's inode number cannot be reused meanwhile.
    let changed = |reason| ResourceError::ChangedDuringRead {
        root_id: root.id.clone(),
        path: path.to_owned(),
        reason,
    };
    match resolve_again(root, path) {
        Ok(now) if FileIdentity::of_cap(&now) == identity => {}
        Ok(_) => return Err(changed(ChangeReason::Replaced)),
        Err(error) if is_escape(&error) => return Err(changed(ChangeReason::Escaping)),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return Err(changed(ChangeReason::Gone));
        }
        Err(error) => {
            return Err(changed(ChangeReason::Unresolvable(IoFailure::from_io(
                &error,
            ))));
        }
    }
    drop(file);

    if bytes.len() > MAX_RESOURCE_TEXT_BYTES {
        return Err(ResourceError::TooLarge {
            root_id: root.id.clone(),
            path: path.to_owned(),
            limit: MAX_RESOURCE_TEXT_BYTES,
        });
    }

    // R-9: fatal UTF-8, one leading byte-order mark removed.
    decode(bytes)
        .map(Lookup::Found)
        .map_err(|failure| ResourceError::InvalidUtf8 {
            root_id: root.id.clone(),
            path: path.to_owned(),
            valid_up_to: failure.valid_up_to,
            error_len: failure.error_len,
        })
}

/// Resolves `path` beneath the root again, following symlinks, and returns
/// what it names now.
///
/// A single component that is not a symlink names the root's own entry, so
/// cap-std's one-call `symlink_metadata` (an `fstatat` relative to the root
/// handle, without following) already is the answer; anything else goes
/// through cap-std's confined `metadata`, which follows symlinks beneath the
/// root.
fn resolve_again(root: &OpenedRoot, path: &str) -> io::Result<cap_std::fs::Metadata> {
    if !path.contains('/') {
        let entry = root.dir.symlink_metadata(path)?;
        if !entry.file_type().is_symlink() {
            return Ok(entry);
        }
    }
    root.dir.metadata(path)
}

/// Whether cap-std refused a resolution because it would leave the root.
///
/// cap-std reports an escape (its own check, or `EXDEV` from `openat2` with
/// `RESOLVE_BENEATH`) as a `PermissionDenied` error that carries no
/// operating-system error number; a real `EACCES` carries one.
fn is_escape(error: &io::Error) -> bool {
    error.kind() == io::ErrorKind::PermissionDenied && error.raw_os_error().is_none()
}

/// R-2 and R-4 for a failed open: "not here" falls through, everything else
/// stops the search.
fn classify_open_error(
    root: &OpenedRoot,
    path: &str,
    error: &io::Error,
) -> Result<Lookup, ResourceError> {
    if is_escape(error) {
        return Err(ResourceError::PathEscape {
            root_id: root.id.clone(),
            path: path.to_owned(),
        });
    }
    match Errno::from_io_error(error) {
        // The path, a parent directory, or the target of a symlink that
        // stays inside the root does not exist.
        Some(Errno::NOENT) => Ok(Lookup::NotHere),
        // A component before the last one exists but is not a directory.
        Some(Errno::NOTDIR) => Err(not_file(root, path, NotFileKind::ParentNotDirectory)),
        // A symlink loop or a chain of more than 40 links.
        Some(Errno::LOOP) => Err(io_error(root, path, IoOperation::Open, error)),
        // Some files cannot be opened at all (a socket gives `ENXIO`); look
        // at what the path names, without opening it, before calling the
        // failure an I/O error.
        _ => match root.dir.metadata(path) {
            Ok(metadata) if !metadata.is_file() => Err(not_file(
                root,
                path,
                not_file_kind_cap(metadata.file_type()),
            )),
            _ => Err(io_error(root, path, IoOperation::Open, error)),
        },
    }
}

fn not_file(root: &OpenedRoot, path: &str, kind: NotFileKind) -> ResourceError {
    ResourceError::NotFile {
        root_id: root.id.clone(),
        path: path.to_owned(),
        kind,
    }
}

fn io_error(
    root: &OpenedRoot,
    path: &str,
    operation: IoOperation,
    error: &io::Error,
) -> ResourceError {
    ResourceError::Io {
        root_id: root.id.clone(),
        path: path.to_owned(),
        operation,
        failure: IoFailure::from_io(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_send_sync_clone<T: Send + Sync + Clone + fmt::Debug>() {}

    #[test]
    fn the_loader_is_send_sync_clone_and_debug() {
        assert_send_sync_clone::<ResourceLoader>();
        assert_send_sync_clone::<ResourceError>();
    }

    #[test]
    fn escapes_are_told_apart_from_permission_errors() {
        let temp = tempfile::tempdir().unwrap();
        let root = OpenedRoot::open(ResourceRoot::new("r", temp.path())).unwrap();
        let escape = root.dir.open("..").unwrap_err();
        assert!(is_escape(&escape), "{escape:?}");
        assert!(!is_escape(&io::Error::from_raw_os_error(
            Errno::ACCESS.raw_os_error()
        )));
        assert!(!is_escape(&io::Error::from(io::ErrorKind::NotFound)));
    }

    #[test]
    fn clones_share_the_roots() {
        let temp = tempfile::tempdir().unwrap();
        let loader = ResourceLoader::create([ResourceRoot::new("r", temp.path())]).unwrap();
        let clone = loader.clone();
        assert!(Arc::ptr_eq(&loader.roots, &clone.roots));
        assert!(format!("{clone:?}").contains("ResourceLoader"));
    }
}
