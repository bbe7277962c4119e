//! Filter compile and match. The first document is the filter, the others are matched against
//! it, both ways the engine matches: on a decoded document and on the stored bytes (which
//! decodes only the fields the filter reads). The two must agree.
#![no_main]

use bson::RawDocument;
use libfuzzer_sys::fuzz_target;
use mayfly::query::filter::Filter;

fn run(data: &[u8]) {
    let docs = mayfly_fuzz::documents(data);
    let Some((spec, candidates)) = docs.split_first() else {
        return;
    };
    let Ok(filter) = Filter::compile(spec) else {
        return;
    };
    for doc in candidates {
        let matched = filter.matches(doc);
        let _ = filter.positional_match(doc);
        let Ok(bytes) = bson::to_vec(doc) else {
            continue;
        };
        let Ok(raw) = RawDocument::from_bytes(&bytes) else {
            continue;
        };
        // Both ways must agree, an error (a regex out of budget) included.
        match (matched, filter.matches_raw(raw)) {
            (Ok(matched), Ok(raw_matched)) => assert_eq!(
                matched, raw_matched,
                "matches and matches_raw disagree: filter {spec:?}, document {doc:?}"
            ),
            (Err(_), Err(_)) => {}
            (Ok(_), Err(e)) => panic!("matches_raw refused a valid document {doc:?}: {e:?}"),
            (Err(e), Ok(_)) => panic!("matches refused a document matches_raw took {doc:?}: {e:?}"),
        }
    }
}

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
