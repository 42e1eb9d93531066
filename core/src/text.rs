//! Text hygiene for descriptions and display names (SPEC M-1, M-8).
//!
//! Tool and manifest text is shown to people and to models. Two pure checks
//! keep it honest; they do no I/O and allocate nothing:
//!
//! * [`check_description`]: a description may hold any printable text and
//!   line breaks, but no control character other than `\n`, `\r` and `\t`
//!   (general category Cc: U+0000 to U+001F, U+007F to U+009F, NUL
//!   included), and no bidirectional override or isolate
//!   ([`is_bidi_control`]: U+202A to U+202E, U+2066 to U+2069), which can make
//!   text display in an order other than the one a model reads it in
//!   ("Trojan Source", CVE-2021-42574).
//! * [`check_display_name`]: a display name is one line: no control
//!   character at all (tab and line breaks included; the line and paragraph
//!   separators U+2028 and U+2029 count as control characters here), no
//!   bidirectional override or isolate, and at least one visible character
//!   ([`is_visible`]).
//!
//! Both report the first refused character, in text order, with its byte
//! offset; a display name that passes the character scan and has nothing
//! visible is [`TextError::NotVisible`]. Lengths and the "not blank" rule
//! stay with the callers (the manifest validator checks them first).
//!
//! Decisions:
//!
//! * The bidirectional *marks* U+200E (LRM), U+200F (RLM) and U+061C (ALM)
//!   are accepted: they are ordinary typography in right-to-left text, and a
//!   mark, unlike an override or isolate, cannot reorder the characters
//!   around it, only set the direction of neutral characters next to it.
//! * Other format characters (general category Cf) are accepted inside
//!   text: U+200D ZERO WIDTH JOINER builds emoji sequences, U+00AD is a soft
//!   hyphen. They never count as visible.
//! * The Unicode data is that of the `unicode-properties` crate
//!   ([`unicode_properties::UNICODE_VERSION`]); an unassigned code point is
//!   accepted but never counts as visible.
//!
//! The host checks the descriptions of runtime-registered tools with
//! [`check_description`] too, so a description accepted in a manifest is
//! accepted at registration and the other way round.
//!
//! ```
//! use exthost_core::text::{check_description, check_display_name, TextError};
//!
//! assert_eq!(check_description("Lists files.\n\tOne per line."), Ok(()));
//! assert_eq!(check_display_name("Café ☕"), Ok(()));
//!
//! let error = check_description("safe\u{202E}txt.exe").unwrap_err();
//! assert_eq!(error.reason(), "text_bidi_control");
//! assert_eq!((error.character(), error.byte_offset()), (Some('\u{202E}'), Some(4)));
//!
//! assert_eq!(check_display_name("\u{200B}"), Err(TextError::NotVisible));
//! assert_eq!(check_display_name("a\tb").unwrap_err().reason(), "text_control_character");
//! ```

use std::fmt;

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// Why a text was refused: plain, cloneable data with a stable
/// [`reason`](Self::reason) code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize)]
#[non_exhaustive]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub enum TextError {
    /// A control character that the text may not hold (reason
    /// `text_control_character`).
    ControlCharacter {
        /// The refused character.
        character: char,
        /// Its byte offset in the text.
        byte_offset: usize,
    },
    /// A bidirectional override or isolate, U+202A to U+202E or U+2066 to
    /// U+2069 (reason `text_bidi_control`).
    BidiControl {
        /// The refused character.
        character: char,
        /// Its byte offset in the text.
        byte_offset: usize,
    },
    /// A display name with no visible character: only whitespace, format
    /// characters, combining marks, fillers or other invisibles (reason
    /// `text_not_visible`).
    NotVisible,
}

/// Every [`TextError::reason`] code, in declaration order.
pub const TEXT_REASON_CODES: &[&str] = &[
    TextError::CONTROL_CHARACTER,
    TextError::BIDI_CONTROL,
    TextError::NOT_VISIBLE,
];

impl TextError {
    /// The reason code of [`TextError::ControlCharacter`].
    pub const CONTROL_CHARACTER: &'static str = "text_control_character";
    /// The reason code of [`TextError::BidiControl`].
    pub const BIDI_CONTROL: &'static str = "text_bidi_control";
    /// The reason code of [`TextError::NotVisible`].
    pub const NOT_VISIBLE: &'static str = "text_not_visible";

    /// The stable reason code (`snake_case`), never reused or renamed.
    pub const fn reason(&self) -> &'static str {
        match self {
            TextError::ControlCharacter { .. } => Self::CONTROL_CHARACTER,
            TextError::BidiControl { .. } => Self::BIDI_CONTROL,
            TextError::NotVisible => Self::NOT_VISIBLE,
        }
    }

    /// The refused character, if one character was refused.
    pub const fn character(&self) -> Option<char> {
        match *self {
            TextError::ControlCharacter { character, .. }
            | TextError::BidiControl { character, .. } => Some(character),
            TextError::NotVisible => None,
        }
    }

    /// The byte offset of the refused character, if one character was
    /// refused.
    pub const fn byte_offset(&self) -> Option<usize> {
        match *self {
            TextError::ControlCharacter { byte_offset, .. }
            | TextError::BidiControl { byte_offset, .. } => Some(byte_offset),
            TextError::NotVisible => None,
        }
    }
}

impl fmt::Display for TextError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            TextError::ControlCharacter {
                character,
                byte_offset,
            } => write!(
                f,
                "the control character U+{:04X} at byte {byte_offset} is not allowed",
                u32::from(character)
            ),
            TextError::BidiControl {
                character,
                byte_offset,
            } => write!(
                f,
                "the bidirectional control character U+{:04X} at byte {byte_offset} is not allowed",
                u32::from(character)
            ),
            TextError::NotVisible => f.write_str("the text has no visible character"),
        }
    }
}

impl std::error::Error for TextError {}

/// Whether `character` is a bidirectional override or isolate: U+202A LRE,
/// U+202B RLE, U+202C PDF, U+202D LRO, U+202E RLO, U+2066 LRI, U+2067 RLI,
/// U+2068 FSI, U+2069 PDI. The marks U+200E, U+200F and U+061C are not.
pub const fn is_bidi_control(character: char) -> bool {
    matches!(character, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// Whether `character` renders as something visible on its own.
///
/// Letters, numbers, punctuation and symbols are visible, except the
/// characters that are letters or symbols by category but render blank:
/// the Hangul fillers U+115F, U+1160, U+3164 and U+FFA0, and U+2800 BRAILLE
/// PATTERN BLANK. Not visible: whitespace and separators (Z*), controls (Cc),
/// format characters (Cf, such as U+200B, U+2060, U+FEFF), combining marks
/// (M*, which only decorate another character), private-use characters (Co,
/// whose rendering depends on the font) and unassigned code points (Cn).
pub fn is_visible(character: char) -> bool {
    use GeneralCategory as G;
    if matches!(
        character,
        '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}' | '\u{2800}'
    ) || character.is_whitespace()
    {
        return false;
    }
    match character.general_category() {
        G::UppercaseLetter
        | G::LowercaseLetter
        | G::TitlecaseLetter
        | G::ModifierLetter
        | G::OtherLetter
        | G::DecimalNumber
        | G::LetterNumber
        | G::OtherNumber
        | G::ConnectorPunctuation
        | G::DashPunctuation
        | G::OpenPunctuation
        | G::ClosePunctuation
        | G::InitialPunctuation
        | G::FinalPunctuation
        | G::OtherPunctuation
        | G::MathSymbol
        | G::CurrencySymbol
        | G::ModifierSymbol
        | G::OtherSymbol => true,
        G::NonspacingMark
        | G::SpacingMark
        | G::EnclosingMark
        | G::SpaceSeparator
        | G::LineSeparator
        | G::ParagraphSeparator
        | G::Control
        | G::Format
        | G::Surrogate
        | G::PrivateUse
        | G::Unassigned => false,
    }
}

/// The first character of `text` that `refused` classifies, with its offset.
fn first_refused(text: &str, refused: impl Fn(char) -> Option<TextKind>) -> Result<(), TextError> {
    for (byte_offset, character) in text.char_indices() {
        match refused(character) {
            None => {}
            Some(TextKind::Control) => {
                return Err(TextError::ControlCharacter {
                    character,
                    byte_offset,
                });
            }
            Some(TextKind::Bidi) => {
                return Err(TextError::BidiControl {
                    character,
                    byte_offset,
                });
            }
        }
    }
    Ok(())
}

enum TextKind {
    Control,
    Bidi,
}

/// Checks a description (of a tool, an extension...): refuses control
/// characters (general category Cc) other than `\n`, `\r` and `\t`, and the
/// bidirectional overrides and isolates ([`is_bidi_control`]). Reports the
/// first refused character.
///
/// Length and blankness are the caller's rules.
///
/// # Errors
///
/// [`TextError::ControlCharacter`] or [`TextError::BidiControl`], naming the
/// first refused character and its byte offset.
pub fn check_description(s: &str) -> Result<(), TextError> {
    first_refused(s, |character| {
        if character.is_control() && !matches!(character, '\n' | '\r' | '\t') {
            Some(TextKind::Control)
        } else if is_bidi_control(character) {
            Some(TextKind::Bidi)
        } else {
            None
        }
    })
}

/// Checks a display name (of an extension, a provider, a model): refuses
/// every control character (general category Cc, tab and line breaks
/// included, and the separators U+2028 and U+2029), the bidirectional
/// overrides and isolates ([`is_bidi_control`]), and a name with no
/// [visible](is_visible) character.
///
/// Length and blankness are the caller's rules.
///
/// # Errors
///
/// [`TextError::ControlCharacter`] or [`TextError::BidiControl`] for the
/// first refused character, else [`TextError::NotVisible`].
pub fn check_display_name(s: &str) -> Result<(), TextError> {
    first_refused(s, |character| {
        if character.is_control() || matches!(character, '\u{2028}' | '\u{2029}') {
            Some(TextKind::Control)
        } else if is_bidi_control(character) {
            Some(TextKind::Bidi)
        } else {
            None
        }
    })?;
    if s.chars().any(is_visible) {
        Ok(())
    } else {
        Err(TextError::NotVisible)
    }
}

/// A short, escaped rendering of input text for messages: at most 64
/// characters, control characters escaped, quoted.
pub fn quote(text: &str) -> String {
    const LIMIT: usize = 64;
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(LIMIT).collect();
    if chars.next().is_some() {
        format!("{head:?}... ({} bytes)", text.len())
    } else {
        format!("{head:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const BIDI: [char; 9] = [
        '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}',
        '\u{2068}', '\u{2069}',
    ];

    fn control(character: char, byte_offset: usize) -> Result<(), TextError> {
        Err(TextError::ControlCharacter {
            character,
            byte_offset,
        })
    }

    fn bidi(character: char, byte_offset: usize) -> Result<(), TextError> {
        Err(TextError::BidiControl {
            character,
            byte_offset,
        })
    }

    #[test]
    fn nul_is_refused_everywhere() {
        assert_eq!(check_description("\0"), control('\0', 0));
        assert_eq!(check_description("ab\0c"), control('\0', 2));
        assert_eq!(check_display_name("ab\0c"), control('\0', 2));
        assert_eq!(check_display_name("\0"), control('\0', 0));
    }

    #[test]
    fn every_c0_and_c1_control_is_refused_except_line_breaks_and_tab_in_descriptions() {
        let controls = ('\u{0}'..='\u{1F}').chain('\u{7F}'..='\u{9F}');
        let mut count = 0;
        for character in controls {
            count += 1;
            let text = format!("é{character}x");
            assert_eq!(
                check_display_name(&text),
                control(character, 2),
                "{character:?}"
            );
            if matches!(character, '\n' | '\r' | '\t') {
                assert_eq!(check_description(&text), Ok(()), "{character:?}");
            } else {
                assert_eq!(
                    check_description(&text),
                    control(character, 2),
                    "{character:?}"
                );
            }
        }
        assert_eq!(count, 65);
    }

    #[test]
    fn c1_controls_are_refused() {
        for character in ['\u{80}', '\u{85}', '\u{9B}', '\u{9F}'] {
            assert_eq!(
                check_description(&format!("a{character}")),
                control(character, 1)
            );
            assert_eq!(
                check_display_name(&format!("a{character}")),
                control(character, 1)
            );
        }
    }

    #[test]
    fn tab_and_line_breaks_are_accepted_in_descriptions_and_refused_in_display_names() {
        assert_eq!(check_description("one\ntwo\r\n\tthree"), Ok(()));
        assert_eq!(check_display_name("one\ntwo"), control('\n', 3));
        assert_eq!(check_display_name("one\rtwo"), control('\r', 3));
        assert_eq!(check_display_name("one\ttwo"), control('\t', 3));
        // The Unicode line and paragraph separators are line breaks too.
        assert_eq!(check_description("one\u{2028}two\u{2029}"), Ok(()));
        assert_eq!(check_display_name("one\u{2028}two"), control('\u{2028}', 3));
        assert_eq!(check_display_name("one\u{2029}two"), control('\u{2029}', 3));
    }

    #[test]
    fn each_bidi_override_and_isolate_is_refused() {
        for character in BIDI {
            assert!(is_bidi_control(character));
            let text = format!("ab{character}cd");
            assert_eq!(
                check_description(&text),
                bidi(character, 2),
                "{character:?}"
            );
            assert_eq!(
                check_display_name(&text),
                bidi(character, 2),
                "{character:?}"
            );
            let error = check_description(&text).unwrap_err();
            assert_eq!(error.reason(), "text_bidi_control");
            assert_eq!(error.character(), Some(character));
            assert_eq!(error.byte_offset(), Some(2));
        }
        // The neighbours of the two ranges are not bidi controls.
        for character in ['\u{2029}', '\u{202F}', '\u{2065}', '\u{206A}'] {
            assert!(!is_bidi_control(character), "{character:?}");
        }
    }

    #[test]
    fn bidi_marks_are_accepted_but_are_not_visible() {
        for mark in ['\u{200E}', '\u{200F}', '\u{061C}'] {
            assert!(!is_bidi_control(mark));
            assert_eq!(check_description(&format!("a{mark}b")), Ok(()));
            assert_eq!(check_display_name(&format!("א{mark}1")), Ok(()));
            assert_eq!(
                check_display_name(&mark.to_string()),
                Err(TextError::NotVisible)
            );
        }
    }

    #[test]
    fn the_first_refused_character_is_reported() {
        assert_eq!(check_description("a\u{202E}b\0"), bidi('\u{202E}', 1));
        assert_eq!(check_description("a\0b\u{202E}"), control('\0', 1));
        assert_eq!(check_display_name("\u{200B}\u{2066}"), bidi('\u{2066}', 3));
        // A refused character is reported before invisibility.
        assert_eq!(check_display_name(" \t "), control('\t', 1));
    }

    #[test]
    fn invisible_only_display_names_are_refused() {
        let invisible = [
            "\u{200B}",           // zero width space (Cf)
            "\u{2060}",           // word joiner (Cf)
            "\u{FEFF}",           // zero width no-break space (Cf)
            "\u{200D}\u{200C}",   // joiners (Cf)
            "\u{00AD}",           // soft hyphen (Cf)
            "\u{E0041}\u{E007F}", // tag characters (Cf)
            "\u{3164}",           // Hangul filler (Lo)
            "\u{115F}\u{1160}",   // Hangul choseong and jungseong fillers (Lo)
            "\u{FFA0}",           // halfwidth Hangul filler (Lo)
            "\u{2800}",           // braille pattern blank (So)
            "\u{0301}",           // combining acute accent alone (Mn)
            "\u{0301}\u{0308}",   // combining marks alone
            "\u{20DD}",           // combining enclosing circle (Me)
            "\u{FE0F}",           // variation selector (Mn)
            " \u{0301}",          // a mark on a space
            "\u{3000}\u{00A0}",   // ideographic and no-break space (Zs)
            "\u{E000}",           // private use
            "\u{0378}",           // unassigned
            "\u{200B} \u{2060}\u{3164}",
        ];
        for name in invisible {
            assert_eq!(
                check_display_name(name),
                Err(TextError::NotVisible),
                "{name:?}"
            );
            assert_eq!(
                check_display_name(name).unwrap_err().reason(),
                "text_not_visible"
            );
            // Descriptions have no visibility rule (blankness is the caller's).
            assert_eq!(check_description(name), Ok(()), "{name:?}");
        }
        let error = check_display_name("\u{200B}").unwrap_err();
        assert_eq!((error.character(), error.byte_offset()), (None, None));
    }

    #[test]
    fn one_visible_character_is_enough() {
        for name in [
            "a",
            "\u{200B}a\u{200B}",
            "e\u{0301}",
            "\u{3164}가",
            "_",
            "1",
            "€",
            "\u{2801}", // braille dots-1
            "👩\u{200D}💻",
        ] {
            assert_eq!(check_display_name(name), Ok(()), "{name:?}");
        }
    }

    #[test]
    fn ordinary_non_ascii_text_is_accepted() {
        for text in [
            "Café ☕",
            "日本語のツール",
            "中文工具",
            "한국어 도구",
            "Ελληνικά",
            "Кириллица",
            "עברית",
            "العربية",
            "हिन्दी",
            "🦀 Rust",
            "Modèle ✓",
        ] {
            assert_eq!(check_description(text), Ok(()), "{text}");
            assert_eq!(check_display_name(text), Ok(()), "{text}");
        }
    }

    #[test]
    fn errors_display_their_character_and_offset_and_list_their_codes() {
        assert_eq!(
            check_description("ab\u{7}").unwrap_err().to_string(),
            "the control character U+0007 at byte 2 is not allowed"
        );
        assert_eq!(
            check_description("\u{202E}").unwrap_err().to_string(),
            "the bidirectional control character U+202E at byte 0 is not allowed"
        );
        assert_eq!(
            TextError::NotVisible.to_string(),
            "the text has no visible character"
        );
        let reasons = [
            control('\0', 0).unwrap_err().reason(),
            bidi('\u{202E}', 0).unwrap_err().reason(),
            TextError::NotVisible.reason(),
        ];
        assert_eq!(reasons, TEXT_REASON_CODES);
        assert_eq!(
            TEXT_REASON_CODES,
            [
                "text_control_character",
                "text_bidi_control",
                "text_not_visible"
            ]
        );
    }

    #[test]
    fn the_empty_text_has_no_refused_character_but_nothing_visible() {
        assert_eq!(check_description(""), Ok(()));
        assert_eq!(check_display_name(""), Err(TextError::NotVisible));
    }
}
