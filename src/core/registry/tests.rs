//! Unit tests of the tool registry.

use super::*;

fn spec(name: &str) -> ToolSpec {
    ToolSpec::new(name, "d", "0")
}

#[test]
fn keeps_publication_order_and_refuses_duplicates() {
    let mut r = ToolRegistry::new();
    for n in ["zeta", "alpha", "mid"] {
        r.insert(&spec(n), Owner::Base, Binding::Dormant).unwrap();
    }
    assert_eq!(r.names(), ["zeta", "alpha", "mid"]);
    let err = r
        .insert(
            &spec("alpha"),
            Owner::Extension("x".into()),
            Binding::Dormant,
        )
        .unwrap_err();
    assert_eq!(err.code(), "TOOL_DUPLICATE");
    assert_eq!(r.len(), 3);
}

#[test]
fn refuses_invalid_names_with_tool_name_invalid() {
    let mut r = ToolRegistry::new();
    for bad in ["", "a b", "a:b:c", ":x", "x:", ".x", "ext:.t"] {
        let err = r
            .insert(&spec(bad), Owner::Base, Binding::Dormant)
            .unwrap_err();
        assert_eq!(err.code(), "TOOL_NAME_INVALID", "{bad:?}");
    }
    assert!(r.is_empty());
    r.insert(&spec("ext:tool"), Owner::Base, Binding::Dormant)
        .unwrap();
}

#[test]
fn api_names_map_separators_and_suffix_collisions_in_order() {
    let mut r = ToolRegistry::new();
    for n in ["a:b", "a.b", "a_b", "a_b_2"] {
        r.insert(&spec(n), Owner::Base, Binding::Dormant).unwrap();
    }
    let apis: Vec<_> = r.iter().map(|e| e.api_name.clone()).collect();
    assert_eq!(apis, ["a_b", "a_b_2", "a_b_3", "a_b_2_2"]);
    for api in &apis {
        assert!(is_api_name(api));
        assert_eq!(&r.get_by_api_name(api).unwrap().api_name, api);
    }
    // Removing frees the name; the others keep theirs.
    r.remove("a:b").unwrap();
    assert_eq!(r.get("a.b").unwrap().api_name, "a_b_2");
    r.insert(&spec("a-b:x"), Owner::Base, Binding::Dormant)
        .unwrap();
    assert_eq!(r.get("a-b:x").unwrap().api_name, "a-b_x");
}

#[test]
fn long_names_shorten_deterministically_within_64_bytes() {
    let long = format!("{}:{}", "e".repeat(64), "t".repeat(64));
    let a = api_name_base(&long);
    assert_eq!(a, api_name_base(&long));
    assert_eq!(a.len(), 64);
    assert!(is_api_name(&a));
    let other = format!("{}:{}", "e".repeat(64), "u".repeat(64));
    assert_ne!(a, api_name_base(&other));
    let mut r = ToolRegistry::new();
    r.insert(&spec(&long), Owner::Base, Binding::Dormant)
        .unwrap();
    assert!(is_api_name(&r.get(&long).unwrap().api_name));
}

#[test]
fn a_clone_is_a_detached_snapshot() {
    let mut r = ToolRegistry::new();
    r.insert(&spec("one"), Owner::Base, Binding::Dormant)
        .unwrap();
    let snapshot = r.clone();
    r.insert(&spec("two"), Owner::Base, Binding::Dormant)
        .unwrap();
    r.remove("one");
    assert_eq!(snapshot.names(), ["one"]);
    assert_eq!(r.names(), ["two"]);
}
