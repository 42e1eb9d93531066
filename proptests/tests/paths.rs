//! under generated input: valid paths are accepted and read
//! from the right root; hostile paths are refused with
//! RESOURCE_PATH_INVALID before any filesystem access; symlinks are served
//! exactly while they stay inside the root.
#[path = "../../tests/resources_support/devices.rs"]
mod devices;
mod loader_support;

use std::sync::OnceLock;

use exthost::{ResourceLoader, ResourceRoot, validate_resource_path};
use loader_support::{config, write};
use proptest::prelude::*;
use proptest::sample::{Index, select};

/// One valid segment, built so that no rule can refuse it: it starts with a
/// character that begins no Windows device name (so its stem is never a
/// device), never ends with `.` or a space, and is never `.` or `..`.
fn valid_segment() -> impl Strategy<Value = String> {
    "[bd-kmoq-zBD-KMOQ-Z0-9_~\u{e9}\u{fc}\u{65e5}\u{1F600}]([a-zA-Z0-9_.~ \u{e9}\u{fc}\u{65e5}\u{1F600}-]{0,20}[a-zA-Z0-9_~\u{e9}\u{fc}\u{65e5}-])?"
}

fn segments() -> impl Strategy<Value = Vec<String>> {
    prop::collection::vec(valid_segment(), 1..5)
}

fn valid_path() -> impl Strategy<Value = String> {
    segments().prop_map(|segments| segments.join("/"))
}

/// A device name in a random ASCII case, with or without an extension or
/// trailing spaces before it.
fn device_segment() -> impl Strategy<Value = String> {
    (
        select(&devices::DEVICES[..]),
        any::<u16>(),
        select(&["", ".txt", ".tar.gz", " .md", "  .x"][..]),
    )
        .prop_map(|(device, case_bits, extension)| {
            let spelled: String = device
                .chars()
                .enumerate()
                .map(|(i, c)| {
                    if case_bits & (1 << i) != 0 {
                        c.to_ascii_lowercase()
                    } else {
                        c
                    }
                })
                .collect();
            format!("{spelled}{extension}")
        })
}

/// Characters that R-3 refuses wherever they appear.
fn hostile_char() -> impl Strategy<Value = char> {
    prop_oneof![
        select(&['\\', ':', '<', '>', '"', '|', '?', '*'][..]),
        // Cc
        proptest::char::range('\0', '\u{1F}'),
        proptest::char::range('\u{7F}', '\u{9F}'),
        // Cf, format and bidirectional controls
        select(
            &[
                '\u{AD}',
                '\u{61C}',
                '\u{6DD}',
                '\u{180E}',
                '\u{FEFF}',
                '\u{FFF9}',
                '\u{E0001}'
            ][..]
        ),
        proptest::char::range('\u{200B}', '\u{200F}'),
        proptest::char::range('\u{202A}', '\u{202E}'),
        proptest::char::range('\u{2060}', '\u{2064}'),
        proptest::char::range('\u{2066}', '\u{206F}'),
        proptest::char::range('\u{E0020}', '\u{E007F}'),
        // Compatibility forms hiding `.`, `/`, `\`, `:` or `<>"|?*`
        select(
            &[
                '\u{FF0E}', '\u{FF0F}', '\u{2024}', '\u{2025}', '\u{2026}', '\u{FE52}', '\u{FE55}',
                '\u{FF1A}', '\u{FF3C}', '\u{FE68}', '\u{FF1C}', '\u{FF1E}', '\u{FF02}', '\u{FF5C}',
                '\u{FF1F}', '\u{FF0A}', '\u{FE56}', '\u{FE13}', '\u{FE19}', '\u{33C2}',
            ][..]
        ),
        proptest::char::range('\u{2488}', '\u{249B}'),
        // Slash look-alikes without a compatibility form
        select(
            &[
                '\u{2044}', '\u{2215}', '\u{2216}', '\u{29F5}', '\u{29F8}', '\u{29F9}'
            ][..]
        ),
    ]
}

/// A segment that R-3 refuses wherever it stands.
fn hostile_segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just(".".to_owned()),
        Just("..".to_owned()),
        Just(String::new()),
        device_segment(),
        (256usize..300).prop_map(|len| "s".repeat(len)),
    ]
}

/// A valid path with one hostile edit from an R-3 class.
fn hostile_path() -> impl Strategy<Value = String> {
    prop_oneof![
        // Absolute, drive, UNC and device prefixes.
        (
            segments(),
            select(
                &[
                    "/",
                    "\\",
                    "//srv/",
                    "\\\\srv\\",
                    "C:",
                    "c:/",
                    "\\\\?\\",
                    "//./",
                    "\\??\\"
                ][..]
            )
        )
            .prop_map(|(segments, prefix)| format!("{prefix}{}", segments.join("/"))),
        // A trailing slash.
        segments().prop_map(|segments| format!("{}/", segments.join("/"))),
        // A refused character at any character boundary.
        (valid_path(), hostile_char(), any::<Index>()).prop_map(|(path, character, at)| {
            let boundaries: Vec<usize> = path
                .char_indices()
                .map(|(byte, _)| byte)
                .chain([path.len()])
                .collect();
            let mut path = path;
            path.insert(*at.get(&boundaries), character);
            path
        }),
        // A segment replaced by a refused one.
        (segments(), hostile_segment(), any::<Index>()).prop_map(|(mut segments, bad, at)| {
            let at = at.index(segments.len());
            segments[at] = bad;
            segments.join("/")
        }),
        // A refused segment inserted anywhere.
        (segments(), hostile_segment(), any::<Index>()).prop_map(|(mut segments, bad, at)| {
            segments.insert(at.index(segments.len() + 1), bad);
            segments.join("/")
        }),
        // A segment ending with a dot or a space.
        (segments(), select(&['.', ' '][..]), any::<Index>()).prop_map(
            |(mut segments, end, at)| {
                let at = at.index(segments.len());
                segments[at].push(end);
                segments.join("/")
            }
        ),
        // Over 1,024 bytes in all.
        (valid_path(), 1025usize..1400).prop_map(|(path, len)| {
            let mut long = path;
            while long.len() < len {
                long.push_str("/padding");
            }
            long
        }),
    ]
}

/// A loader whose only root has been deleted: any filesystem access for a
/// load reports RESOURCE_ROOT_CHANGED, so a RESOURCE_PATH_INVALID answer
/// shows the path was refused before the filesystem was touched.
fn observing_loader() -> &'static ResourceLoader {
    static LOADER: OnceLock<ResourceLoader> = OnceLock::new();
    LOADER.get_or_init(|| {
        let temp = tempfile::tempdir().expect("tempdir");
        let loader =
            ResourceLoader::create([ResourceRoot::new("observer", temp.path())]).expect("loader");
        drop(temp);
        loader
    })
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn generated_valid_paths_are_accepted_and_served_from_the_first_root_holding_them(
        path in valid_path(),
        in_first in any::<bool>(),
        in_second in any::<bool>(),
    ) {
        prop_assert_eq!(validate_resource_path(&path), Ok(()));
        let temp = tempfile::tempdir().unwrap();
        let (first, second) = (temp.path().join("first"), temp.path().join("second"));
        std::fs::create_dir(&first).unwrap();
        std::fs::create_dir(&second).unwrap();
        if in_first {
            write(&first, &path, format!("first:{path}"));
        }
        if in_second {
            write(&second, &path, format!("second:{path}"));
        }
        let loader = ResourceLoader::create([
            ResourceRoot::new("first", &first),
            ResourceRoot::new("second", &second),
        ])
        .unwrap();
        let expected = match (in_first, in_second) {
            (true, _) => Some("first"),
            (false, true) => Some("second"),
            (false, false) => None,
        };
        let found = loader.load_text(&path).unwrap();
        prop_assert_eq!(found.as_ref().map(|r| r.root_id.as_str()), expected);
        if let (Some(found), Some(root)) = (found, expected) {
            prop_assert_eq!(found.path, path.clone());
            prop_assert_eq!(found.content, format!("{root}:{path}"));
        }
    }

    #[test]
    fn symlinks_are_served_while_inside_and_escape_when_they_climb_out(
        depth in 0usize..5,
        climb in 0usize..8,
        target_exists in any::<bool>(),
    ) {
        // temp/o1/o2/o3/o4/root: climbing up to four levels above the root
        // still lands inside the scratch area, where the target can exist.
        let temp = tempfile::tempdir().unwrap();
        let root = temp.path().join("o1/o2/o3/o4/root");
        std::fs::create_dir_all(&root).unwrap();
        let dirs: Vec<String> = (0..depth).map(|i| format!("d{i}")).collect();
        let link = dirs.iter().cloned().chain(["link".to_owned()]).collect::<Vec<_>>().join("/");
        std::fs::create_dir_all(root.join(dirs.join("/"))).unwrap();
        std::os::unix::fs::symlink(format!("{}t.txt", "../".repeat(climb)), root.join(&link)).unwrap();
        let mut target_dir = root.join(dirs.join("/"));
        for _ in 0..climb {
            target_dir.pop();
        }
        if target_exists && target_dir.starts_with(temp.path()) {
            std::fs::write(target_dir.join("t.txt"), "target").unwrap();
        }
        let loader = ResourceLoader::create([ResourceRoot::new("root", &root)]).unwrap();
        let result = loader.load_text(&link);
        if climb <= depth {
            let expected = target_exists.then(|| "target".to_owned());
            prop_assert_eq!(result.unwrap().map(|r| r.content), expected);
        } else {
            prop_assert_eq!(result.unwrap_err().code(), "RESOURCE_PATH_ESCAPE");
        }
    }
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn hostile_paths_are_refused_before_any_filesystem_access(path in hostile_path()) {
        let error = validate_resource_path(&path);
        prop_assert!(error.is_err(), "accepted {:?}", path);
        let error = error.unwrap_err();
        prop_assert_eq!(error.code(), "RESOURCE_PATH_INVALID");
        prop_assert_eq!(error.path(), Some(path.as_str()));
        prop_assert_eq!(observing_loader().load_text(&path), Err(error));
    }

    #[test]
    fn the_loader_gates_on_the_grammar_alone(
        path in prop_oneof![
            valid_path(),
            hostile_path(),
            "[a-zA-Z0-9./\\\\: <>|?*\"\u{0}\u{1f}\u{7f}\u{85}\u{200b}\u{ff0e}\u{2215}\u{e9}-]{0,16}",
            any::<String>(),
        ]
    ) {
        let loaded = observing_loader().load_text(&path);
        match validate_resource_path(&path) {
            Ok(()) => prop_assert_eq!(loaded.unwrap_err().code(), "RESOURCE_ROOT_CHANGED"),
            Err(error) => prop_assert_eq!(loaded, Err(error)),
        }
    }
}
