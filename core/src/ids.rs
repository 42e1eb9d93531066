//! Handles the core gives out. The core never holds closures or futures; the
//! shell keeps them in tables keyed by these ids.
//!
//! Architecture invariant: this module depends on nothing; every other
//! module of the core may use it.

macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
        #[cfg_attr(feature = "serde-state", derive(serde::Deserialize))]
        pub struct $name(pub u64);

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}#{}", stringify!($name), self.0)
            }
        }
    };
}

handle!(
    /// One queued operation (activate, emit, dispose).
    OpId
);
handle!(
    /// One activation attempt: its context and its instance.
    ContextId
);
handle!(
    /// One registered tool handler.
    ToolRef
);
handle!(
    /// One registered event hook.
    HookRef
);
handle!(
    /// One registered disposer.
    DisposerRef
);
handle!(
    /// One tool call in flight (INV-12).
    CallId
);

/// The counter behind every handle: strictly increasing, never reused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde-state", derive(serde::Serialize, serde::Deserialize))]
pub(crate) struct Counters {
    pub op: u64,
    pub context: u64,
    pub tool: u64,
    pub hook: u64,
    pub disposer: u64,
    pub call: u64,
}

impl Counters {
    pub fn op(&mut self) -> OpId {
        self.op += 1;
        OpId(self.op)
    }
    pub fn context(&mut self) -> ContextId {
        self.context += 1;
        ContextId(self.context)
    }
    pub fn tool(&mut self) -> ToolRef {
        self.tool += 1;
        ToolRef(self.tool)
    }
    pub fn hook(&mut self) -> HookRef {
        self.hook += 1;
        HookRef(self.hook)
    }
    pub fn disposer(&mut self) -> DisposerRef {
        self.disposer += 1;
        DisposerRef(self.disposer)
    }
    pub fn call(&mut self) -> CallId {
        self.call += 1;
        CallId(self.call)
    }
}
