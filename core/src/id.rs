//! ID-1: the one identifier rule.
//!
//! Extension ids, tool names, root ids, provider ids and model ids all go
//! through [`validate_id_segment`], at every boundary (manifest, discovery,
//! registration, resource roots), so a name accepted at one boundary can never
//! be refused at another.

use thiserror::Error;

/// The longest identifier segment, in bytes.
pub const MAX_ID_BYTES: usize = 64;

/// Why a string is not a valid identifier segment (ID-1).
///
/// Every variant has the stable code `ID_INVALID` ([`IdError::code`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Error, serde::Serialize)]
#[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
pub enum IdError {
    /// The identifier is the empty string.
    #[error("{}: identifier is empty", self.code())]
    Empty,
    /// The identifier is longer than [`MAX_ID_BYTES`] bytes.
    #[error("{}: identifier is {len} bytes long; at most {MAX_ID_BYTES} are allowed", self.code())]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// The identifier starts with `.` or `-`.
    #[error("{}: identifier must not start with {first:?}", self.code())]
    BadStart {
        /// The refused first character.
        first: char,
    },
    /// A character outside `A-Z a-z 0-9 _ - .`.
    #[error("{}: identifier has the character {character:?} at byte {byte}; only ASCII letters, digits, '_', '-' and '.' are allowed", self.code()
    )]
    BadCharacter {
        /// The refused character.
        character: char,
        /// Its byte offset.
        byte: usize,
    },
}

impl IdError {
    /// The stable error code: always `ID_INVALID`.
    pub fn code(&self) -> &'static str {
        crate::error::codes::ID_INVALID
    }
}

crate::coded_by_display!(IdError);

/// Checks one identifier segment against ID-1.
///
/// Valid: 1 to 64 bytes of ASCII letters, digits, `_`, `-` and `.`, not
/// starting with `.` or `-`.
///
/// ```
/// use exthost_core::id::validate_id_segment;
/// assert!(validate_id_segment("git-tools.v2").is_ok());
/// assert_eq!(validate_id_segment("a:b").unwrap_err().code(), "ID_INVALID");
/// assert!(validate_id_segment(".hidden").is_err());
/// ```
pub fn validate_id_segment(id: &str) -> Result<(), IdError> {
    if id.is_empty() {
        return Err(IdError::Empty);
    }
    for (byte, character) in id.char_indices() {
        let allowed = character.is_ascii_alphanumeric() || matches!(character, '_' | '-' | '.');
        if !allowed {
            return Err(IdError::BadCharacter { character, byte });
        }
    }
    if id.len() > MAX_ID_BYTES {
        return Err(IdError::TooLong { len: id.len() });
    }
    let first = id.as_bytes()[0] as char;
    if first == '.' || first == '-' {
        return Err(IdError::BadStart { first });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_the_whole_alphabet_and_both_length_bounds() {
        assert_eq!(validate_id_segment("a"), Ok(()));
        assert_eq!(validate_id_segment(&"x".repeat(64)), Ok(()));
        assert_eq!(
            validate_id_segment("AZaz09_-.tail"),
            Ok(()),
            "letters, digits, '_', '-' and '.' are allowed"
        );
        assert_eq!(validate_id_segment("_lead"), Ok(()));
        assert_eq!(validate_id_segment("9lives"), Ok(()));
    }

    #[test]
    fn refuses_empty_and_too_long() {
        assert_eq!(validate_id_segment(""), Err(IdError::Empty));
        assert_eq!(
            validate_id_segment(&"x".repeat(65)),
            Err(IdError::TooLong { len: 65 })
        );
    }

    #[test]
    fn refuses_leading_dot_and_dash() {
        assert_eq!(
            validate_id_segment(".a"),
            Err(IdError::BadStart { first: '.' })
        );
        assert_eq!(
            validate_id_segment("-a"),
            Err(IdError::BadStart { first: '-' })
        );
        assert_eq!(validate_id_segment("a.-"), Ok(()));
    }

    #[test]
    fn refuses_each_forbidden_character_naming_its_byte() {
        for (input, character, byte) in [
            ("a b", ' ', 1),
            ("a:b", ':', 1),
            ("a/b", '/', 1),
            ("ab\u{0}", '\u{0}', 2),
            ("ab\t", '\t', 2),
            ("é", 'é', 0),
            ("ab\\", '\\', 2),
            ("x\u{202e}", '\u{202e}', 1),
        ] {
            let err = validate_id_segment(input).unwrap_err();
            assert_eq!(err, IdError::BadCharacter { character, byte }, "{input:?}");
            assert_eq!(err.code(), "ID_INVALID");
        }
    }
}
