//! R-1 and R-5: roots, their canonical directory and their identity.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use rustix::fs::{FileType, RawMode, Stat};
use rustix::io::Errno;

use super::error::{IoFailure, NotFileKind, ResourceError, RootChangedReason, RootInvalidReason};

/// A trusted root: an id (ID-1) and the directory it names.
///
/// Nothing is checked until [`ResourceLoader::create`](super::ResourceLoader::create)
/// receives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceRoot {
    id: String,
    directory: PathBuf,
}

impl ResourceRoot {
    /// Names `directory` as the root `id`.
    pub fn new(id: impl Into<String>, directory: impl Into<PathBuf>) -> ResourceRoot {
        ResourceRoot {
            id: id.into(),
            directory: directory.into(),
        }
    }

    /// The root's id, as given.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The root's directory, as given.
    pub fn directory(&self) -> &Path {
        &self.directory
    }
}

/// A filesystem object's identity: its device and inode numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileIdentity {
    dev: u64,
    ino: u64,
}

impl FileIdentity {
    /// From a `stat` result. The field types differ between Unix platforms
    /// (`dev_t` is signed on some), hence the casts.
    #[allow(clippy::unnecessary_cast)]
    pub(crate) fn of_stat(stat: &Stat) -> Self {
        Self {
            dev: stat.st_dev as u64,
            ino: stat.st_ino as u64,
        }
    }

    pub(crate) fn of_cap(metadata: &cap_std::fs::Metadata) -> Self {
        use cap_std::fs::MetadataExt;
        Self {
            dev: metadata.dev(),
            ino: metadata.ino(),
        }
    }
}

/// The type of a `stat` result.
pub(crate) fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode as RawMode)
}

/// What a non-regular file is, from its `stat` type.
pub(crate) fn not_file_kind(file_type: FileType) -> NotFileKind {
    match file_type {
        FileType::Directory => NotFileKind::Directory,
        FileType::Fifo => NotFileKind::Fifo,
        FileType::Socket => NotFileKind::Socket,
        FileType::CharacterDevice => NotFileKind::CharDevice,
        FileType::BlockDevice => NotFileKind::BlockDevice,
        _ => NotFileKind::Other,
    }
}

/// The same classification for cap-std's file type.
pub(crate) fn not_file_kind_cap(file_type: cap_std::fs::FileType) -> NotFileKind {
    use cap_std::fs::FileTypeExt;
    if file_type.is_dir() {
        NotFileKind::Directory
    } else if file_type.is_fifo() {
        NotFileKind::Fifo
    } else if file_type.is_socket() {
        NotFileKind::Socket
    } else if file_type.is_char_device() {
        NotFileKind::CharDevice
    } else if file_type.is_block_device() {
        NotFileKind::BlockDevice
    } else {
        NotFileKind::Other
    }
}

/// A root as the loader holds it: its canonical directory, an open handle on
/// that directory, and the handle's identity.
///
/// The handle stays open for the loader's lifetime. Besides saving an open
/// per load, this pins the directory's inode: while the handle is open the
/// inode number cannot be reused by a new directory, so the identity check of
/// R-5 cannot be fooled by a delete-and-recreate that happens to get the same
/// inode number.
pub(crate) struct OpenedRoot {
    pub(crate) id: String,
    pub(crate) canonical: PathBuf,
    pub(crate) dir: Dir,
    identity: FileIdentity,
}

impl fmt::Debug for OpenedRoot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Root")
            .field("id", &self.id)
            .field("directory", &self.canonical)
            .field("dev", &self.identity.dev)
            .field("ino", &self.identity.ino)
            .finish()
    }
}

/// Why a root directory could not be canonicalised or opened.
fn open_failure(error: &io::Error) -> RootInvalidReason {
    match error.kind() {
        io::ErrorKind::NotFound => RootInvalidReason::Missing,
        io::ErrorKind::NotADirectory => RootInvalidReason::NotADirectory,
        _ => RootInvalidReason::Unreadable(IoFailure::from_io(error)),
    }
}

impl OpenedRoot {
    /// R-1 for one root whose id was already checked: canonicalise the
    /// directory once, open it, capture its identity and make sure the
    /// canonical path still names the opened directory.
    pub(crate) fn open(root: ResourceRoot) -> Result<Self, ResourceError> {
        let invalid = |root: &ResourceRoot, reason| ResourceError::RootInvalid {
            root_id: root.id.clone(),
            directory: root.directory.clone(),
            reason,
        };
        let canonical = std::fs::canonicalize(&root.directory)
            .map_err(|error| invalid(&root, open_failure(&error)))?;
        let dir = Dir::open_ambient_dir(&canonical, ambient_authority())
            .map_err(|error| invalid(&root, open_failure(&error)))?;
        let metadata = dir.dir_metadata().map_err(|error| {
            invalid(
                &root,
                RootInvalidReason::Unreadable(IoFailure::from_io(&error)),
            )
        })?;
        if !metadata.is_dir() {
            return Err(invalid(&root, RootInvalidReason::NotADirectory));
        }
        let opened = OpenedRoot {
            id: root.id.clone(),
            canonical,
            dir,
            identity: FileIdentity::of_cap(&metadata),
        };
        // The canonical path and the handle must agree from the start; if the
        // directory was swapped between canonicalisation and open, refuse.
        if opened.check_identity().is_err() {
            return Err(invalid(&root, RootInvalidReason::ChangedWhileOpening));
        }
        Ok(opened)
    }

    /// R-5: resolve the canonical directory again, without following a
    /// symlink in its last component, and compare its identity with the
    /// captured one.
    pub(crate) fn check_identity(&self) -> Result<(), ResourceError> {
        let reason = match rustix::fs::lstat(&self.canonical) {
            Ok(stat) => match file_type(&stat) {
                FileType::Symlink => RootChangedReason::Symlink,
                FileType::Directory if FileIdentity::of_stat(&stat) == self.identity => {
                    return Ok(());
                }
                FileType::Directory => RootChangedReason::OtherDirectory,
                _ => RootChangedReason::NotADirectory,
            },
            Err(Errno::NOENT | Errno::NOTDIR) => RootChangedReason::Missing,
            Err(errno) => RootChangedReason::Unresolvable(IoFailure::from_io(&errno.into())),
        };
        Err(ResourceError::RootChanged {
            root_id: self.id.clone(),
            directory: self.canonical.clone(),
            reason,
        })
    }

    /// The identity captured at creation, for tests of this module.
    #[cfg(test)]
    pub(crate) fn identity(&self) -> FileIdentity {
        self.identity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_handle_identity_is_the_canonical_directory() {
        let temp = tempfile::tempdir().unwrap();
        let opened = OpenedRoot::open(ResourceRoot::new("r", temp.path())).unwrap();
        let metadata =
            cap_std::fs::Metadata::from_just_metadata(std::fs::metadata(temp.path()).unwrap());
        assert_eq!(opened.identity(), FileIdentity::of_cap(&metadata));
        assert_eq!(
            opened.canonical,
            std::fs::canonicalize(temp.path()).unwrap()
        );
        assert_eq!(opened.check_identity(), Ok(()));
        assert!(format!("{opened:?}").contains("\"r\""));
    }
}
