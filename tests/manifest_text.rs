//! Text hygiene in manifests (M-1, M-8): every description and display name
//! goes through `exthost::text`, and each refusal has its own reason code
//! per field, reported at the field's JSON pointer.

use exthost::manifest::{ManifestReason as R, parse_manifest};
use exthost::text::{check_description, check_display_name};
use serde_json::{Value, json};

/// One text field of a manifest: where it is, how to put a text there, and
/// its reason codes (control, bidi, not visible; `None` for descriptions).
struct Field {
    pointer: &'static str,
    set: fn(&mut Value, &str),
    control: R,
    bidi: R,
    not_visible: Option<R>,
}

/// A valid manifest with every kind of text field.
fn base() -> Value {
    json!({
        "id": "texts",
        "displayName": "Texts",
        "description": "Text fields.",
        "runtime": {"kind": "in-process"},
        "permissions": ["tools.register", "providers.register"],
        "deferred": {
            "tools": [
                {"name": "a", "description": "First.", "inputSchema": {"type": "object"}},
                {"name": "b", "description": "Second.", "inputSchema": {"type": "object"}}
            ],
            "providers": [
                {"id": "p", "displayName": "P", "models": [{"id": "m0"}, {"id": "m1", "displayName": "M1"}]},
                {"id": "q", "displayName": "Q"}
            ]
        }
    })
}

fn fields() -> Vec<Field> {
    vec![
        Field {
            pointer: "/displayName",
            set: |v, t| v["displayName"] = json!(t),
            control: R::ExtensionDisplayNameControlCharacter,
            bidi: R::ExtensionDisplayNameBidiControl,
            not_visible: Some(R::ExtensionDisplayNameNotVisible),
        },
        Field {
            pointer: "/description",
            set: |v, t| v["description"] = json!(t),
            control: R::ExtensionDescriptionControlCharacter,
            bidi: R::ExtensionDescriptionBidiControl,
            not_visible: None,
        },
        Field {
            pointer: "/deferred/tools/1/description",
            set: |v, t| v["deferred"]["tools"][1]["description"] = json!(t),
            control: R::DeclaredToolDescriptionControlCharacter,
            bidi: R::DeclaredToolDescriptionBidiControl,
            not_visible: None,
        },
        Field {
            pointer: "/deferred/providers/1/displayName",
            set: |v, t| v["deferred"]["providers"][1]["displayName"] = json!(t),
            control: R::ProviderDisplayNameControlCharacter,
            bidi: R::ProviderDisplayNameBidiControl,
            not_visible: Some(R::ProviderDisplayNameNotVisible),
        },
        Field {
            // An optional display name that was absent in the base manifest.
            pointer: "/deferred/providers/0/models/0/displayName",
            set: |v, t| v["deferred"]["providers"][0]["models"][0]["displayName"] = json!(t),
            control: R::ModelDisplayNameControlCharacter,
            bidi: R::ModelDisplayNameBidiControl,
            not_visible: Some(R::ModelDisplayNameNotVisible),
        },
    ]
}

fn with(field: &Field, text: &str) -> String {
    let mut value = base();
    (field.set)(&mut value, text);
    value.to_string()
}

/// The reason code and pointer of a refusal; panics if the text is accepted.
fn refused(text: &str) -> (R, String, String) {
    let error = parse_manifest(text).expect_err("refused");
    assert_eq!(error.code(), "MANIFEST_INVALID");
    assert_eq!(error.extension_id(), Some("texts"));
    (
        error.reason(),
        error.pointer().to_owned(),
        error.message().to_owned(),
    )
}

const BIDI: [char; 9] = [
    '\u{202A}', '\u{202B}', '\u{202C}', '\u{202D}', '\u{202E}', '\u{2066}', '\u{2067}', '\u{2068}',
    '\u{2069}',
];

#[test]
fn the_base_manifest_is_accepted() {
    let (manifest, _) = parse_manifest(&base().to_string()).unwrap();
    assert_eq!(manifest.display_name(), Some("Texts"));
}

#[test]
fn nul_and_control_characters_are_refused_in_every_field_with_its_code() {
    for field in fields() {
        for control in ['\u{0}', '\u{7}', '\u{1b}', '\u{7f}', '\u{85}', '\u{9f}'] {
            let (reason, pointer, message) = refused(&with(&field, &format!("ok{control}ok")));
            assert_eq!(
                (reason, pointer.as_str()),
                (field.control, field.pointer),
                "{control:?}"
            );
            assert!(
                message.contains(&format!("U+{:04X} at byte 2", u32::from(control))),
                "{message}"
            );
            assert!(reason.as_str().ends_with("_control_character"));
        }
    }
}

#[test]
fn each_bidi_override_and_isolate_is_refused_in_every_field_with_its_code() {
    for field in fields() {
        for bidi in BIDI {
            let (reason, pointer, message) = refused(&with(&field, &format!("é{bidi}x")));
            assert_eq!(
                (reason, pointer.as_str()),
                (field.bidi, field.pointer),
                "{bidi:?}"
            );
            assert!(
                message.contains(&format!("U+{:04X} at byte 2", u32::from(bidi))),
                "{message}"
            );
            assert!(reason.as_str().ends_with("_bidi_control"));
        }
    }
}

#[test]
fn descriptions_keep_line_breaks_and_tab_and_display_names_refuse_them() {
    for field in fields() {
        let text = "line one\r\n\tline two\nline three";
        match field.not_visible {
            None => {
                let (manifest, _) = parse_manifest(&with(&field, text)).unwrap();
                let description = if field.pointer == "/description" {
                    manifest.description().unwrap()
                } else {
                    manifest.declared_tools()[1].description()
                };
                assert_eq!(description, text);
            }
            Some(_) => {
                let (reason, pointer, _) = refused(&with(&field, text));
                assert_eq!((reason, pointer.as_str()), (field.control, field.pointer));
            }
        }
    }
}

#[test]
fn invisible_display_names_are_refused_and_invisible_descriptions_are_not_judged() {
    for field in fields() {
        for invisible in [
            "\u{200B}",
            "\u{2060}\u{FEFF}",
            "\u{3164}",
            "\u{115F}\u{1160}\u{FFA0}",
            "\u{0301}\u{0302}",
            "\u{200B} \u{200B}",
        ] {
            let text = with(&field, invisible);
            match field.not_visible {
                Some(code) => {
                    let (reason, pointer, message) = refused(&text);
                    assert_eq!(
                        (reason, pointer.as_str()),
                        (code, field.pointer),
                        "{invisible:?}"
                    );
                    assert!(message.contains("no visible character"), "{message}");
                }
                // Descriptions have no visibility rule; they are not blank
                // (only whitespace) either, so they load.
                None => assert!(parse_manifest(&text).is_ok(), "{invisible:?}"),
            }
        }
    }
}

#[test]
fn length_and_blank_rules_keep_their_codes_and_come_first() {
    let invalid = [
        R::InvalidExtensionDisplayName,
        R::InvalidExtensionDescription,
        R::InvalidDeclaredToolDescription,
        R::InvalidProviderDisplayName,
        R::InvalidModelDisplayName,
    ];
    for (field, code) in fields().iter().zip(invalid) {
        for bad in ["", " \n ", &format!("\u{0}{}", "x".repeat(1024))] {
            let (reason, pointer, _) = refused(&with(field, bad));
            assert_eq!(
                (reason, pointer.as_str()),
                (code, field.pointer),
                "{bad:.8?}"
            );
        }
    }
}

#[test]
fn ordinary_text_marks_and_joiners_are_accepted() {
    for field in fields() {
        for text in [
            "Café ☕",
            "日本語のツール",
            "한국어",
            "שלום\u{200F}!",
            "عربي\u{061C}1",
            "👩\u{200D}💻 dev",
            "soft\u{00AD}hyphen",
            "e\u{0301}",
        ] {
            let parsed = parse_manifest(&with(&field, text));
            assert!(parsed.is_ok(), "{text:?} at {}: {parsed:?}", field.pointer);
        }
    }
}

#[test]
fn the_first_refused_character_decides_the_code() {
    let field = &fields()[2];
    let (reason, _, message) = refused(&with(field, "a\u{202E}b\u{0}"));
    assert_eq!(reason, R::DeclaredToolDescriptionBidiControl);
    assert!(message.contains("U+202E at byte 1"), "{message}");
    let (reason, _, message) = refused(&with(field, "a\u{0}b\u{202E}"));
    assert_eq!(reason, R::DeclaredToolDescriptionControlCharacter);
    assert!(message.contains("U+0000 at byte 1"), "{message}");
}

/// The manifest and the runtime checks agree: a manifest text is accepted
/// exactly when `exthost::text` accepts it (given the length and blank
/// rules), so a declared description is never refused at registration.
#[test]
fn the_manifest_and_the_text_module_agree() {
    let samples = [
        "plain",
        "tab\there",
        "nul\u{0}",
        "rlo\u{202E}",
        "lrm\u{200E}",
        "\u{200B}",
        "ok \u{85}",
        "line\u{2028}sep",
    ];
    for field in fields() {
        for sample in samples {
            let accepted = parse_manifest(&with(&field, sample)).is_ok();
            let expected = if field.not_visible.is_some() {
                check_display_name(sample).is_ok()
            } else {
                check_description(sample).is_ok()
            };
            assert_eq!(accepted, expected, "{sample:?} at {}", field.pointer);
        }
    }
}
