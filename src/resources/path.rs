//! R-3: the resource path grammar.
//!
//! A pure function of the string: no filesystem access, no platform
//! dependence, so a path is accepted or refused identically on every
//! operating system.
//!
//! The checks run in a fixed order and the first failure is reported:
//! 1. length (empty, over 1,024 bytes, a segment over 255 bytes);
//! 2. prefixes (absolute, device namespace, UNC, drive letter);
//! 3. characters, left to right (backslash, control, colon, `<>"|?*`,
//!    format, slash look-alikes, compatibility forms);
//! 4. segments, left to right (empty, `.`/`..`, trailing dot or space,
//!    Windows device names).

use unicode_normalization::UnicodeNormalization;
use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

use super::error::{PathInvalidReason, ResourceError};

/// The longest valid resource path, in bytes.
pub const MAX_PATH_BYTES: usize = 1024;

/// The longest valid path segment, in bytes.
pub const MAX_SEGMENT_BYTES: usize = 255;

/// Characters that look like a slash but have no compatibility decomposition
/// (NFKC leaves them unchanged), refused by name.
const SLASH_LOOKALIKES: [char; 6] = [
    '\u{2044}', // FRACTION SLASH
    '\u{2215}', // DIVISION SLASH
    '\u{2216}', // SET MINUS
    '\u{29F5}', // REVERSE SOLIDUS OPERATOR
    '\u{29F8}', // BIG SOLIDUS
    '\u{29F9}', // BIG REVERSE SOLIDUS
];

/// Windows device names, compared with a segment's stem ignoring ASCII case.
/// `COM` and `LPT` take the digits 0 to 9 and superscript one, two, three.
pub(crate) const DEVICE_NAMES: [&str; 33] = [
    "CON",
    "PRN",
    "AUX",
    "NUL",
    "COM0",
    "COM1",
    "COM2",
    "COM3",
    "COM4",
    "COM5",
    "COM6",
    "COM7",
    "COM8",
    "COM9",
    "COM\u{B9}",
    "COM\u{B2}",
    "COM\u{B3}",
    "LPT0",
    "LPT1",
    "LPT2",
    "LPT3",
    "LPT4",
    "LPT5",
    "LPT6",
    "LPT7",
    "LPT8",
    "LPT9",
    "LPT\u{B9}",
    "LPT\u{B2}",
    "LPT\u{B3}",
    "CONIN$",
    "CONOUT$",
    "CLOCK$",
];

/// Checks a resource path against the grammar of docs/spec.md R-3, without touching
/// the filesystem.
///
/// A valid path is 1 to 1,024 bytes of `/`-separated segments, each 1 to 255
/// bytes; it is relative, has no `.` or `..` segment, no `\`, no control,
/// format or bidirectional character, no `:` and none of `<>"|?*`, no
/// character whose compatibility form hides one of those, no slash
/// look-alike, no segment ending in `.` or a space, and no Windows device
/// name. Refusals are [`ResourceError::PathInvalid`] (code
/// `RESOURCE_PATH_INVALID`) with the [`PathInvalidReason`].
///
/// ```
/// use exthost::validate_resource_path;
/// use exthost::resources::PathInvalidReason;
///
/// assert!(validate_resource_path("prompts/system.md").is_ok());
/// assert!(validate_resource_path("notes/\u{e9}t\u{e9}.txt").is_ok());
/// let refused = validate_resource_path("docs/aux.txt").unwrap_err();
/// assert_eq!(refused.code(), "RESOURCE_PATH_INVALID");
/// assert_eq!(
///     refused.path_invalid_reason(),
///     Some(&PathInvalidReason::DeviceName { segment: 1, device: "AUX" })
/// );
/// ```
pub fn validate_resource_path(path: &str) -> Result<(), ResourceError> {
    check(path).map_err(|reason| ResourceError::PathInvalid {
        path: path.to_owned(),
        reason,
    })
}

/// The grammar itself, returning only the reason.
pub(crate) fn check(path: &str) -> Result<(), PathInvalidReason> {
    check_lengths(path)?;
    check_prefix(path)?;
    for (byte, character) in path.char_indices() {
        check_character(byte, character)?;
    }
    for (segment, text) in path.split('/').enumerate() {
        check_segment(segment, text)?;
    }
    Ok(())
}

fn check_lengths(path: &str) -> Result<(), PathInvalidReason> {
    if path.is_empty() {
        return Err(PathInvalidReason::Empty);
    }
    if path.len() > MAX_PATH_BYTES {
        return Err(PathInvalidReason::TooLong { len: path.len() });
    }
    match path
        .split('/')
        .enumerate()
        .find(|(_, text)| text.len() > MAX_SEGMENT_BYTES)
    {
        Some((segment, text)) => Err(PathInvalidReason::SegmentTooLong {
            segment,
            len: text.len(),
        }),
        None => Ok(()),
    }
}

fn check_prefix(path: &str) -> Result<(), PathInvalidReason> {
    let bytes = path.as_bytes();
    let is_separator = |b: u8| b == b'/' || b == b'\\';
    // Win32 device namespaces (`\\?\`, `\\.\`, either separator) and the
    // NT object namespace (`\??\`).
    let device = match bytes {
        [a, b, b'?' | b'.', c, ..] => is_separator(*a) && is_separator(*b) && is_separator(*c),
        _ => false,
    } || matches!(bytes, [a, b'?', b'?', c, ..] if is_separator(*a) && is_separator(*c));
    if device {
        return Err(PathInvalidReason::DevicePrefix);
    }
    if bytes.len() >= 2 && is_separator(bytes[0]) && is_separator(bytes[1]) {
        return Err(PathInvalidReason::UncPrefix);
    }
    if bytes.first().copied().is_some_and(is_separator) {
        return Err(PathInvalidReason::Absolute);
    }
    if bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':' {
        return Err(PathInvalidReason::DriveLetter);
    }
    Ok(())
}

/// Whether a character is refused wherever it appears: the characters the
/// compatibility test looks for in a non-ASCII character's NFKC form.
fn is_refused(character: char) -> bool {
    matches!(
        character,
        '.' | '/' | '\\' | ':' | '<' | '>' | '"' | '|' | '?' | '*'
    ) || character.is_control()
        || is_format(character)
}

fn is_format(character: char) -> bool {
    !character.is_ascii() && character.general_category() == GeneralCategory::Format
}

fn check_character(byte: usize, character: char) -> Result<(), PathInvalidReason> {
    match character {
        '\\' => return Err(PathInvalidReason::Backslash { byte }),
        ':' => return Err(PathInvalidReason::Colon { byte }),
        '<' | '>' | '"' | '|' | '?' | '*' => {
            return Err(PathInvalidReason::ReservedCharacter { character, byte });
        }
        _ => {}
    }
    if character.is_control() {
        return Err(PathInvalidReason::ControlCharacter { character, byte });
    }
    if character.is_ascii() {
        return Ok(());
    }
    if is_format(character) {
        return Err(PathInvalidReason::FormatCharacter { character, byte });
    }
    if SLASH_LOOKALIKES.contains(&character) {
        return Err(PathInvalidReason::SlashLookalike { character, byte });
    }
    if let Some(refused) = std::iter::once(character).nfkc().find(|c| is_refused(*c)) {
        return Err(PathInvalidReason::CompatibilityForm {
            character,
            byte,
            refused,
        });
    }
    Ok(())
}

fn check_segment(segment: usize, text: &str) -> Result<(), PathInvalidReason> {
    if text.is_empty() {
        return Err(PathInvalidReason::EmptySegment { segment });
    }
    if text == "." || text == ".." {
        return Err(PathInvalidReason::DotSegment { segment });
    }
    if text.ends_with('.') || text.ends_with(' ') {
        return Err(PathInvalidReason::TrailingDotOrSpace { segment });
    }
    if let Some(device) = device_name(text) {
        return Err(PathInvalidReason::DeviceName { segment, device });
    }
    Ok(())
}

/// The Windows device a segment names, if any: its stem (the part before
/// the first `.`), trailing spaces ignored, compared ignoring ASCII case.
fn device_name(segment: &str) -> Option<&'static str> {
    let stem = segment
        .split('.')
        .next()
        .unwrap_or(segment)
        .trim_end_matches(' ');
    DEVICE_NAMES
        .iter()
        .copied()
        .find(|device| device.eq_ignore_ascii_case(stem))
}

#[cfg(test)]
mod tests {
    use super::*;
    use PathInvalidReason as R;

    #[test]
    fn accepts_ordinary_paths() {
        for path in [
            "a",
            "a/b/c.txt",
            ".hidden/file",
            "a..b",
            "con_fig/console.md",
            "COM10",
            "LPT",
            "x/CONSOLE",
            "caf\u{e9}/\u{65e5}\u{672c}.md",
            "emoji/\u{1F600}.txt",
            " leading space",
            "a-b_c~d!e@f#g$h%i^j&k(l)m+n=o,p;q[r]s{t}u'v`w",
        ] {
            assert_eq!(check(path), Ok(()), "{path:?}");
        }
    }

    #[test]
    fn prefixes_are_named_precisely() {
        assert_eq!(check("/etc/passwd"), Err(R::Absolute));
        assert_eq!(check("\\windows"), Err(R::Absolute));
        assert_eq!(check("//server/share"), Err(R::UncPrefix));
        assert_eq!(check("\\\\server\\share"), Err(R::UncPrefix));
        assert_eq!(check("\\\\?\\C:\\x"), Err(R::DevicePrefix));
        assert_eq!(check("\\\\.\\pipe\\x"), Err(R::DevicePrefix));
        assert_eq!(check("//?/C:/x"), Err(R::DevicePrefix));
        assert_eq!(check("//./COM1"), Err(R::DevicePrefix));
        assert_eq!(check("\\??\\C:\\x"), Err(R::DevicePrefix));
        assert_eq!(check("C:x"), Err(R::DriveLetter));
        assert_eq!(check("z:/x"), Err(R::DriveLetter));
    }

    #[test]
    fn device_stems_ignore_case_extension_and_trailing_spaces() {
        assert_eq!(device_name("con"), Some("CON"));
        assert_eq!(device_name("Con.txt.bak"), Some("CON"));
        assert_eq!(device_name("nul  .txt"), Some("NUL"));
        assert_eq!(device_name("com\u{B9}"), Some("COM\u{B9}"));
        assert_eq!(device_name("clock$.x"), Some("CLOCK$"));
        assert_eq!(device_name("conin$"), Some("CONIN$"));
        assert_eq!(device_name("COM10"), None);
        assert_eq!(device_name(" CON"), None);
        assert_eq!(device_name("CONSOLE"), None);
    }

    #[test]
    fn lengths_are_checked_first() {
        assert_eq!(check(""), Err(R::Empty));
        let long = "a/".repeat(600);
        assert_eq!(check(&long), Err(R::TooLong { len: 1200 }));
        let segment = format!("ok/{}", "\\".repeat(256));
        assert_eq!(
            check(&segment),
            Err(R::SegmentTooLong {
                segment: 1,
                len: 256
            })
        );
    }
}
