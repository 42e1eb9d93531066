//! The client capabilities every process extension is offered, by `serve`,
//! `lock` and `call` alike: sampling, roots with `listChanged`, and
//! elicitation in form and URL mode. One set for all three, so what a
//! server lists under `serve` is what `lock` pinned, whatever the client
//! in front of `serve` declares (`serve::capabilities` forwards a
//! backend's request only when the client declared its capability).

use exthost::process::ClientBridge;
use serde_json::{Value, json};

/// The client capabilities every backend is offered.
pub(crate) fn offered() -> Value {
    json!({
        "sampling": {},
        "roots": {"listChanged": true},
        "elicitation": {"form": {}, "url": {}}
    })
}

/// A bridge offering [`offered`], connected to no client yet.
pub(crate) fn bridge() -> ClientBridge {
    ClientBridge::new(offered())
}
