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
//! confined resource loader of docs/spec.md section 2. A manifest path that is not a
//! regular file is refused before it is opened, so a FIFO cannot block the
//! load.

use std::collections::HashMap;
use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

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
    let file =
        fs::File::open(path).map_err(|error| io_error(path, "cannot open the manifest", &error))?;
    let mut bytes = Vec::with_capacity(
        usize::try_from(meta.len())
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
