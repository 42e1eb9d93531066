//! Shared pieces of the resource loader's property suites.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use exthost::{ResourceLoader, ResourceRoot};

use proptest::test_runner::Config as ProptestConfig;

/// The suite's configuration: `default_cases` cases unless the
/// `PROPTEST_CASES` environment variable asks for another count (the
/// proptest default already reads it; only the fallback changes).
pub fn config(default_cases: u32) -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = default_cases;
    }
    config
}

/// Writes `content` to `dir/relative`, creating parent directories.
pub fn write(dir: &Path, relative: &str, content: impl AsRef<[u8]>) {
    let path = dir.join(relative);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("create parents");
    }
    std::fs::write(&path, content).expect("write file");
}

/// One temporary root with a loader over it, shared by a whole suite.
pub struct Fixture {
    _temp: tempfile::TempDir,
    /// The root directory.
    pub root: PathBuf,
    /// A loader whose only root is `root`, with id `root`.
    pub loader: ResourceLoader,
}

/// The suite's fixture, made on first use.
pub fn fixture() -> &'static Fixture {
    static FIXTURE: OnceLock<Fixture> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().to_owned();
        let loader = ResourceLoader::create([ResourceRoot::new("root", &root)]).unwrap();
        Fixture {
            _temp: temp,
            root,
            loader,
        }
    })
}
