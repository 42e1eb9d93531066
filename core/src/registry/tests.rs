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
        .insert(&spec("alpha"), Owner::extension("x"), Binding::Dormant)
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

#[test]
fn replace_is_remove_then_insert_keeping_the_api_name() {
    let ext = Owner::extension("x");
    let live = |n| Binding::Live(crate::ids::ToolRef(n));
    let mut r = ToolRegistry::new();
    // `a.b` takes `a_b`, so `a_b` gets `a_b_2`: replacing either must keep
    // its own, though the base of `a_b` is `a_b`.
    for (i, n) in ["a.b", "mid", "a_b"].into_iter().enumerate() {
        r.insert(&spec(n), ext.clone(), live(i as u64)).unwrap();
    }
    let mut expected = r.clone();
    let fresh = ToolSpec::new("a_b", "new", "1");
    let removed = expected.remove("a_b").map(|e| e.api_name);
    expected
        .insert_keeping(&fresh, ext.clone(), live(9), removed)
        .unwrap();
    let removed = expected.remove("a.b").map(|e| e.api_name);
    expected
        .insert_keeping(&spec("a.b"), ext.clone(), live(8), removed)
        .unwrap();
    assert_eq!(r.replace(&fresh, &ext, live(2), live(9)), Ok(true));
    assert_eq!(r.replace(&spec("a.b"), &ext, live(0), live(8)), Ok(true));
    assert_eq!(r, expected);
    assert_eq!(r.names(), ["mid", "a_b", "a.b"]);
    assert_eq!(r.get("a_b").unwrap().api_name, "a_b_2");
    assert_eq!(r.get("a_b").unwrap().description, "new");
    assert_eq!(r.api_name_count(), r.len());
}

#[test]
fn replace_changes_nothing_unless_the_owner_holds_the_name_so_bound() {
    let ext = Owner::extension("x");
    let live = |n| Binding::Live(crate::ids::ToolRef(n));
    let mut r = ToolRegistry::new();
    r.insert(&spec("t"), ext.clone(), live(1)).unwrap();
    let before = r.clone();
    // Another handle, another owner, an absent name: nothing changes.
    assert_eq!(r.replace(&spec("t"), &ext, live(2), live(3)), Ok(false));
    assert_eq!(
        r.replace(&spec("t"), &Owner::Base, live(1), live(3)),
        Ok(false)
    );
    assert_eq!(r.replace(&spec("u"), &ext, live(1), live(3)), Ok(false));
    // A refused spec is refused as an insert refuses it, before anything.
    let bad = ToolSpec::new("t", "a\u{202e}b", "0");
    assert_eq!(
        r.replace(&bad, &ext, live(1), live(3)).unwrap_err().code(),
        "TOOL_DESCRIPTION_INVALID"
    );
    assert_eq!(r, before);
}
