//! R-9 under generated input: a file loads exactly when its bytes, after one
//! leading byte-order mark is removed, are UTF-8 by `std::str::from_utf8`,
//! and the error points where std's does.
mod loader_support;

use loader_support::fixture;

use exthost::ResourceError;
use proptest::prelude::*;
use proptest::sample::Index;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Bytes of every flavour: random, valid text, and valid text with one
/// byte changed, cut short, or with a stray byte inserted; behind zero, one
/// or two byte-order marks.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    let text = any::<String>().prop_map(String::into_bytes);
    let body = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..48),
        text.clone(),
        (text.clone(), any::<Index>(), any::<u8>()).prop_map(|(mut bytes, at, byte)| {
            if !bytes.is_empty() {
                let at = at.index(bytes.len());
                bytes[at] = byte;
            }
            bytes
        }),
        (text.clone(), any::<Index>()).prop_map(|(mut bytes, at)| {
            bytes.truncate(at.index(bytes.len() + 1));
            bytes
        }),
        (text, any::<Index>(), 0x80u8..=0xFF).prop_map(|(mut bytes, at, byte)| {
            bytes.insert(at.index(bytes.len() + 1), byte);
            bytes
        }),
    ];
    (0usize..3, body).prop_map(|(boms, body)| {
        let mut bytes = BOM.repeat(boms);
        bytes.extend(body);
        bytes
    })
}

proptest! {
    #![proptest_config(loader_support::config(256))]

    #[test]
    fn files_decode_exactly_when_std_accepts_them(bytes in bytes()) {
        let fixture = fixture();
        // One file per thread: the test harness may run suites in parallel.
        let name = format!("case-{:?}.txt", std::thread::current().id()).replace(['(', ')'], "");
        std::fs::write(fixture.root.join(&name), &bytes).unwrap();
        let loaded = fixture.loader.load_text(&name);
        let body = bytes.strip_prefix(BOM).unwrap_or(&bytes);
        match std::str::from_utf8(body) {
            Ok(text) => prop_assert_eq!(loaded.unwrap().unwrap().content, text),
            Err(_) => {
                let whole = std::str::from_utf8(&bytes).unwrap_err();
                prop_assert_eq!(
                    loaded,
                    Err(ResourceError::InvalidUtf8 {
                        root_id: "root".into(),
                        path: name.clone(),
                        valid_up_to: whole.valid_up_to(),
                        error_len: whole.error_len(),
                    })
                );
            }
        }
    }
}
