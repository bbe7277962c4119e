//! Projection compile and apply: the first document is the projection, the others are
//! projected. A projected document must still encode as BSON.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mayfly::query::projection::Projection;

fn run(data: &[u8]) {
    let docs = mayfly_fuzz::documents(data);
    let Some((spec, targets)) = docs.split_first() else {
        return;
    };
    let Ok(projection) = Projection::compile(spec) else {
        return;
    };
    for doc in targets {
        let Ok(projected) = projection.apply(doc) else {
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
