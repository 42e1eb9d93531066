//! the capped read and the strict decode.

use std::fs::File;
use std::io;

use rustix::buffer::spare_capacity;
use rustix::io::Errno;

/// Reads `file` to its end or until `limit` bytes are buffered, whichever
/// comes first.
///
/// The buffer starts at `size_hint + 1` bytes (the extra byte lets the read
/// see the end of the file without growing), never at more than `limit`. It
/// only grows, up to `limit`, when the file turns out longer than its size
/// hint (it grew during the read). Each `read` fills the spare capacity
/// directly (rustix's `spare_capacity`: no zeroing, no copy), so a file
/// that matches its size hint takes exactly two `read` calls, the second
/// one seeing the end. At most `limit` bytes are ever read or allocated,
/// whatever the file does. The caller passes `cap + 1` and refuses a result
/// longer than `cap`.
pub(crate) fn read_capped(file: &File, size_hint: u64, limit: usize) -> io::Result<Vec<u8>> {
    debug_assert!(limit > 0);
    let hinted = usize::try_from(size_hint)
        .unwrap_or(usize::MAX)
        .min(limit - 1)
        + 1;
    // `Vec::with_capacity` allocates exactly the requested capacity.
    let mut buffer = Vec::with_capacity(hinted);
    loop {
        if buffer.len() == buffer.capacity() {
            if buffer.len() >= limit {
                return Ok(buffer);
            }
            // Longer than its size said: grow by doubling, never past the
            // limit. A fresh exact allocation keeps the capacity exact.
            let grown = buffer.len().saturating_mul(2).max(8192).min(limit);
            let mut larger = Vec::with_capacity(grown);
            larger.extend_from_slice(&buffer);
            buffer = larger;
        }
        match rustix::io::read(file, spare_capacity(&mut buffer)) {
            Ok(0) => return Ok(buffer),
            Ok(_) => {}
            Err(Errno::INTR) => {}
            Err(errno) => return Err(errno.into()),
        }
    }
}

/// A failed decode: where the first invalid sequence starts, and its length
/// (`None` when the input ends inside a character).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Utf8Failure {
    pub(crate) valid_up_to: usize,
    pub(crate) error_len: Option<usize>,
}

/// Decodes strict UTF-8 the way the WHATWG "UTF-8 decode" algorithm does,
/// but fatally: one leading byte-order mark is removed, any invalid sequence
/// is an error, nothing is replaced.
pub(crate) fn decode(bytes: Vec<u8>) -> Result<String, Utf8Failure> {
    match String::from_utf8(bytes) {
        Ok(mut text) => {
            if text.starts_with('\u{FEFF}') {
                text.drain(..'\u{FEFF}'.len_utf8());
            }
            Ok(text)
        }
        Err(error) => {
            let error = error.utf8_error();
            Err(Utf8Failure {
                valid_up_to: error.valid_up_to(),
                error_len: error.error_len(),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Seek, Write};

    fn file_with(bytes: &[u8]) -> File {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(bytes).unwrap();
        file.rewind().unwrap();
        file
    }

    #[test]
    fn reads_whole_files_up_to_the_limit() {
        for len in [0usize, 1, 31, 32, 33, 4095, 4096, 8193, 100_000] {
            let data: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            let read = read_capped(&file_with(&data), len as u64, 200_001).unwrap();
            assert_eq!(read, data, "len {len}");
            assert!(read.capacity() <= 200_001);
        }
    }

    #[test]
    fn stops_at_the_limit_and_never_allocates_past_it() {
        let data = vec![b'x'; 70_000];
        let read = read_capped(&file_with(&data), 70_000, 50_001).unwrap();
        assert_eq!(read.len(), 50_001);
        assert!(read.capacity() <= 50_001);
    }

    #[test]
    fn a_short_size_hint_grows_the_buffer_but_not_past_the_limit() {
        // The file is longer than the hint says, as when it grows during the
        // read.
        let data = vec![b'y'; 30_000];
        let read = read_capped(&file_with(&data), 10, 100_000).unwrap();
        assert_eq!(read, data);
        let capped = read_capped(&file_with(&data), 10, 20_001).unwrap();
        assert_eq!(capped.len(), 20_001);
        assert!(capped.capacity() <= 20_001);
        let huge_hint = read_capped(&file_with(b"abc"), u64::MAX, 64).unwrap();
        assert_eq!(huge_hint, b"abc");
        assert!(huge_hint.capacity() <= 64);
    }

    #[test]
    fn decode_removes_exactly_one_bom_and_refuses_invalid_input() {
        assert_eq!(decode(b"\xEF\xBB\xBFhi".to_vec()), Ok("hi".to_owned()));
        assert_eq!(
            decode(b"\xEF\xBB\xBF\xEF\xBB\xBFhi".to_vec()),
            Ok("\u{FEFF}hi".to_owned())
        );
        assert_eq!(
            decode(b"h\xEF\xBB\xBFi".to_vec()),
            Ok("h\u{FEFF}i".to_owned())
        );
        assert_eq!(decode(Vec::new()), Ok(String::new()));
        assert_eq!(
            decode(b"ab\xC0\xAF".to_vec()),
            Err(Utf8Failure {
                valid_up_to: 2,
                error_len: Some(1)
            })
        );
        assert_eq!(
            decode(b"\xEF\xBB\xBFab\xE2\x82".to_vec()),
            Err(Utf8Failure {
                valid_up_to: 5,
                error_len: None
            })
        );
    }
}
