//! ID-1 under generated input: the validator agrees with the rule as written.
use exthost::validate_id_segment;
use proptest::prelude::*;

fn by_the_rule(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0] != b'.'
        && b[0] != b'-'
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.'))
}

proptest! {
    #[test]
    fn validator_matches_the_rule(s in "[a-zA-Z0-9_.:/ \\-\u{e9}\u{0}]{0,70}") {
        prop_assert_eq!(validate_id_segment(&s).is_ok(), by_the_rule(&s));
    }

    #[test]
    fn generated_valid_ids_are_accepted(s in "[a-zA-Z0-9_][a-zA-Z0-9_.\\-]{0,63}") {
        prop_assert!(validate_id_segment(&s).is_ok());
    }
}
