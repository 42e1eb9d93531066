//! Keeps `docs/spec.md` and the traceability table of `docs/README.md`
//! complete: every rule label used anywhere in the repository has a heading
//! in the spec, every invariant has a row, and every property, mutant, file
//! and test the table names exists.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative))
        .unwrap_or_else(|e| panic!("cannot read {relative}: {e}"))
}

const PREFIXES: [&str; 6] = ["INV", "ID", "R", "H", "M", "P"];

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// Every rule label in `text`: `\b(ID|R|H|M|P|INV)-[0-9]+\b`.
fn labels(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (i, _) in text.match_indices('-') {
        let digits = bytes[i + 1..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 || bytes.get(i + 1 + digits).is_some_and(|&b| is_word(b)) {
            continue;
        }
        for prefix in PREFIXES {
            let start = match i.checked_sub(prefix.len()) {
                Some(s) => s,
                None => continue,
            };
            if &text[start..i] == prefix && (start == 0 || !is_word(bytes[start - 1])) {
                found.push(format!("{prefix}-{}", &text[i + 1..i + 1 + digits]));
                break;
            }
        }
    }
    found
}

#[test]
fn the_label_matcher_finds_labels_only_at_word_boundaries() {
    assert_eq!(
        labels("H-4, INV-10 and (ID-1); not XH-4, H-4a, H-, R-2x or P-"),
        ["H-4", "INV-10", "ID-1"]
    );
}

/// The labels that head a section of `docs/spec.md` (`### H-4 Activation`).
fn spec_headings() -> BTreeSet<String> {
    read("docs/spec.md")
        .lines()
        .filter(|l| l.starts_with('#'))
        .filter_map(|l| {
            let text = l.trim_start_matches('#').trim_start();
            let first = text.split_whitespace().next()?;
            let label = labels(first).into_iter().next()?;
            (label == first).then_some(label)
        })
        .collect()
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name == "target" || name == "node_modules" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            walk(&path, out);
        } else if name.ends_with(".rs") || name.ends_with(".md") {
            out.push(path);
        }
    }
}

#[test]
fn every_rule_label_in_the_repository_has_a_heading_in_the_spec() {
    let headings = spec_headings();
    for expected in ["ID-1", "R-11", "H-13", "M-8", "P-4", "INV-12"] {
        assert!(
            headings.contains(expected),
            "docs/spec.md has no {expected} heading"
        );
    }
    let mut files = vec![root().join("README.md")];
    for dir in [
        "src",
        "core",
        "model",
        "tests",
        "docs",
        "proptests",
        "loom-tests",
        "benches",
        "examples",
        "cli",
    ] {
        walk(&root().join(dir), &mut files);
    }
    assert!(files.len() > 20, "the walk found the sources");
    let mut missing = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for label in labels(&text) {
            if !headings.contains(&label) {
                missing.push(format!("{label} in {}", file.display()));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "labels without a heading in docs/spec.md:\n{}",
        missing.join("\n")
    );
}

/// The rows of the traceability table: `(invariant, [properties, mutants,
/// tests])`, each cell as its backticked names.
fn table() -> Vec<(String, Vec<Vec<String>>, bool)> {
    let readme = read("docs/README.md");
    let section = readme
        .split("## Traceability")
        .nth(1)
        .expect("docs/README.md has a Traceability section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| l.starts_with("| INV-"))
        .map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split('|').collect();
            assert_eq!(cells.len(), 4, "a row has four cells: {l}");
            let names = |cell: &str| -> Vec<String> {
                cell.split('`')
                    .skip(1)
                    .step_by(2)
                    .map(str::to_owned)
                    .collect()
            };
            (
                cells[0].trim().to_owned(),
                cells[1..].iter().map(|c| names(c)).collect(),
                cells[1].trim() == "planned",
            )
        })
        .collect()
}

#[test]
fn every_invariant_of_the_spec_has_a_row_and_every_built_one_is_traced() {
    let invariants: BTreeSet<String> = spec_headings()
        .into_iter()
        .filter(|l| l.starts_with("INV-"))
        .collect();
    let rows = table();
    let traced: BTreeSet<String> = rows.iter().map(|(inv, _, _)| inv.clone()).collect();
    assert_eq!(invariants, traced, "spec invariants versus table rows");
    for (inv, cells, planned) in &rows {
        if !planned {
            assert!(!cells[0].is_empty(), "{inv} names no property");
            assert!(!cells[2].is_empty(), "{inv} names no test");
        }
    }
}

#[test]
fn every_property_mutant_file_and_test_the_table_names_exists() {
    let properties = read("model/src/properties.rs");
    let mutants = read("model/src/mutants.rs");
    let machine = read("core/src/mutant.rs");
    for (inv, cells, _) in table() {
        for property in &cells[0] {
            assert!(
                properties.contains(&format!("\"{property}\"")),
                "{inv}: no property {property:?} in model/src/properties.rs"
            );
        }
        for mutant in &cells[1] {
            assert!(
                mutants.contains(&format!("name: \"{mutant}\"")),
                "{inv}: no mutant {mutant} in model/src/mutants.rs"
            );
            assert!(
                machine.contains(&format!("    {mutant},")),
                "{inv}: no Mutant::{mutant} in core/src/mutant.rs"
            );
        }
        for test in &cells[2] {
            let (file, function) = test
                .split_once("::")
                .unwrap_or_else(|| panic!("{inv}: {test} is not file::function"));
            let text = std::fs::read_to_string(root().join(file))
                .unwrap_or_else(|e| panic!("{inv}: cannot read {file}: {e}"));
            assert!(
                text.contains(&format!("fn {function}(")),
                "{inv}: {file} has no test function {function}"
            );
        }
    }
}

/// The rows of the "Decided in" table of `docs/README.md`: `(rule, file)`.
fn decided_in() -> Vec<(String, String)> {
    let readme = read("docs/README.md");
    let section = readme
        .split("\n## Decided in")
        .nth(1)
        .expect("docs/README.md has a Decided in section");
    let section = section.split("\n## ").next().unwrap();
    section
        .lines()
        .filter(|l| ["| H-", "| M-", "| INV-"].iter().any(|p| l.starts_with(p)))
        .map(|l| {
            let cells: Vec<&str> = l.trim().trim_matches('|').split('|').collect();
            assert_eq!(cells.len(), 3, "a row has three cells: {l}");
            let files: Vec<&str> = cells[1].split('`').skip(1).step_by(2).collect();
            assert_eq!(files.len(), 1, "a row names one file: {l}");
            (cells[0].trim().to_owned(), files[0].to_owned())
        })
        .collect()
}

#[test]
fn every_h_m_and_inv_rule_is_decided_in_one_file_that_names_it() {
    let expected: BTreeSet<String> = spec_headings()
        .into_iter()
        .filter(|l| l.starts_with("H-") || l.starts_with("M-") || l.starts_with("INV-"))
        .collect();
    assert!(expected.len() >= 30, "{expected:?}");
    let rows = decided_in();
    let mut seen = BTreeSet::new();
    for (rule, file) in &rows {
        assert!(seen.insert(rule.clone()), "{rule} has two rows");
        let text = std::fs::read_to_string(root().join(file))
            .unwrap_or_else(|e| panic!("{rule}: cannot read {file}: {e}"));
        assert!(
            labels(&text).contains(rule),
            "{rule}: {file} does not name {rule}"
        );
    }
    assert_eq!(seen, expected, "spec rules versus Decided in rows");
}
