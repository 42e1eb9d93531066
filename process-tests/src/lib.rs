//! Tests of process extensions (SPEC section 5) against real children; see
//! `tests/` and the fixture server `src/bin/mcp-fixture.rs`.
#![forbid(unsafe_code)]
