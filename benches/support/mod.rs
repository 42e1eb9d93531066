//! Code shared by the benches (and, by path, `examples/fixed_costs.rs`).

pub mod direct_hooks;
