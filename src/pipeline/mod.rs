//! Aggregation pipelines: each stage parsed once into a [`Stage`], the leading `$match`,
//! `$sort`, `$skip` and `$limit` handed to the engine's executor as one read (so an index can
//! serve them), and the remaining stages run over a stream of [`Row`]s.
//!
//! Owns: stage parsing and semantics, the per-stage memory limits, and the rows' expiry
//! (TTL-18: a row derived from a stored document disappears with it). Does not own:
//! expressions and reshaping (`query::expr`, `query::reshape`, shared with pipeline updates),
//! reading collections (`engine`), the command's arguments or its cursor reply
//! (`command::crud::aggregate`).
//!
//! Streaming stages stay lazy, so a cursor pulls from the snapshot batch by batch; blocking
//! stages (`$group`, `$sort`, `$sample`, `$count`) consume their input when the pipeline is
//! built.

mod bucket;
mod bucket_auto;
pub mod change_stream;
mod densify;
mod env;
mod facet;
mod fill;
mod granularity;
mod graph_lookup;
mod group;
pub mod index_stats;
pub mod list_local_sessions;
pub mod lite;
mod lookup;
pub mod memory;
mod merge;
mod out;
mod redact;
mod sample;
mod sort;
mod stage;
mod union_with;
mod unwind;
mod window;

pub use env::Env;
pub use memory::StageLimits;
pub use stage::Stage;

use crate::engine::exec::{Hint, ReadRequest};
use crate::error::{Error, ErrorCode, Result};
use crate::query::expr::Variables;
use bson::Document;

/// mongod's `internalPipelineLengthLimit`.
pub const MAX_PIPELINE_LENGTH: usize = 1_000;

/// A document flowing through the pipeline.
#[derive(Debug, Clone)]
pub struct Row {
    pub doc: Document,
    /// The stored size while the document is unchanged from storage.
    pub size: Option<usize>,
    /// When the stored document this row came from expires; rows derived from one document
    /// (projected, unwound, sorted) disappear with it (TTL-18). `None` for computed rows.
    pub expires_at: Option<i64>,
}

impl Row {
    /// A row no stored document backs (a `$group` result, a `$collStats` document).
    pub fn computed(doc: Document) -> Row {
        Row {
            doc,
            size: None,
            expires_at: None,
        }
    }

    /// A row whose document a stage built from expressions: it may be deeper than its input,
    /// so it is checked against the nesting limit before later stages (and their recursive
    /// comparisons) see it.
    pub fn reshaped(&self, doc: Document) -> Result<Row> {
        crate::query::depth::check_document(&doc)?;
        Ok(self.derived(doc))
    }

    pub fn derived(&self, doc: Document) -> Row {
        Row {
            doc,
            size: None,
            expires_at: self.expires_at,
        }
    }
}

pub type Rows = Box<dyn Iterator<Item = Result<Row>> + Send>;

/// A parsed pipeline.
pub struct Pipeline {
    stages: Vec<Stage>,
    /// The variables its stages were compiled with (its leading read's `$expr`s need them).
    vars: Variables,
}

impl Pipeline {
    /// Parses every stage, with the command's `let` variables and `$$NOW` in `vars`.
    pub fn parse(specs: &[Document], vars: &Variables) -> Result<Pipeline> {
        Pipeline::parse_nested(specs, vars, Nesting::Top)
    }

    /// Parses a pipeline inside a stage (`$lookup`, `$unionWith`, `$facet`).
    pub(crate) fn parse_nested(
        specs: &[Document],
        vars: &Variables,
        nesting: Nesting,
    ) -> Result<Pipeline> {
        if specs.len() > MAX_PIPELINE_LENGTH {
            return Err(Error::new(
                ErrorCode::Location7749501,
                format!("Pipeline length must be no longer than {MAX_PIPELINE_LENGTH} stages."),
            ));
        }
        let mut stages = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            stages.extend(Stage::parse(spec, i == 0, vars)?);
        }
        nesting.check(&stages)?;
        Ok(Pipeline {
            stages,
            vars: vars.clone(),
        })
    }

    /// The first stage, which may be a source (`$collStats`, `$currentOp`).
    pub fn first(&self) -> Option<&Stage> {
        self.stages.first()
    }

    /// Removes the first stage (a source the caller produces itself).
    pub fn take_first(&mut self) -> Option<Stage> {
        (!self.stages.is_empty()).then(|| self.stages.remove(0))
    }

    /// Takes the leading `$match`, `$sort`, `$skip` and `$limit` (each optional, in that order)
    /// as the executor's read request, under the operation's collation (the one the variables
    /// carry, which overrides the collection's default); returns it and how many stages it
    /// took.
    pub fn take_leading_read(&mut self, hint: Option<Hint>) -> Result<(ReadRequest, usize)> {
        let mut stages = std::mem::take(&mut self.stages).into_iter().peekable();
        let mut taken = 0;
        let mut read = match stages.next_if(|s| matches!(s, Stage::Match { .. })) {
            Some(Stage::Match { spec, .. }) => {
                taken += 1;
                ReadRequest::with_variables(spec, self.vars.clone())?
            }
            _ => ReadRequest::new(Document::new())?,
        };
        if let Some(Stage::Sort { spec, pattern }) =
            stages.next_if(|s| matches!(s, Stage::Sort { .. }))
        {
            taken += 1;
            read.sort = spec;
            read.sort_pattern = pattern;
        }
        if let Some(Stage::Skip(n)) = stages.next_if(|s| matches!(s, Stage::Skip(_))) {
            taken += 1;
            read.skip = n;
        }
        if let Some(Stage::Limit(n)) = stages.next_if(|s| matches!(s, Stage::Limit(_))) {
            taken += 1;
            read.limit = Some(n);
        }
        read.hint = hint;
        self.stages = stages.collect();
        let read = read.requested_collation(Some(self.vars.collation().cloned()))?;
        Ok((read, taken))
    }

    /// Runs the stages over `rows`.
    pub fn run(self, mut rows: Rows, env: &Env) -> Result<Rows> {
        for stage in self.stages {
            rows = stage.apply(rows, env)?;
        }
        Ok(rows)
    }

    /// Runs the pipeline over collection `coll` of the environment's database: its leading
    /// stages as one executor read, the rest over its output.
    pub fn run_on(mut self, coll: &str, env: &Env) -> Result<Rows> {
        if matches!(self.first(), Some(Stage::Documents(_))) {
            return self.run(Box::new(std::iter::empty()), env);
        }
        let (read, _) = self.take_leading_read(None)?;
        let rows = env.read_collection(coll, read)?;
        self.run(rows, env)
    }
}

/// Where a pipeline sits, for the stages it may not contain.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Nesting {
    Top,
    /// Inside `$lookup` or `$unionWith`.
    SubPipeline(&'static str),
    /// Inside `$facet`.
    Facet,
}

impl Nesting {
    fn check(self, stages: &[Stage]) -> Result<()> {
        let last = stages.len().saturating_sub(1);
        for (i, stage) in stages.iter().enumerate() {
            let name = stage.name();
            if matches!(name, "$out" | "$merge") && i != last {
                return Err(Error::new(
                    ErrorCode::Location40601,
                    format!("{name} can only be the final stage in the pipeline"),
                ));
            }
            match self {
                Nesting::Top => {}
                Nesting::SubPipeline(parent) if matches!(name, "$out" | "$merge") => {
                    return Err(Error::new(
                        ErrorCode::Location51047,
                        format!("{name} is not allowed within a {parent} sub-pipeline"),
                    ))
                }
                // mongod runs it first in these; mayfly produces it only for `aggregate`.
                Nesting::SubPipeline(parent) if name == "$indexStats" => {
                    return Err(Error::new(
                        ErrorCode::NotImplemented,
                        format!("$indexStats within a {parent} sub-pipeline is not supported by this server"),
                    ))
                }
                Nesting::Facet
                    if matches!(
                        name,
                        "$out"
                            | "$merge"
                            | "$facet"
                            | "$collStats"
                            | "$currentOp"
                            | "$listLocalSessions"
                            | "$documents"
                            | "$indexStats"
                    ) =>
                {
                    return Err(Error::new(
                        ErrorCode::Location40600,
                        format!("{name} is not allowed to be used within a $facet stage"),
                    ))
                }
                _ => {}
            }
        }
        Ok(())
    }
}
