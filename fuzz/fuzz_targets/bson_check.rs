//! The two walks that validate an `insert`'s documents on arbitrary bytes: the fast one
//! (`well_formed`) must accept exactly what the `bson` crate's reader (`first_fault`) accepts,
//! at every depth limit, and neither may panic.
//!
//! The input's first byte steers: bit 0 set writes the rest's own length into its first four
//! bytes (so that mutations reach the elements instead of failing at the length), bits 1–2 pick
//! the depth limit. The rest is the document.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mayfly::wire::bson_check::{first_fault, well_formed};

const LIMITS: [usize; 4] = [0, 1, 3, 200];

fn run(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut bytes = rest.to_vec();
    if mode & 1 == 1 && bytes.len() >= 4 {
        let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
        bytes[..4].copy_from_slice(&len.to_le_bytes());
    }
    let limit = LIMITS[usize::from(mode >> 1) % LIMITS.len()];
    let fast = well_formed(&bytes, limit);
    let reference = first_fault(&bytes, limit);
    assert_eq!(
        fast,
        reference.is_ok(),
        "the walks disagree at depth limit {limit}: {reference:?} for {bytes:02x?}"
    );
}

fuzz_target!(|data: &[u8]| mayfly_fuzz::on_server_stack(|| run(data)));
