//! Index key encoding against the query comparator: for every pair of values taken from the
//! input's documents (top-level values and the documents themselves), the memcmp order of
//! their keys is `compare_values`' order, descending keys reverse it, and equal keys are exactly
//! equal values.
#![no_main]

use bson::Bson;
use libfuzzer_sys::fuzz_target;
use mayfly::query::compare::{compare_values, values_equal};
use mayfly::storage::keys::{encode_value, encode_value_descending};

fn key(value: &Bson) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value(value, &mut out);
    out
}

fn key_desc(value: &Bson) -> Vec<u8> {
    let mut out = Vec::new();
    encode_value_descending(value, &mut out);
    out
}

fn run(data: &[u8]) {
    let docs = mayfly_fuzz::documents(data);
    let mut values: Vec<Bson> = Vec::new();
    for doc in &docs {
        values.extend(doc.values().take(8).cloned());
        values.push(Bson::Document(doc.clone()));
    }
    for a in &values {
        for b in &values {
            let (ka, kb) = (key(a), key(b));
            let expected = compare_values(a, b);
            assert_eq!(
                ka.cmp(&kb),
                expected,
                "{a:?} vs {b:?}: {ka:02x?} vs {kb:02x?}"
            );
            assert_eq!(
                key_desc(a).cmp(&key_desc(b)),
                expected.reverse(),
                "{a:?} vs {b:?}"
            );
            assert_eq!(values_equal(a, b), ka == kb, "{a:?} vs {b:?}");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
