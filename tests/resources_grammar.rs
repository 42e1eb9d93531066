//! R-3: the path grammar, checked before any filesystem access, identical
//! on every operating system.
#[path = "resources_support/devices.rs"]
mod devices;
mod resources_support;

use exthost::resources::PathInvalidReason as R;
use exthost::{ResourceError, validate_resource_path};
use resources_support::{Scratch, write};

fn reason(path: &str) -> R {
    match validate_resource_path(path) {
        Err(ResourceError::PathInvalid {
            path: echoed,
            reason,
        }) => {
            assert_eq!(echoed, path, "the error names the path as requested");
            reason
        }
        other => panic!("{path:?} should be refused, got {other:?}"),
    }
}

fn assert_refused(path: &str) {
    let error = validate_resource_path(path).expect_err(path);
    assert_eq!(error.code(), "RESOURCE_PATH_INVALID", "{path:?}");
}

#[test]
fn absolute_paths_are_refused() {
    assert_eq!(reason("/etc/passwd"), R::Absolute);
    assert_eq!(reason("/"), R::Absolute);
    assert_eq!(reason("\\Windows\\win.ini"), R::Absolute);
}

#[test]
fn drive_prefixes_are_refused() {
    assert_eq!(reason("C:"), R::DriveLetter);
    assert_eq!(reason("C:/Windows"), R::DriveLetter);
    assert_eq!(reason("c:relative"), R::DriveLetter);
    assert_eq!(reason("Z:\\x"), R::DriveLetter);
}

#[test]
fn unc_and_device_prefixes_are_refused() {
    assert_eq!(reason("\\\\server\\share\\x"), R::UncPrefix);
    assert_eq!(reason("//server/share/x"), R::UncPrefix);
    assert_eq!(reason("\\/server"), R::UncPrefix);
    assert_eq!(reason("\\\\?\\C:\\x"), R::DevicePrefix);
    assert_eq!(reason("\\\\.\\PhysicalDrive0"), R::DevicePrefix);
    assert_eq!(reason("//?/C:/x"), R::DevicePrefix);
    assert_eq!(reason("//./pipe/x"), R::DevicePrefix);
    assert_eq!(reason("\\??\\C:\\x"), R::DevicePrefix);
}

#[test]
fn backslashes_are_refused_anywhere() {
    assert_eq!(reason("a\\b"), R::Backslash { byte: 1 });
    assert_eq!(reason("dir/file\\"), R::Backslash { byte: 8 });
}

#[test]
fn dot_segments_are_refused() {
    for (path, segment) in [
        (".", 0),
        ("..", 0),
        ("./a", 0),
        ("../a", 0),
        ("a/.", 1),
        ("a/..", 1),
        ("a/./b", 1),
        ("a/../b", 1),
        ("a/b/../../..", 2),
    ] {
        assert_eq!(reason(path), R::DotSegment { segment }, "{path:?}");
    }
    // Dots inside a name are ordinary characters.
    for path in [".hidden", "a..b", "..a", "a/.b/c", "v1.2.3/x"] {
        assert_eq!(validate_resource_path(path), Ok(()), "{path:?}");
    }
}

#[test]
fn empty_segments_and_trailing_slashes_are_refused() {
    assert_eq!(reason(""), R::Empty);
    assert_eq!(reason("a//b"), R::EmptySegment { segment: 1 });
    assert_eq!(reason("a/"), R::EmptySegment { segment: 1 });
    assert_eq!(reason("a/b/"), R::EmptySegment { segment: 2 });
}

#[test]
fn nul_and_control_characters_are_refused() {
    for (path, character, byte) in [
        ("a\0b", '\0', 1),
        ("\x01", '\u{1}', 0),
        ("tab\there", '\t', 3),
        ("line\n", '\n', 4),
        ("cr\r", '\r', 2),
        ("esc\x1b[0m", '\u{1b}', 3),
        ("unit\x1f", '\u{1f}', 4),
        ("del\x7f", '\u{7f}', 3),
        ("c1\u{80}", '\u{80}', 2),
        ("c1\u{9f}", '\u{9f}', 2),
        ("nel\u{85}", '\u{85}', 3),
    ] {
        assert_eq!(
            reason(path),
            R::ControlCharacter { character, byte },
            "{path:?}"
        );
    }
}

#[test]
fn colons_and_alternate_data_streams_are_refused() {
    assert_eq!(
        reason("a:b"),
        R::DriveLetter,
        "a one-letter first segment reads as a drive"
    );
    assert_eq!(reason("ab:c"), R::Colon { byte: 2 });
    assert_eq!(reason("file.txt:secret"), R::Colon { byte: 8 });
    assert_eq!(reason("file.txt::$DATA"), R::Colon { byte: 8 });
    assert_eq!(reason("dir/file:stream:$DATA"), R::Colon { byte: 8 });
    assert_eq!(reason("trailing:"), R::Colon { byte: 8 });
}

#[test]
fn windows_reserved_characters_are_refused() {
    for character in ['<', '>', '"', '|', '?', '*'] {
        let path = format!("a{character}b");
        assert_eq!(
            reason(&path),
            R::ReservedCharacter { character, byte: 1 },
            "{path:?}"
        );
    }
    assert_eq!(
        reason("glob/*.md"),
        R::ReservedCharacter {
            character: '*',
            byte: 5
        }
    );
}

#[test]
fn trailing_dots_and_spaces_are_refused() {
    assert_eq!(reason("a."), R::TrailingDotOrSpace { segment: 0 });
    assert_eq!(reason("a "), R::TrailingDotOrSpace { segment: 0 });
    assert_eq!(reason("dir./x"), R::TrailingDotOrSpace { segment: 0 });
    assert_eq!(reason("dir /x"), R::TrailingDotOrSpace { segment: 0 });
    assert_eq!(reason("x/file.txt."), R::TrailingDotOrSpace { segment: 1 });
    assert_eq!(reason("x/..."), R::TrailingDotOrSpace { segment: 1 });
    assert_eq!(reason("x/name. "), R::TrailingDotOrSpace { segment: 1 });
    assert_eq!(validate_resource_path(" leading/ spaces"), Ok(()));
}

/// Alternates ASCII case letter by letter, starting lower: "CoN" style.
fn mixed_case(name: &str) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| {
            if i % 2 == 0 {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect()
}

#[test]
fn every_device_name_is_refused_with_and_without_extension_in_any_case() {
    for device in devices::DEVICES {
        for spelling in [
            device.to_owned(),
            device.to_ascii_lowercase(),
            mixed_case(device),
        ] {
            for segment in [
                spelling.clone(),
                format!("{spelling}.txt"),
                format!("{spelling}.tar.gz"),
                format!("{spelling} .txt"),
                format!("{spelling}  .md"),
            ] {
                let path = format!("dir/{segment}");
                assert_eq!(
                    reason(&path),
                    R::DeviceName { segment: 1, device },
                    "{path:?}"
                );
                assert_eq!(
                    reason(&segment),
                    R::DeviceName { segment: 0, device },
                    "{segment:?}"
                );
            }
        }
    }
}

#[test]
fn superscript_com_and_lpt_and_console_devices_are_refused() {
    assert_eq!(
        reason("com\u{B9}"),
        R::DeviceName {
            segment: 0,
            device: "COM\u{B9}"
        }
    );
    assert_eq!(
        reason("Lpt\u{B3}.log"),
        R::DeviceName {
            segment: 0,
            device: "LPT\u{B3}"
        }
    );
    assert_eq!(
        reason("a/conin$"),
        R::DeviceName {
            segment: 1,
            device: "CONIN$"
        }
    );
    assert_eq!(
        reason("ConOut$.x"),
        R::DeviceName {
            segment: 0,
            device: "CONOUT$"
        }
    );
    assert_eq!(
        reason("clock$"),
        R::DeviceName {
            segment: 0,
            device: "CLOCK$"
        }
    );
}

#[test]
fn names_that_only_resemble_devices_are_accepted() {
    for path in [
        "CONSOLE",
        "COM10",
        "LPT",
        "COM",
        "icon.png",
        "con_fig",
        "x.con",
        "auxiliary/aux_notes.md",
        " CON",
        "CON$",
        "COM\u{B9}\u{B9}",
        "COM\u{2074}",
    ] {
        assert_eq!(validate_resource_path(path), Ok(()), "{path:?}");
    }
}

#[test]
fn length_boundaries_are_exact() {
    // 1,024 bytes: four 255-byte segments, one 1-byte segment, four slashes.
    let segment = "s".repeat(255);
    let at_limit = format!("{segment}/{segment}/{segment}/{}/x", "s".repeat(254));
    assert_eq!(at_limit.len(), 1024);
    assert_eq!(validate_resource_path(&at_limit), Ok(()));
    let over = format!("{at_limit}y");
    assert_eq!(reason(&over), R::TooLong { len: 1025 });

    assert_eq!(validate_resource_path(&segment), Ok(()));
    assert_eq!(validate_resource_path(&format!("dir/{segment}")), Ok(()));
    let long_segment = format!("dir/{}", "s".repeat(256));
    assert_eq!(
        reason(&long_segment),
        R::SegmentTooLong {
            segment: 1,
            len: 256
        }
    );

    // Lengths are bytes, not characters.
    let multibyte = format!("{}a", "\u{e9}".repeat(127));
    assert_eq!(multibyte.len(), 255);
    assert_eq!(validate_resource_path(&multibyte), Ok(()));
    assert_eq!(
        reason(&format!("{multibyte}b")),
        R::SegmentTooLong {
            segment: 0,
            len: 256
        }
    );
}

#[test]
fn format_and_bidirectional_characters_are_refused() {
    for character in [
        '\u{AD}',    // soft hyphen
        '\u{61C}',   // Arabic letter mark
        '\u{200B}',  // zero width space
        '\u{200C}',  // zero width non-joiner
        '\u{200D}',  // zero width joiner
        '\u{200E}',  // left-to-right mark
        '\u{200F}',  // right-to-left mark
        '\u{202A}',  // left-to-right embedding
        '\u{202B}',  // right-to-left embedding
        '\u{202C}',  // pop directional formatting
        '\u{202D}',  // left-to-right override
        '\u{202E}',  // right-to-left override
        '\u{2060}',  // word joiner
        '\u{2066}',  // left-to-right isolate
        '\u{2067}',  // right-to-left isolate
        '\u{2068}',  // first strong isolate
        '\u{2069}',  // pop directional isolate
        '\u{FEFF}',  // zero width no-break space (BOM)
        '\u{FFF9}',  // interlinear annotation anchor
        '\u{E0001}', // language tag
    ] {
        let path = format!("doc{character}txt");
        assert_eq!(
            reason(&path),
            R::FormatCharacter { character, byte: 3 },
            "{character:?}"
        );
    }
}

#[test]
fn compatibility_look_alikes_are_refused() {
    for (character, refused) in [
        ('\u{FF0E}', '.'),  // fullwidth full stop
        ('\u{FF0F}', '/'),  // fullwidth solidus
        ('\u{2024}', '.'),  // one dot leader
        ('\u{2025}', '.'),  // two dot leader
        ('\u{2026}', '.'),  // horizontal ellipsis
        ('\u{FE52}', '.'),  // small full stop
        ('\u{FE55}', ':'),  // small colon
        ('\u{FF1A}', ':'),  // fullwidth colon
        ('\u{FF3C}', '\\'), // fullwidth reverse solidus
        ('\u{FE68}', '\\'), // small reverse solidus
        ('\u{FF1C}', '<'),  // fullwidth less-than
        ('\u{FF1E}', '>'),  // fullwidth greater-than
        ('\u{FF02}', '"'),  // fullwidth quotation mark
        ('\u{FF5C}', '|'),  // fullwidth vertical line
        ('\u{FF1F}', '?'),  // fullwidth question mark
        ('\u{FF0A}', '*'),  // fullwidth asterisk
        ('\u{FE56}', '?'),  // small question mark
        ('\u{2488}', '.'),  // digit one full stop
        ('\u{33C2}', '.'),  // square am: "a.m."
    ] {
        let path = format!("x{character}");
        assert_eq!(
            reason(&path),
            R::CompatibilityForm {
                character,
                byte: 1,
                refused
            },
            "{character:?}"
        );
    }
    // "..", spelled with two fullwidth full stops, or with one two-dot leader.
    assert_refused("\u{FF0E}\u{FF0E}/etc/passwd");
    assert_refused("a/\u{2025}/b");
    assert_refused("a\u{FF0F}..\u{FF0F}b");
}

#[test]
fn slash_look_alikes_are_refused() {
    for character in [
        '\u{2044}', '\u{2215}', '\u{2216}', '\u{29F5}', '\u{29F8}', '\u{29F9}',
    ] {
        let path = format!("a{character}b");
        assert_eq!(
            reason(&path),
            R::SlashLookalike { character, byte: 1 },
            "{character:?}"
        );
    }
}

#[test]
fn other_rules_look_at_the_text_as_given() {
    // Fullwidth letters fold to "CON" under NFKC, but the device rule looks at
    // the text as given, and the NFKC form holds no refused character.
    assert_eq!(validate_resource_path("\u{FF23}\u{FF2F}\u{FF2E}"), Ok(()));
    // Accented and non-Latin names are fine.
    for path in [
        "r\u{e9}sum\u{e9}.md",
        "\u{65e5}\u{672c}/\u{8a9e}.txt",
        "\u{1F600}",
        "\u{212B}",
    ] {
        assert_eq!(validate_resource_path(path), Ok(()), "{path:?}");
    }
}

#[test]
fn the_first_broken_rule_is_reported() {
    // Length before prefix before characters before segments.
    assert_eq!(
        reason(&format!("/{}", "a".repeat(1100))),
        R::TooLong { len: 1101 }
    );
    assert_eq!(reason("/a:b"), R::Absolute);
    assert_eq!(reason("a/../b:c"), R::Colon { byte: 6 });
    assert_eq!(
        reason("con/x\u{200B}"),
        R::FormatCharacter {
            character: '\u{200B}',
            byte: 5
        }
    );
}

#[test]
fn the_loader_refuses_invalid_paths_before_touching_the_filesystem() {
    let scratch = Scratch::new();
    let root = scratch.dir("root");
    write(&root, "ok.txt", "fine");
    let loader = scratch.loader(&["root"]);
    // Delete the root: any filesystem access for a load would now report
    // RESOURCE_ROOT_CHANGED, so PATH_INVALID proves nothing was touched.
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(
        loader.load_text("ok.txt").unwrap_err().code(),
        "RESOURCE_ROOT_CHANGED"
    );
    for path in [
        "../ok.txt",
        "/ok.txt",
        "a//b",
        "ok.txt:ads",
        "nul.txt",
        "x\u{FF0F}y",
        "a\\b",
        "",
    ] {
        let error = loader.load_text(path).unwrap_err();
        assert_eq!(error.code(), "RESOURCE_PATH_INVALID", "{path:?}");
        assert_eq!(error, validate_resource_path(path).unwrap_err());
    }
}
