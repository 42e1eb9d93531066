//! A `tracing` subscriber that keeps what it sees, for tests: the names of
//! the spans entered (with their fields) and every event's fields, as text.

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Metadata, Subscriber};

#[derive(Default, Clone)]
pub struct Captured {
    spans: Arc<Mutex<Vec<String>>>,
    events: Arc<Mutex<Vec<String>>>,
}

struct Text<'a>(&'a mut String);

impl Visit for Text<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.push_str(&format!("{}={value:?} ", field.name()));
    }
}

impl Captured {
    /// Each span as `name field=value ...`, in creation order.
    pub fn spans(&self) -> Vec<String> {
        self.spans.lock().unwrap().clone()
    }
    /// Each event as `level field=value ...`, in order.
    pub fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }
}

impl Subscriber for Captured {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut text = format!("{} ", span.metadata().name());
        span.record(&mut Text(&mut text));
        let mut spans = self.spans.lock().unwrap();
        spans.push(text);
        Id::from_u64(spans.len() as u64)
    }
    fn record(&self, _: &Id, _: &Record<'_>) {}
    fn record_follows_from(&self, _: &Id, _: &Id) {}
    fn event(&self, event: &Event<'_>) {
        let mut text = format!("{} ", event.metadata().level());
        event.record(&mut Text(&mut text));
        self.events.lock().unwrap().push(text);
    }
    fn enter(&self, _: &Id) {}
    fn exit(&self, _: &Id) {}
}
