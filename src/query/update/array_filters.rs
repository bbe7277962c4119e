//! `arrayFilters`: each filter document names one identifier (`{"x.a": {$gt: 1}}` → `x`) and is
//! compiled once; `$[x]` in an update path selects the array elements it matches.

use super::{positional_identifier, Update};
use crate::error::{Error, Result};
use crate::query::filter::Filter;
use bson::{doc, Bson, Document};

/// Compiled `arrayFilters`, keyed by identifier.
#[derive(Debug, Clone, Default)]
pub struct ArrayFilters {
    filters: Vec<(String, Filter)>,
}

static NO_ARRAY_FILTERS: ArrayFilters = ArrayFilters {
    filters: Vec::new(),
};

fn valid_identifier(id: &str) -> bool {
    let mut chars = id.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase()) && chars.all(|c| c.is_ascii_alphanumeric())
}

impl ArrayFilters {
    /// No filters.
    pub fn none() -> &'static ArrayFilters {
        &NO_ARRAY_FILTERS
    }

    /// Compiles `arrayFilters` for `update`, checking that every `$[x]` has a filter and every
    /// filter is used, as mongod does.
    pub fn compile(filters: &[Document], update: &Update) -> Result<ArrayFilters> {
        let mut compiled: Vec<(String, Filter)> = Vec::new();
        for filter in filters {
            let mut identifier: Option<String> = None;
            for key in filter.keys() {
                let top = key.split('.').next().unwrap_or("");
                if top.starts_with('$') || top.is_empty() {
                    return Err(Error::failed_to_parse(
                        "Error parsing array filter :: caused by :: Cannot use an expression \
                         without a top-level field name in arrayFilters",
                    ));
                }
                match &identifier {
                    None => identifier = Some(top.to_owned()),
                    Some(id) if id != top => {
                        return Err(Error::failed_to_parse(format!(
                            "Error parsing array filter :: caused by :: Expected a single \
                             top-level field name, found '{id}' and '{top}'"
                        )))
                    }
                    Some(_) => {}
                }
            }
            let Some(id) = identifier else {
                return Err(Error::failed_to_parse(
                    "Error parsing array filter :: caused by :: Cannot use an expression without \
                     a top-level field name in arrayFilters",
                ));
            };
            if !valid_identifier(&id) {
                return Err(Error::bad_value(format!(
                    "Error parsing array filter :: caused by :: The top-level field name must be \
                     an alphanumeric string beginning with a lowercase letter, found '{id}'"
                )));
            }
            if compiled.iter().any(|(existing, _)| *existing == id) {
                return Err(Error::failed_to_parse(format!(
                    "Found multiple array filters with the same top-level field name {id}"
                )));
            }
            compiled.push((id, Filter::compile(filter)?));
        }
        match update {
            Update::Replacement(_) | Update::Pipeline(_) if !compiled.is_empty() => {
                return Err(Error::failed_to_parse(
                    "arrayFilters may not be specified for replacement-style updates",
                ))
            }
            Update::Replacement(_) | Update::Pipeline(_) => {}
            Update::Operators(actions) => {
                for action in actions {
                    for component in &action.path {
                        if let Some(id) = positional_identifier(component) {
                            if !id.is_empty() && !compiled.iter().any(|(k, _)| k == id) {
                                return Err(Error::bad_value(format!(
                                    "No array filter found for identifier '{id}' in path '{}'",
                                    action.path.join(".")
                                )));
                            }
                        }
                    }
                }
            }
        }
        let used = update.array_filter_identifiers();
        if let Some((unused, _)) = compiled.iter().find(|(id, _)| !used.contains(id)) {
            return Err(Error::failed_to_parse(format!(
                "The array filter for identifier '{unused}' was not used in the update"
            )));
        }
        Ok(ArrayFilters { filters: compiled })
    }

    /// Whether `element` passes the filter named `id`; `None` when there is no such filter.
    pub(crate) fn matches(&self, id: &str, element: &Bson) -> Option<bool> {
        let (_, filter) = self.filters.iter().find(|(k, _)| k == id)?;
        Some(filter.matches_within(&doc! {id: element.clone()}))
    }
}
