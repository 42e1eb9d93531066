//! The default bounds are the main job's contract: the `bounds` object that
//! `check --json` prints must not change when the model gets faster
//! (issue 10: a reduction may only remove states, never bounds). Issue 11
//! added three inputs, off in these bounds (`reloads`, `dependency`,
//! `providers`); since issue 24 the default check explores them together
//! with these bounds in one search (`Bounds::full`, pinned below).

use exthost_model::Bounds;

#[test]
fn the_default_bounds_are_pinned() {
    let json = serde_json::to_value(Bounds::default()).expect("bounds serialize");
    let pinned = serde_json::json!({
        "calls": 1,
        "cleanup_failures": 2,
        "deadlines": 1,
        "disposers": 2,
        "extensions": 3,
        "hangs": 1,
        "hooks": 1,
        "late": true,
        "losses": 1,
        "manifest": true,
        "ops": 3,
        "refused": 2,
        "reloads": 0,
        "dependency": false,
        "providers": false,
        "tool_names": ["x", "m_x"],
        "tools": 2,
        "withdraws": 1
    });
    assert_eq!(json, pinned);
    // Byte for byte, as `check --json` prints it.
    assert_eq!(
        serde_json::to_string(&Bounds::default()).expect("bounds serialize"),
        r#"{"extensions":3,"manifest":true,"tools":2,"hooks":1,"disposers":2,"ops":3,"withdraws":1,"late":true,"hangs":1,"refused":2,"cleanup_failures":2,"tool_names":["x","m_x"],"calls":1,"deadlines":1,"losses":1,"reloads":0,"dependency":false,"providers":false}"#
    );
}

#[test]
fn the_ci_bounds_are_pinned() {
    let json = serde_json::to_value(Bounds::ci()).expect("bounds serialize");
    let mut expected = serde_json::to_value(Bounds::default()).expect("bounds serialize");
    expected["hooks"] = 2.into();
    expected["ops"] = 2.into();
    assert_eq!(json, expected);
}

/// The default check's one search (issue 24): the default bounds as they
/// are, with one reload, the dependency, providers, the cycle batch and
/// the tool pool `m_x`, `m.x` (suffixed API names, a three-way collision).
#[test]
fn the_default_check_explores_the_default_bounds_with_every_input() {
    let json = serde_json::to_value(Bounds::full()).expect("bounds serialize");
    let mut expected = serde_json::to_value(Bounds::default()).expect("bounds serialize");
    expected["reloads"] = 1.into();
    expected["dependency"] = true.into();
    expected["providers"] = true.into();
    expected["refused"] = 3.into();
    expected["tool_names"] = serde_json::json!(["m_x", "m.x"]);
    assert_eq!(json, expected);
}
