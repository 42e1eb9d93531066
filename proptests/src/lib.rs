//! Property-based test suites for exthost live in `tests/`; this library is
//! empty on purpose so the suites build as ordinary integration tests.
#![forbid(unsafe_code)]
