//! The prompts, resources and resource templates a process extension's
//! server lists, pinned in its manifest (`deferred.prompts`,
//! `deferred.resources`, `deferred.resourceTemplates`) by `exthost lock`
//! (P-5), and the match of a live listing against them (M-5).
//!
//! Each entry is kept whole, as the server listed it (an MCP JSON object),
//! and is known by its key: a prompt by its `name`, a resource by its
//! `uri`, a template by its `uriTemplate`. A list the manifest holds is
//! pinned: at activation the server's listing must equal it, entry for
//! entry (canonical JSON, in any order), or the activation fails closed
//! with the list's reason code. A list the manifest does not hold is not
//! pinned and not checked.

use serde_json::Value;

/// The most entries of one pinned list (M-1).
pub const MAX_DECLARED_LISTED: usize = 256;

/// Which pinned list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListingKind {
    /// `deferred.prompts`, from `prompts/list`.
    Prompts,
    /// `deferred.resources`, from `resources/list`.
    Resources,
    /// `deferred.resourceTemplates`, from `resources/templates/list`.
    ResourceTemplates,
}

/// Every activation reason code of a listing that differs from its pinned
/// list, in the order of [`ListingKind::ALL`].
pub const LISTING_MISMATCH_REASON_CODES: &[&str] = &[
    "registered_prompts_mismatch",
    "registered_resources_mismatch",
    "registered_resource_templates_mismatch",
];

impl ListingKind {
    /// Every kind, in check order.
    pub const ALL: [ListingKind; 3] = [
        ListingKind::Prompts,
        ListingKind::Resources,
        ListingKind::ResourceTemplates,
    ];

    /// The key of the list in `deferred`.
    pub const fn key(self) -> &'static str {
        match self {
            ListingKind::Prompts => "prompts",
            ListingKind::Resources => "resources",
            ListingKind::ResourceTemplates => "resourceTemplates",
        }
    }

    /// The field that identifies an entry (`name`, `uri`, `uriTemplate`).
    pub const fn id_field(self) -> &'static str {
        match self {
            ListingKind::Prompts => "name",
            ListingKind::Resources => "uri",
            ListingKind::ResourceTemplates => "uriTemplate",
        }
    }

    /// An entry in words (`prompt`, `resource`, `resource template`).
    pub const fn noun(self) -> &'static str {
        match self {
            ListingKind::Prompts => "prompt",
            ListingKind::Resources => "resource",
            ListingKind::ResourceTemplates => "resource template",
        }
    }

    /// The activation reason code when a listing differs from its pinned
    /// list.
    pub const fn mismatch_code(self) -> &'static str {
        match self {
            ListingKind::Prompts => LISTING_MISMATCH_REASON_CODES[0],
            ListingKind::Resources => LISTING_MISMATCH_REASON_CODES[1],
            ListingKind::ResourceTemplates => LISTING_MISMATCH_REASON_CODES[2],
        }
    }

    /// The key of `entry` (its `name`, `uri` or `uriTemplate`), if it has
    /// one.
    pub fn id_of(self, entry: &Value) -> Option<&str> {
        entry.get(self.id_field()).and_then(Value::as_str)
    }
}

/// The pinned lists of a manifest; `None` where a list is not pinned.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub(crate) struct DeclaredListings {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) prompts: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) resources: Option<Vec<Value>>,
    #[serde(rename = "resourceTemplates", skip_serializing_if = "Option::is_none")]
    pub(crate) resource_templates: Option<Vec<Value>>,
}

impl DeclaredListings {
    pub(crate) fn is_empty(&self) -> bool {
        self.prompts.is_none() && self.resources.is_none() && self.resource_templates.is_none()
    }

    pub(crate) fn get(&self, kind: ListingKind) -> Option<&[Value]> {
        match kind {
            ListingKind::Prompts => self.prompts.as_deref(),
            ListingKind::Resources => self.resources.as_deref(),
            ListingKind::ResourceTemplates => self.resource_templates.as_deref(),
        }
    }

    pub(crate) fn set(&mut self, kind: ListingKind, entries: Vec<Value>) {
        let slot = match kind {
            ListingKind::Prompts => &mut self.prompts,
            ListingKind::Resources => &mut self.resources,
            ListingKind::ResourceTemplates => &mut self.resource_templates,
        };
        *slot = Some(entries);
    }
}

impl super::Manifest {
    /// The pinned list of `kind` (`deferred.prompts`, `deferred.resources`
    /// or `deferred.resourceTemplates`), or `None` when it is not pinned.
    pub fn declared_listing(&self, kind: ListingKind) -> Option<&[Value]> {
        self.deferred.listings.get(kind)
    }

    /// Whether `deferred.completions` pins that the server offers argument
    /// completion of its prompts and resource templates
    /// (`completion/complete`).
    pub fn declares_completions(&self) -> bool {
        self.deferred.completions
    }
}

/// A live listing that differs from its pinned list (M-5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListingMismatch {
    kind: ListingKind,
    item: String,
    message: String,
}

impl ListingMismatch {
    /// Which list.
    pub fn kind(&self) -> ListingKind {
        self.kind
    }

    /// The stable reason code ([`ListingKind::mismatch_code`]).
    pub fn reason_code(&self) -> &'static str {
        self.kind.mismatch_code()
    }

    /// The key of the first entry that differs (a prompt name, a URI or a
    /// URI template).
    pub fn item(&self) -> &str {
        &self.item
    }

    /// What differs, in words.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for ListingMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.reason_code(), self.message)
    }
}

impl std::error::Error for ListingMismatch {}

/// Checks a live listing against its pinned list: the same keys, each
/// entry equal as canonical JSON (key order and entry order never matter).
/// The first difference is returned: a live entry not pinned, then a
/// pinned entry not listed, then a pinned entry that changed.
pub fn match_listing(
    kind: ListingKind,
    declared: &[Value],
    live: &[Value],
) -> Result<(), ListingMismatch> {
    let key = |entry: &Value| kind.id_of(entry).unwrap_or_default().to_owned();
    let find = |list: &[Value], id: &str| list.iter().find(|e| kind.id_of(e) == Some(id)).cloned();
    let mismatch = |item: String, what: &str| ListingMismatch {
        kind,
        message: format!(
            "the {} {} {what}; review the change, then run `exthost lock` to accept it",
            kind.noun(),
            crate::text::quote(&item)
        ),
        item,
    };
    for entry in live {
        let id = key(entry);
        if find(declared, &id).is_none() {
            return Err(mismatch(id, "is listed by the server but not pinned"));
        }
    }
    for entry in declared {
        let id = key(entry);
        match find(live, &id) {
            None => return Err(mismatch(id, "is pinned but the server no longer lists it")),
            Some(l) if super::canonical_json(&l) != super::canonical_json(entry) => {
                return Err(mismatch(id, "differs from its pinned entry"));
            }
            Some(_) => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_listing_matches_in_any_order_and_each_difference_has_its_code() {
        let a = json!({"name": "a", "description": "A"});
        let b = json!({"name": "b"});
        let pinned = [a.clone(), b.clone()];
        assert_eq!(
            match_listing(ListingKind::Prompts, &pinned, &[b.clone(), a.clone()]),
            Ok(())
        );
        let added =
            match_listing(ListingKind::Prompts, std::slice::from_ref(&a), &pinned).unwrap_err();
        assert_eq!(added.reason_code(), "registered_prompts_mismatch");
        assert_eq!(added.item(), "b");
        let gone = match_listing(ListingKind::Prompts, &pinned, &[a]).unwrap_err();
        assert!(gone.message().contains("no longer lists"), "{gone}");
        let reworded = json!({"uri": "x://1", "name": "one", "description": "new"});
        let changed = match_listing(
            ListingKind::Resources,
            &[json!({"uri": "x://1", "name": "one"})],
            &[reworded],
        )
        .unwrap_err();
        assert_eq!(changed.reason_code(), "registered_resources_mismatch");
        assert_eq!(changed.item(), "x://1");
        for (kind, code) in ListingKind::ALL.iter().zip(LISTING_MISMATCH_REASON_CODES) {
            assert_eq!(kind.mismatch_code(), *code);
        }
    }

    #[test]
    fn completions_are_pinned_by_a_boolean_and_absent_means_not_offered() {
        let manifest = |deferred: serde_json::Value| {
            crate::manifest::Manifest::from_value(json!({
                "id": "e",
                "runtime": {"kind": "process", "command": "node"},
                "deferred": deferred
            }))
        };
        let (pinned, _) = manifest(json!({"completions": true})).unwrap();
        assert!(pinned.declares_completions());
        let (absent, _) = manifest(json!({})).unwrap();
        assert!(!absent.declares_completions());
        let refused = manifest(json!({"completions": {}})).unwrap_err();
        assert_eq!(refused.reason_code(), "invalid_field_type");
        assert_eq!(refused.pointer(), "/deferred/completions");
    }
}
