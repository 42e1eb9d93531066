//! The resource loader against its bounds, on the same files:
//!
//! * `std_read_to_string`: `std::fs::read_to_string` on the absolute path,
//!   the unconfined lower bound;
//! * `cap_std_read_to_string`: `cap_std::fs::Dir::read_to_string` beneath an
//!   open root, the confined peer (no root identity, no type or post-read
//!   checks, no cap);
//! * `exthost_load_text`: `ResourceLoader::load_text`.
//!
//! Sizes 1 KiB, 4 KiB, 64 KiB and 1 MiB, then a fall-through across 8 roots
//! where only the last holds a 4 KiB file.
//!
//! ```sh
//! cargo bench --bench resources -- --warm-up-time 1 --measurement-time 3
//! ```

use std::hint::black_box;
use std::path::PathBuf;

use cap_std::ambient_authority;
use cap_std::fs::Dir;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use exthost::{ResourceLoader, ResourceRoot};

/// `len` bytes of ASCII text in lines, like a prompt or a config file.
fn text(len: usize) -> String {
    let line = "The quick brown fox jumps over the lazy dog; resources are plain text.\n";
    line.repeat(len / line.len() + 1)[..len].to_owned()
}

fn label(len: usize) -> String {
    if len >= 1 << 20 {
        format!("{}MiB", len >> 20)
    } else {
        format!("{}KiB", len >> 10)
    }
}

fn sizes(c: &mut Criterion) {
    let temp = tempfile::tempdir().expect("tempdir");
    let root = std::fs::canonicalize(temp.path()).expect("canonical tempdir");
    let loader = ResourceLoader::create([ResourceRoot::new("root", &root)]).expect("loader");
    let dir = Dir::open_ambient_dir(&root, ambient_authority()).expect("dir");

    let mut group = c.benchmark_group("read");
    for len in [1 << 10, 4 << 10, 64 << 10, 1 << 20] {
        let name = format!("file-{len}.txt");
        std::fs::write(root.join(&name), text(len)).expect("write");
        let absolute = root.join(&name);
        let size = label(len);
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(
            BenchmarkId::new("std_read_to_string", &size),
            &absolute,
            |b, path| b.iter(|| std::fs::read_to_string(black_box(path)).expect("std read")),
        );
        group.bench_with_input(
            BenchmarkId::new("cap_std_read_to_string", &size),
            &name,
            |b, name| b.iter(|| dir.read_to_string(black_box(name)).expect("cap-std read")),
        );
        group.bench_with_input(
            BenchmarkId::new("exthost_load_text", &size),
            &name,
            |b, name| {
                b.iter(|| {
                    loader
                        .load_text(black_box(name))
                        .expect("load")
                        .expect("found")
                })
            },
        );
    }
    group.finish();
}

/// Reads `name` from the first of `dirs` that has it, the std way.
fn std_first(dirs: &[PathBuf], name: &str) -> String {
    for dir in dirs {
        match std::fs::read_to_string(dir.join(name)) {
            Ok(text) => return text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => panic!("{error}"),
        }
    }
    panic!("not found")
}

/// The same over cap-std directory handles.
fn cap_std_first(dirs: &[Dir], name: &str) -> String {
    for dir in dirs {
        match dir.read_to_string(name) {
            Ok(text) => return text,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => panic!("{error}"),
        }
    }
    panic!("not found")
}

fn fall_through(c: &mut Criterion) {
    let temp = tempfile::tempdir().expect("tempdir");
    let base = std::fs::canonicalize(temp.path()).expect("canonical tempdir");
    let dirs: Vec<PathBuf> = (0..8).map(|i| base.join(format!("root{i}"))).collect();
    for dir in &dirs {
        std::fs::create_dir(dir).expect("mkdir");
        // Each root has the parent directory, so the miss is on the file.
        std::fs::create_dir(dir.join("prompts")).expect("mkdir");
    }
    let name = "prompts/system.md";
    std::fs::write(dirs[7].join(name), text(4 << 10)).expect("write");
    let loader = ResourceLoader::create(
        dirs.iter()
            .enumerate()
            .map(|(i, dir)| ResourceRoot::new(format!("root{i}"), dir)),
    )
    .expect("loader");
    let handles: Vec<Dir> = dirs
        .iter()
        .map(|dir| Dir::open_ambient_dir(dir, ambient_authority()).expect("dir"))
        .collect();
    assert_eq!(loader.load_text(name).unwrap().unwrap().root_id, "root7");

    let mut group = c.benchmark_group("fall_through_8_roots");
    group.bench_function("std_read_to_string", |b| {
        b.iter(|| std_first(black_box(&dirs), black_box(name)))
    });
    group.bench_function("cap_std_read_to_string", |b| {
        b.iter(|| cap_std_first(black_box(&handles), black_box(name)))
    });
    group.bench_function("exthost_load_text", |b| {
        b.iter(|| {
            loader
                .load_text(black_box(name))
                .expect("load")
                .expect("found")
        })
    });
    group.finish();
}

criterion_group!(benches, sizes, fall_through);
criterion_main!(benches);
