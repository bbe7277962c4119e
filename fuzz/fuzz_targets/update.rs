//! Update parse and apply. Documents: the update (operators or a replacement, or
//! `{pipeline: [stages]}` for a pipeline update), the document to update, the query that
//! selected it (for the positional `$`), then `arrayFilters`. An empty target document is
//! treated as an upsert: the seed is built from the query's equality fields. A failed apply
//! must leave the document untouched.
#![no_main]

use bson::{Bson, Document};
use libfuzzer_sys::fuzz_target;
use mayfly::query::expr::Variables;
use mayfly::query::filter::{equality_fields, Filter};
use mayfly::query::update::{upsert_seed, ArrayFilters, Update, UpdateContext};

fn parse(spec: &Document) -> Option<Update> {
    if let (1, Some(Bson::Array(stages))) = (spec.len(), spec.get("pipeline")) {
        let stages: Option<Vec<Document>> =
            stages.iter().map(|s| s.as_document().cloned()).collect();
        let vars = Variables::new(bson::DateTime::from_millis(0));
        return Update::parse_pipeline(&stages?, &vars).ok();
    }
    Update::parse(spec).ok()
}

fn run(data: &[u8]) {
    let docs = mayfly_fuzz::documents(data);
    let mut docs = docs.into_iter();
    let Some(update) = docs.next().as_ref().and_then(parse) else {
        return;
    };
    let target = docs.next().unwrap_or_default();
    let query = docs.next().unwrap_or_default();
    let filters: Vec<Document> = docs.collect();
    let Ok(array_filters) = ArrayFilters::compile(&filters, &update) else {
        return;
    };
    let filter = Filter::compile(&query).ok();
    let positional_match = filter
        .as_ref()
        .filter(|f| f.matches(&target).unwrap_or(false))
        .and_then(|f| f.positional_match(&target));
    let ctx = UpdateContext {
        now: bson::DateTime::from_millis(1_700_000_000_000),
        is_upsert_insert: target.is_empty(),
        array_filters: &array_filters,
        positional_match,
    };
    if target.is_empty() {
        if let Ok(equalities) = equality_fields(&query) {
            let _ = upsert_seed(&equalities, &update, &ctx);
        }
        return;
    }
    let mut doc = target.clone();
    if update.apply(&mut doc, &ctx).is_err() {
        // Bytes, not values: NaN is not equal to itself.
        assert_eq!(
            bson::to_vec(&doc).ok(),
            bson::to_vec(&target).ok(),
            "a failed update changed the document"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    mayfly_fuzz::on_server_stack(|| run(data));
});
