//! Every `exthost-model` command README.md quotes exists: each subcommand
//! and flag, in a code block (`cargo run --release -p exthost-model --
//! mutants --whole`) or in the prose (`exthost-model plan`, `check --full`,
//! `--seed`), is held against this crate's binary. The reader of the
//! README is shared with `cli/tests/readme.rs`, which holds the `exthost`
//! quotes; `default_check.rs` holds the figures the README quotes.

#[path = "../../cli/tests/readme_quotes/mod.rs"]
mod readme_quotes;

use readme_quotes::{Program, problems, quotes, readme};

const MODEL: &str = env!("CARGO_BIN_EXE_exthost-model");

#[test]
fn every_exthost_model_command_the_readme_quotes_exists() {
    let quotes = quotes(&readme());
    let ours: Vec<&str> = quotes
        .iter()
        .filter(|q| q.program == Program::Model)
        .map(|q| q.text.as_str())
        .collect();
    for expected in [
        "-- mutants --whole",
        "exthost-model plan",
        "check --full",
        "--seed",
    ] {
        assert!(
            ours.iter().any(|q| q.contains(expected)),
            "the reader finds `{expected}` among {ours:#?}"
        );
    }
    let problems = problems(&quotes, Program::Model, MODEL);
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn a_quoted_flag_the_model_does_not_take_is_a_problem() {
    let text = "```sh\ncargo run --release -p exthost-model -- mutants --no-such-flag\n```\n\
                Then `check --nor-this` and `--seed`.\n";
    let problems = problems(&quotes(text), Program::Model, MODEL);
    assert_eq!(problems.len(), 2, "{problems:#?}");
    assert!(problems[0].contains("--no-such-flag"), "{problems:#?}");
    assert!(problems[1].contains("--nor-this"), "{problems:#?}");
}
