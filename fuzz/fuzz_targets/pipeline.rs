//! Aggregation pipelines: each document of the input is one stage, run by `aggregate` over a
//! collection of varied documents (nested arrays, nulls, mixed types) through the command
//! layer, so stage parsing, the optimiser and every stage's execution are reached. Stages that
//! write (`$out`, `$merge`) are skipped: they would change the collection later inputs read.
#![no_main]

use bson::{doc, Bson};
use libfuzzer_sys::fuzz_target;
use mayfly_fuzz::server;

fn run(data: &[u8]) {
    let stages = mayfly_fuzz::documents(data);
    if stages.is_empty()
        || stages
            .iter()
            .any(|s| s.contains_key("$out") || s.contains_key("$merge"))
    {
        return;
    }
    let pipeline: Vec<Bson> = stages.into_iter().map(Bson::Document).collect();
    let _ = server::run(doc! {
        "aggregate": server::SEEDED,
        "pipeline": pipeline,
        "cursor": {},
    });
}

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
