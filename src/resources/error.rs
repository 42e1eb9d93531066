//! The loader's error type: plain, cloneable data with a stable code.

use std::fmt;
use std::io;
use std::path::PathBuf;

use thiserror::Error;

use crate::error::codes;
use crate::id::IdError;

/// An I/O failure kept as data: the error kind, the operating-system error
/// number when there is one, and the message.
///
/// `std::io::Error` is neither `Clone` nor `Eq`, so the loader never stores
/// one; it keeps what a caller can act on.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct IoFailure {
    /// The portable error kind.
    pub kind: io::ErrorKind,
    /// The raw operating-system error number (`errno`), if the failure came
    /// from the operating system.
    pub raw_os_error: Option<i32>,
    /// The error's message.
    pub message: String,
}

impl IoFailure {
    /// Captures the data of an I/O error.
    pub fn from_io(error: &io::Error) -> Self {
        Self {
            kind: error.kind(),
            raw_os_error: error.raw_os_error(),
            message: error.to_string(),
        }
    }
}

impl From<&io::Error> for IoFailure {
    fn from(error: &io::Error) -> Self {
        Self::from_io(error)
    }
}

impl fmt::Display for IoFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// Which rule of the path grammar (docs/spec.md R-3) a refused path breaks.
///
/// Byte offsets count from the start of the path; segment indexes count the
/// `/`-separated segments from 0.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum PathInvalidReason {
    /// The path is the empty string.
    #[error("the path is empty")]
    Empty,
    /// The path is longer than 1,024 bytes.
    #[error("the path is {len} bytes long; at most 1024 are allowed")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A segment is longer than 255 bytes.
    #[error("segment {segment} is {len} bytes long; at most 255 are allowed")]
    SegmentTooLong {
        /// The segment's index.
        segment: usize,
        /// Its length in bytes.
        len: usize,
    },
    /// The path starts with `/` or `\`: it is absolute.
    #[error("the path is absolute; resource paths are relative to their root")]
    Absolute,
    /// The path starts with a Windows drive (`C:`).
    #[error("the path starts with a drive letter")]
    DriveLetter,
    /// The path starts with a UNC prefix (`\\server` or `//server`).
    #[error("the path starts with a UNC prefix")]
    UncPrefix,
    /// The path starts with a Windows device or NT namespace prefix
    /// (`\\?\`, `\\.\`, `//?/`, `//./`, `\??\`).
    #[error("the path starts with a device namespace prefix")]
    DevicePrefix,
    /// A `\` (a separator on Windows).
    #[error("backslash at byte {byte}")]
    Backslash {
        /// Its byte offset.
        byte: usize,
    },
    /// A control character (general category Cc), NUL included.
    #[error("control character {character:?} at byte {byte}")]
    ControlCharacter {
        /// The character.
        character: char,
        /// Its byte offset.
        byte: usize,
    },
    /// A `:` (drive letters, NTFS alternate data streams).
    #[error("colon at byte {byte}")]
    Colon {
        /// Its byte offset.
        byte: usize,
    },
    /// One of `<`, `>`, `"`, `|`, `?`, `*`.
    #[error("reserved character {character:?} at byte {byte}")]
    ReservedCharacter {
        /// The character.
        character: char,
        /// Its byte offset.
        byte: usize,
    },
    /// A Unicode format or bidirectional control character (category Cf).
    #[error("format character {character:?} at byte {byte}")]
    FormatCharacter {
        /// The character.
        character: char,
        /// Its byte offset.
        byte: usize,
    },
    /// A non-ASCII character whose compatibility form (NFKC) contains a
    /// refused character (`.`, `/`, `\`, `:`, `<>"|?*`, a control or format
    /// character).
    #[error(
        "character {character:?} at byte {byte} has a compatibility form containing {refused:?}"
    )]
    CompatibilityForm {
        /// The character as given.
        character: char,
        /// Its byte offset.
        byte: usize,
        /// The refused character its NFKC form contains.
        refused: char,
    },
    /// One of the slash look-alikes U+2044, U+2215, U+2216, U+29F5, U+29F8,
    /// U+29F9.
    #[error("slash look-alike {character:?} at byte {byte}")]
    SlashLookalike {
        /// The character.
        character: char,
        /// Its byte offset.
        byte: usize,
    },
    /// An empty segment: `//` inside the path, or a trailing `/`.
    #[error("segment {segment} is empty")]
    EmptySegment {
        /// The segment's index.
        segment: usize,
    },
    /// A `.` or `..` segment.
    #[error("segment {segment} is a dot segment")]
    DotSegment {
        /// The segment's index.
        segment: usize,
    },
    /// A segment ending with `.` or a space (Windows strips them).
    #[error("segment {segment} ends with a dot or a space")]
    TrailingDotOrSpace {
        /// The segment's index.
        segment: usize,
    },
    /// A segment whose stem is a Windows device name (`CON`, `COM1`,
    /// `CONIN$`, ...).
    #[error("segment {segment} names the Windows device {device:?}")]
    DeviceName {
        /// The segment's index.
        segment: usize,
        /// The device name, in its canonical spelling.
        device: &'static str,
    },
}

/// Why a root was refused by [`ResourceLoader::create`](super::ResourceLoader::create)
/// (docs/spec.md R-1).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum RootInvalidReason {
    /// The root id breaks ID-1.
    #[error("the root id is invalid: {0}")]
    InvalidId(IdError),
    /// An earlier root has the same id.
    #[error("an earlier root has the same id")]
    DuplicateId,
    /// The directory does not exist.
    #[error("the directory does not exist")]
    Missing,
    /// The path exists but is not a directory.
    #[error("the path is not a directory")]
    NotADirectory,
    /// The directory could not be canonicalised, opened or inspected.
    #[error("the directory cannot be opened: {0}")]
    Unreadable(IoFailure),
    /// The directory was replaced while the loader was being made.
    #[error("the directory was replaced while it was being opened")]
    ChangedWhileOpening,
}

/// How a root's directory no longer matches the one captured at creation
/// (docs/spec.md R-5).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum RootChangedReason {
    /// Nothing exists at the canonical path any more (deleted or renamed away).
    #[error("nothing exists at its path any more")]
    Missing,
    /// A symbolic link now stands at the canonical path.
    #[error("a symbolic link now stands at its path")]
    Symlink,
    /// Something other than a directory now stands at the canonical path.
    #[error("something other than a directory now stands at its path")]
    NotADirectory,
    /// Another directory (a different device and inode) now stands there.
    #[error("another directory now stands at its path")]
    OtherDirectory,
    /// The canonical path could not be resolved again.
    #[error("its path cannot be resolved: {0}")]
    Unresolvable(IoFailure),
}

/// What a path names instead of a regular file (docs/spec.md R-2, R-6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum NotFileKind {
    /// A directory.
    Directory,
    /// A named pipe.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
    /// A component before the last one exists but is not a directory.
    ParentNotDirectory,
    /// Something else that is not a regular file.
    Other,
}

impl fmt::Display for NotFileKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Directory => "a directory",
            Self::Fifo => "a named pipe",
            Self::Socket => "a socket",
            Self::CharDevice => "a character device",
            Self::BlockDevice => "a block device",
            Self::ParentNotDirectory => "beneath a component that is not a directory",
            Self::Other => "not a regular file",
        })
    }
}

/// How the file changed around the read (docs/spec.md R-7).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Error)]
#[non_exhaustive]
pub enum ChangeReason {
    /// After the read the path resolves to another file.
    #[error("the path now names another file")]
    Replaced,
    /// After the read the path no longer exists.
    #[error("the path no longer exists")]
    Gone,
    /// After the read the path leads outside the root.
    #[error("the path now leads outside the root")]
    Escaping,
    /// After the read the path cannot be resolved.
    #[error("the path can no longer be resolved: {0}")]
    Unresolvable(IoFailure),
}

/// The step of a load that failed with [`ResourceError::Io`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IoOperation {
    /// Resolving and opening the path beneath the root.
    Open,
    /// Inspecting the opened file.
    Inspect,
    /// Reading the opened file.
    Read,
}

impl fmt::Display for IoOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Open => "open",
            Self::Inspect => "inspect",
            Self::Read => "read",
        })
    }
}

/// Everything the resource loader can refuse, as plain data.
///
/// [`code`](Self::code) returns the stable code of docs/spec.md section 7 (the
/// constants of [`crate::error::codes`]). Variants name the root id and the
/// requested path wherever they are known.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ResourceError {
    /// `create` was given no roots (R-1). Code `RESOURCE_ROOT_INVALID`.
    #[error("{}: a resource loader needs at least one root", self.code())]
    NoRoots,
    /// A root was refused at creation (R-1). Code `RESOURCE_ROOT_INVALID`.
    #[error("{}: resource root {root_id:?} ({}) is invalid: {reason}", self.code(), directory.display())]
    RootInvalid {
        /// The root's id, as given.
        root_id: String,
        /// The root's directory, as given.
        directory: PathBuf,
        /// What is wrong with it.
        reason: RootInvalidReason,
    },
    /// The path breaks the grammar (R-3). Code `RESOURCE_PATH_INVALID`.
    #[error("{}: resource path {} is invalid: {reason}", self.code(), Shown(path))]
    PathInvalid {
        /// The path, as requested.
        path: String,
        /// The rule it breaks.
        reason: PathInvalidReason,
    },
    /// The path, or a symbolic link on it, leads outside the root (R-4).
    /// Code `RESOURCE_PATH_ESCAPE`.
    #[error("{}: resource path {} leads outside root {root_id:?}", self.code(), Shown(path))]
    PathEscape {
        /// The root whose confinement refused it.
        root_id: String,
        /// The path, as requested.
        path: String,
    },
    /// A root's directory was replaced after the loader was made (R-5).
    /// Code `RESOURCE_ROOT_CHANGED`.
    #[error("{}: resource root {root_id:?} ({}) changed: {reason}", self.code(), directory.display())]
    RootChanged {
        /// The root's id.
        root_id: String,
        /// The canonical directory captured at creation.
        directory: PathBuf,
        /// How it changed.
        reason: RootChangedReason,
    },
    /// The path names something other than a regular file, or lies beneath a
    /// component that is not a directory (R-2, R-6). Code `RESOURCE_NOT_FILE`.
    #[error("{}: resource path {} in root {root_id:?} is {kind}", self.code(), Shown(path))]
    NotFile {
        /// The root that holds it.
        root_id: String,
        /// The path, as requested.
        path: String,
        /// What it is instead.
        kind: NotFileKind,
    },
    /// The file changed between its resolution and the end of the read (R-7).
    /// Code `RESOURCE_CHANGED_DURING_READ`.
    #[error("{}: resource path {} in root {root_id:?} changed during the read: {reason}", self.code(),
        Shown(path)
    )]
    ChangedDuringRead {
        /// The root that held it.
        root_id: String,
        /// The path, as requested.
        path: String,
        /// How it changed.
        reason: ChangeReason,
    },
    /// The file holds more than the cap (R-8). Code `RESOURCE_TOO_LARGE`.
    #[error("{}: resource path {} in root {root_id:?} is larger than {limit} bytes", self.code(),
        Shown(path)
    )]
    TooLarge {
        /// The root that holds it.
        root_id: String,
        /// The path, as requested.
        path: String,
        /// The cap, [`MAX_RESOURCE_TEXT_BYTES`](super::MAX_RESOURCE_TEXT_BYTES).
        limit: usize,
    },
    /// The file is not valid UTF-8 (R-9). Code `RESOURCE_INVALID_UTF8`.
    #[error("{}: resource path {} in root {root_id:?} is not valid UTF-8 (at byte {valid_up_to})", self.code(),
        Shown(path)
    )]
    InvalidUtf8 {
        /// The root that holds it.
        root_id: String,
        /// The path, as requested.
        path: String,
        /// The file's bytes before the first invalid sequence are valid
        /// UTF-8 (an offset into the file, byte-order mark included).
        valid_up_to: usize,
        /// The length of the invalid sequence, or `None` when the file ends
        /// in the middle of a character.
        error_len: Option<usize>,
    },
    /// Any other I/O failure, symlink loops and chains of more than 40 links
    /// included. Code `RESOURCE_IO`.
    #[error("{}: resource path {} in root {root_id:?}: {operation} failed: {failure}", self.code(),
        Shown(path)
    )]
    Io {
        /// The root being asked.
        root_id: String,
        /// The path, as requested.
        path: String,
        /// The step that failed.
        operation: IoOperation,
        /// The failure.
        failure: IoFailure,
    },
}

impl ResourceError {
    /// The stable error code (docs/spec.md section 7).
    ///
    /// ```
    /// use exthost::validate_resource_path;
    /// let error = validate_resource_path("../secret").unwrap_err();
    /// assert_eq!(error.code(), "RESOURCE_PATH_INVALID");
    /// ```
    pub fn code(&self) -> &'static str {
        match self {
            Self::NoRoots | Self::RootInvalid { .. } => codes::RESOURCE_ROOT_INVALID,
            Self::PathInvalid { .. } => codes::RESOURCE_PATH_INVALID,
            Self::PathEscape { .. } => codes::RESOURCE_PATH_ESCAPE,
            Self::RootChanged { .. } => codes::RESOURCE_ROOT_CHANGED,
            Self::NotFile { .. } => codes::RESOURCE_NOT_FILE,
            Self::ChangedDuringRead { .. } => codes::RESOURCE_CHANGED_DURING_READ,
            Self::TooLarge { .. } => codes::RESOURCE_TOO_LARGE,
            Self::InvalidUtf8 { .. } => codes::RESOURCE_INVALID_UTF8,
            Self::Io { .. } => codes::RESOURCE_IO,
        }
    }

    /// The root the error concerns, if any.
    pub fn root_id(&self) -> Option<&str> {
        match self {
            Self::NoRoots | Self::PathInvalid { .. } => None,
            Self::RootInvalid { root_id, .. }
            | Self::PathEscape { root_id, .. }
            | Self::RootChanged { root_id, .. }
            | Self::NotFile { root_id, .. }
            | Self::ChangedDuringRead { root_id, .. }
            | Self::TooLarge { root_id, .. }
            | Self::InvalidUtf8 { root_id, .. }
            | Self::Io { root_id, .. } => Some(root_id),
        }
    }

    /// The requested path the error concerns, if any.
    pub fn path(&self) -> Option<&str> {
        match self {
            Self::NoRoots | Self::RootInvalid { .. } | Self::RootChanged { .. } => None,
            Self::PathInvalid { path, .. }
            | Self::PathEscape { path, .. }
            | Self::NotFile { path, .. }
            | Self::ChangedDuringRead { path, .. }
            | Self::TooLarge { path, .. }
            | Self::InvalidUtf8 { path, .. }
            | Self::Io { path, .. } => Some(path),
        }
    }

    /// For a path-grammar refusal, the rule the path breaks.
    pub fn path_invalid_reason(&self) -> Option<&PathInvalidReason> {
        match self {
            Self::PathInvalid { reason, .. } => Some(reason),
            _ => None,
        }
    }
}

/// Displays a requested path quoted and escaped, and at most
/// [`SHOWN_PATH_BYTES`] of it, so an error message stays bounded whatever
/// the caller passed. The error's data keeps the whole path.
struct Shown<'a>(&'a str);

/// The longest prefix of a path an error message shows.
const SHOWN_PATH_BYTES: usize = 256;

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = self.0;
        if path.len() <= SHOWN_PATH_BYTES {
            return write!(f, "{path:?}");
        }
        let mut end = SHOWN_PATH_BYTES;
        while !path.is_char_boundary(end) {
            end -= 1;
        }
        write!(f, "{:?}... ({} bytes)", &path[..end], path.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_show_a_bounded_escaped_path() {
        let long = "é".repeat(400);
        let error = ResourceError::PathInvalid {
            path: long.clone(),
            reason: PathInvalidReason::TooLong { len: long.len() },
        };
        let message = error.to_string();
        assert!(message.len() < 400, "{message}");
        assert!(message.contains("(800 bytes)"), "{message}");
        let control = ResourceError::PathInvalid {
            path: "a\u{0}b".into(),
            reason: PathInvalidReason::ControlCharacter {
                character: '\0',
                byte: 1,
            },
        };
        assert!(control.to_string().contains("\"a\\0b\""), "{control}");
    }

    #[test]
    fn accessors_name_root_and_path() {
        let error = ResourceError::TooLarge {
            root_id: "r".into(),
            path: "p".into(),
            limit: 1,
        };
        assert_eq!(error.root_id(), Some("r"));
        assert_eq!(error.path(), Some("p"));
        assert_eq!(error.path_invalid_reason(), None);
        assert_eq!(ResourceError::NoRoots.root_id(), None);
        assert_eq!(ResourceError::NoRoots.code(), "RESOURCE_ROOT_INVALID");
    }

    #[test]
    fn io_failures_keep_kind_errno_and_message() {
        let failure = IoFailure::from_io(&io::Error::from_raw_os_error(2));
        assert_eq!(failure.kind, io::ErrorKind::NotFound);
        assert_eq!(failure.raw_os_error, Some(2));
        assert!(!failure.message.is_empty());
    }
}

exthost_core::coded_by_display!(ResourceError);
