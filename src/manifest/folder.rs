//! Loading a folder of manifests as one all-or-nothing batch.
//!
//! Layout: one folder per extension, `<dir>/<folder>/extension.json`. The
//! extension's folder is where a process extension runs (P-1). In `<dir>`:
//!
//! * entries whose name starts with `.` are skipped;
//! * every other directory (symlinks followed) is an extension folder and
//!   must hold a regular file `extension.json` (else `manifest_missing`);
//! * a regular file named `*.json` is refused (`misplaced_manifest_file`):
//!   it is almost certainly a manifest in the wrong place;
//! * other files are ignored (a README, for instance).
//!
//! Folders are read in byte order of their names. Each manifest is at most
//! [`MAX_MANIFEST_BYTES`] bytes of strict UTF-8 (one leading byte-order mark
//! is removed); then it is parsed and validated, and extension ids must be
//! unique across the batch. Either every manifest loads or the whole batch
//! is refused with one diagnostic per problem, in folder order.
//!
//! The folder is trusted configuration, not hostile input: this is not the
//! confined resource loader of docs/spec.md section 2. Still, nothing in it can block
//! the load: a manifest path that is not a regular file is refused before it
//! is opened, and the open itself adds `O_NONBLOCK | O_NOCTTY`, so a FIFO
//! swapped in after that type check opens at once instead of waiting for a
//! writer (and a terminal never becomes the controlling one). The opened
//! handle is then `fstat`ed: it must be a regular file with the device and
//! inode the type check saw, else the file is refused (`manifest_io_error`)
//! without reading from it.

use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use rustix::fs::OFlags;

use super::reason::{ManifestBatchError, ManifestError, ManifestReason as R};
use super::schema::{Manifest, Notice};
use super::validate::{log_notices, parse_quietly};
use super::{MANIFEST_FILE_NAME, MAX_MANIFEST_BYTES};

/// A manifest loaded from a folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedManifest {
    /// The validated manifest.
    pub manifest: Manifest,
    /// The manifest file, `<dir>/<folder>/extension.json`.
    pub path: PathBuf,
    /// The extension's folder, `<dir>/<folder>`.
    pub directory: PathBuf,
    /// Notices for retired keys (M-7), already logged.
    pub notices: Vec<Notice>,
}

/// Loads every manifest of `dir` as one batch (see the module docs for the
/// layout): all of them, in folder-name order, or a [`ManifestBatchError`]
/// listing every problem.
pub fn load_manifest_dir(dir: &Path) -> Result<Vec<LoadedManifest>, ManifestBatchError> {
    let entries = list_entries(dir).map_err(|error| ManifestBatchError::new(dir, vec![error]))?;
    let mut loaded: Vec<LoadedManifest> = Vec::with_capacity(entries.len());
    let mut errors: Vec<ManifestError> = Vec::new();
    let mut first_path_by_id: HashMap<String, usize> = HashMap::with_capacity(entries.len());

    for entry in entries {
        let folder = match entry {
            Entry::Folder(folder) => folder,
            Entry::Refused(error) => {
                errors.push(error);
                continue;
            }
        };
        let path = folder.join(MANIFEST_FILE_NAME);
        match load_manifest_file_quietly(&path) {
            Err(error) => errors.push(error),
            Ok((manifest, notices)) => {
                if let Some(&first) = first_path_by_id.get(manifest.id()) {
                    let error = ManifestError::new(
                        R::DuplicateExtensionId,
                        "/id",
                        format!(
                            "the extension id {:?} is also used by {}",
                            manifest.id(),
                            loaded[first].path.display()
                        ),
                    )
                    .with_file(&path)
                    .with_extension_id(Some(manifest.id()));
                    errors.push(error);
                    continue;
                }
                first_path_by_id.insert(manifest.id().to_owned(), loaded.len());
                loaded.push(LoadedManifest {
                    manifest,
                    path,
                    directory: folder,
                    notices,
                });
            }
        }
    }

    if !errors.is_empty() {
        return Err(ManifestBatchError::new(dir, errors));
    }
    for manifest in &loaded {
        log_notices(&manifest.notices, Some(&manifest.path));
    }
    Ok(loaded)
}

/// Loads one manifest file: at most [`MAX_MANIFEST_BYTES`] bytes of strict
/// UTF-8, parsed and validated; errors name the file. Notices are logged
/// and returned.
pub fn load_manifest_file(path: &Path) -> Result<(Manifest, Vec<Notice>), ManifestError> {
    let (manifest, notices) = load_manifest_file_quietly(path)?;
    log_notices(&notices, Some(path));
    Ok((manifest, notices))
}

enum Entry {
    Folder(PathBuf),
    Refused(ManifestError),
}

fn io_error(path: &Path, what: &str, error: &std::io::Error) -> ManifestError {
    ManifestError::new(R::ManifestIoError, "", format!("{what}: {error}")).with_file(path)
}

fn list_entries(dir: &Path) -> Result<Vec<Entry>, ManifestError> {
    let reader = fs::read_dir(dir)
        .map_err(|error| io_error(dir, "cannot read the extensions folder", &error))?;
    let mut names = Vec::new();
    for entry in reader {
        let entry =
            entry.map_err(|error| io_error(dir, "cannot read the extensions folder", &error))?;
        names.push(entry.file_name());
    }
    names.sort_unstable();

    let mut entries = Vec::with_capacity(names.len());
    for name in names {
        if name.as_encoded_bytes().first() == Some(&b'.') {
            continue;
        }
        let path = dir.join(&name);
        match fs::metadata(&path) {
            Err(error) => entries.push(Entry::Refused(io_error(
                &path,
                "cannot inspect this entry",
                &error,
            ))),
            Ok(meta) if meta.is_dir() => entries.push(Entry::Folder(path)),
            Ok(meta) if meta.is_file() && name.as_encoded_bytes().ends_with(b".json") => {
                entries.push(Entry::Refused(
                    ManifestError::new(
                        R::MisplacedManifestFile,
                        "",
                        format!(
                            "manifests live in <folder>/{MANIFEST_FILE_NAME}, one folder per extension; move this file into a folder of its own"
                        ),
                    )
                    .with_file(&path),
                ));
            }
            Ok(_) => {}
        }
    }
    Ok(entries)
}

fn load_manifest_file_quietly(path: &Path) -> Result<(Manifest, Vec<Notice>), ManifestError> {
    let text = read_manifest_text(path)?;
    parse_quietly(&text).map_err(|error| error.with_file(path))
}

fn read_manifest_text(path: &Path) -> Result<String, ManifestError> {
    read_manifest_text_with(path, &mut || {})
}

/// [`read_manifest_text`] with a test seam: `between_check_and_open` runs
/// after the type check and before the open, where a swap is a race.
fn read_manifest_text_with(
    path: &Path,
    between_check_and_open: &mut dyn FnMut(),
) -> Result<String, ManifestError> {
    let meta = match fs::metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(ManifestError::new(
                R::ManifestMissing,
                "",
                format!("this extension folder has no {MANIFEST_FILE_NAME}"),
            )
            .with_file(path));
        }
        Err(error) => return Err(io_error(path, "cannot inspect the manifest", &error)),
    };
    if !meta.is_file() {
        return Err(ManifestError::new(
            R::ManifestIoError,
            "",
            "the manifest is not a regular file",
        )
        .with_file(path));
    }
    between_check_and_open();
    let file = open_nonblocking(path)
        .map_err(|error| io_error(path, "cannot open the manifest", &error))?;
    // The path may have been replaced between the type check and the open:
    // the handle must be the regular file that was checked.
    let opened = file
        .metadata()
        .map_err(|error| io_error(path, "cannot inspect the opened manifest", &error))?;
    if !opened.is_file() {
        return Err(ManifestError::new(
            R::ManifestIoError,
            "",
            "the manifest was replaced by something that is not a regular file while it was being opened",
        )
        .with_file(path));
    }
    if (opened.dev(), opened.ino()) != (meta.dev(), meta.ino()) {
        return Err(ManifestError::new(
            R::ManifestIoError,
            "",
            "the manifest was replaced by another file while it was being opened",
        )
        .with_file(path));
    }
    let mut bytes = Vec::with_capacity(
        usize::try_from(opened.len())
            .unwrap_or(0)
            .min(MAX_MANIFEST_BYTES + 1),
    );
    // Read at most one byte over the cap, so a growing file is still refused.
    let limit = u64::try_from(MAX_MANIFEST_BYTES)
        .unwrap_or(u64::MAX)
        .saturating_add(1);
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|error| io_error(path, "cannot read the manifest", &error))?;
    if bytes.len() > MAX_MANIFEST_BYTES {
        return Err(ManifestError::new(
            R::ManifestTooLarge,
            "",
            format!("the manifest is over {MAX_MANIFEST_BYTES} bytes"),
        )
        .with_file(path));
    }
    let mut text = String::from_utf8(bytes).map_err(|error| {
        ManifestError::new(
            R::ManifestInvalidUtf8,
            "",
            format!(
                "the manifest is not valid UTF-8 (first bad byte at offset {})",
                error.utf8_error().valid_up_to()
            ),
        )
        .with_file(path)
    })?;
    if text.starts_with('\u{feff}') {
        text.drain(..'\u{feff}'.len_utf8());
    }
    Ok(text)
}

/// Opens `path` read-only with `O_NONBLOCK | O_NOCTTY` added (std adds
/// `O_CLOEXEC`): opening a FIFO returns at once instead of waiting for a
/// writer, and a terminal device never becomes the controlling terminal.
/// Neither flag changes how a regular file is read.
fn open_nonblocking(path: &Path) -> std::io::Result<fs::File> {
    fs::OpenOptions::new()
        .read(true)
        .custom_flags((OFlags::NONBLOCK | OFlags::NOCTTY).bits() as i32)
        .open(path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    fn mkfifo(path: &Path) {
        let status = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .expect("run mkfifo");
        assert!(status.success(), "mkfifo {path:?} failed");
    }

    /// Runs `work` on a thread; a block fails the test instead of hanging
    /// it (a guard, not a timing assertion).
    fn finishes<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
        let (sender, receiver) = mpsc::channel();
        thread::spawn(move || {
            let _ = sender.send(work());
        });
        receiver
            .recv_timeout(Duration::from_secs(10))
            .expect("reading the manifest blocked")
    }

    const TEXT: &str = r#"{"id": "a", "runtime": {"kind": "in-process"}}"#;

    #[test]
    fn a_fifo_swapped_in_after_the_type_check_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE_NAME);
        let fifo = dir.path().join("pipe");
        fs::write(&path, TEXT).unwrap();
        mkfifo(&fifo);
        let mut swaps = 0;
        let result = finishes({
            let path = path.clone();
            move || {
                let result = read_manifest_text_with(&path, &mut || {
                    swaps += 1;
                    fs::rename(&fifo, &path).unwrap();
                });
                (result, swaps)
            }
        });
        let (result, swaps) = result;
        assert_eq!(swaps, 1, "the seam ran once, between check and open");
        let error = result.unwrap_err();
        assert_eq!(error.reason(), R::ManifestIoError);
        assert!(
            error
                .message()
                .contains("not a regular file while it was being opened"),
            "{}",
            error.message()
        );
        assert_eq!(error.file(), Some(path.as_path()));
    }

    #[test]
    fn another_regular_file_swapped_in_after_the_type_check_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE_NAME);
        let other = dir.path().join("other.json");
        fs::write(&path, TEXT).unwrap();
        fs::write(&other, TEXT).unwrap();
        let error =
            read_manifest_text_with(&path, &mut || fs::rename(&other, &path).unwrap()).unwrap_err();
        assert_eq!(error.reason(), R::ManifestIoError);
        assert!(
            error.message().contains("replaced by another file"),
            "{}",
            error.message()
        );
        // The same file again (nothing swapped) reads normally.
        assert_eq!(read_manifest_text_with(&path, &mut || {}).unwrap(), TEXT);
    }

    #[test]
    fn a_directory_swapped_in_after_the_type_check_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE_NAME);
        fs::write(&path, TEXT).unwrap();
        let error = read_manifest_text_with(&path, &mut || {
            fs::remove_file(&path).unwrap();
            fs::create_dir(&path).unwrap();
        })
        .unwrap_err();
        assert_eq!(error.reason(), R::ManifestIoError);
        assert!(
            error
                .message()
                .contains("not a regular file while it was being opened"),
            "{}",
            error.message()
        );
    }

    #[test]
    fn the_same_file_rewritten_in_place_is_still_the_same_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(MANIFEST_FILE_NAME);
        fs::write(&path, "{}").unwrap();
        // Writing through the path keeps the inode: that is an edit, not a
        // swap, and the new contents are read.
        let text = read_manifest_text_with(&path, &mut || fs::write(&path, TEXT).unwrap()).unwrap();
        assert_eq!(text, TEXT);
    }
}
