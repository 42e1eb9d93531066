//! R-8 under generated input: sizes in a window around the cap behave
//! exactly at the boundary, with multi-byte characters straddling it.
mod loader_support;

use loader_support::fixture;

use exthost::MAX_RESOURCE_TEXT_BYTES as CAP;
use proptest::prelude::*;

/// A multi-byte character of each width.
fn wide_char() -> impl Strategy<Value = char> {
    prop_oneof![
        Just('\u{e9}'),    // 2 bytes
        Just('\u{20AC}'),  // 3 bytes
        Just('\u{1F600}'), // 4 bytes
        any::<char>(),
    ]
}

proptest! {
    #![proptest_config(loader_support::config(48))]

    #[test]
    fn the_cap_holds_exactly_with_characters_straddling_it(
        // Where the multi-byte character starts, relative to the cap.
        offset in -8i64..=4,
        character in wide_char(),
        // Extra ASCII after the character (0 makes it the file's end).
        tail in 0usize..6,
        bom in any::<bool>(),
    ) {
        let fixture = fixture();
        let start = usize::try_from(CAP as i64 + offset).unwrap();
        let mut text = String::with_capacity(start + 8);
        if bom {
            text.push('\u{FEFF}');
        }
        text.extend(std::iter::repeat_n('a', start - text.len()));
        text.push(character);
        text.extend(std::iter::repeat_n('z', tail));
        let name = format!("case-{:?}.txt", std::thread::current().id()).replace(['(', ')'], "");
        std::fs::write(fixture.root.join(&name), &text).unwrap();
        let loaded = fixture.loader.load_text(&name);
        if text.len() <= CAP {
            let expected = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
            prop_assert!(loaded.as_ref().is_ok_and(|r| r.as_ref().unwrap().content == expected));
        } else {
            prop_assert_eq!(loaded.unwrap_err().code(), "RESOURCE_TOO_LARGE");
        }
    }
}
