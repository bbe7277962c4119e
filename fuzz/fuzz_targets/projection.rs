//! Projection compile and apply: the first document is the projection, the second the query
//! (for a positional `a.$`), the others are projected, under find's policy and then under
//! `$project`'s. A projected document must still encode as BSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mayfly::query::expr::Variables;
use mayfly::query::filter::Filter;
use mayfly::query::projection::{Projection, Source};

fn run(data: &[u8]) {
    let docs = mayfly_fuzz::documents(data);
    let Some((spec, rest)) = docs.split_first() else {
        return;
    };
    let Some((query, targets)) = rest.split_first() else {
        return;
    };
    let Ok(filter) = Filter::compile(query) else {
        return;
    };
    let vars = Variables::default();
    let compiled = [
        Projection::find(spec, &filter, &vars),
        Projection::aggregation(spec, &vars),
    ];
    let source = Source {
        query: Some(&filter),
        record_id: None,
    };
    for (projection, doc) in compiled
        .iter()
        .flatten()
        .flat_map(|p| targets.iter().map(move |d| (p, d)))
    {
        let Ok(projected) = projection.apply_from(doc, source) else {
            continue;
        };
        // Only inputs a client could send (no NUL in keys) are held to it.
        if bson::to_vec(doc).is_ok() && bson::to_vec(spec).is_ok() {
            assert!(
                bson::to_vec(&projected).is_ok(),
                "projection {spec:?} of {doc:?} does not encode: {projected:?}"
            );
        }
    }
}

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
