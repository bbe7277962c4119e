//! `$changeStream`: a tailing read of the operation log. A stream watches a collection, a
//! database (`{aggregate: 1}`) or the whole deployment (`allChangesForCluster` on `admin`); each
//! `getMore` reads the log entries committed after its position from a fresh snapshot, turns
//! the ones its scope sees into events (`event.rs`), runs the stages that follow `$changeStream`
//! over them, and keeps the cursor open when nothing is new (the command layer waits for the
//! next commit, up to `maxAwaitTimeMS`).
//!
//! Resuming: `resumeAfter` and `startAfter` take a token (`token.rs`), `startAtOperationTime` a
//! time; a point older than the log's oldest entry is 286 ChangeStreamHistoryLost. Without
//! them a stream starts after the last committed change.
//!
//! Owns: the stage's options, the stream's position and its batches. Does not own: the log
//! (`engine::oplog`), the cursor and its waiting (`command::crud::change_stream`).

mod event;
mod token;

pub use event::Scope;
use event::{Event, Shape};
use token::{Kind, Token};

use super::{Env, Pipeline, Row};
use crate::engine::cursor::Tail;
use crate::engine::Reader;
use crate::error::{Error, ErrorCode, Result};
use bson::{Bson, Document, RawDocumentBuf, Timestamp};

/// Stages that may follow `$changeStream` (mongod's `isAllowedInChangeStream`).
const ALLOWED_AFTER: &[&str] = &[
    "$match",
    "$project",
    "$addFields",
    "$set",
    "$unset",
    "$replaceRoot",
    "$replaceWith",
    "$redact",
];

const FIELDS: &[&str] = &[
    "fullDocument",
    "fullDocumentBeforeChange",
    "resumeAfter",
    "startAfter",
    "startAtOperationTime",
    "allChangesForCluster",
    "showExpandedEvents",
];

/// Where a stream starts reading the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Start {
    /// After the last committed change.
    Now,
    /// After the entry at this time (`resumeAfter`, `startAfter`).
    After(Timestamp),
    /// With the entry at this time, if any (`startAtOperationTime`).
    At(Timestamp),
}

/// A parsed `$changeStream` stage.
#[derive(Debug, Clone)]
pub struct Options {
    pub scope: Scope,
    shape: Shape,
    start: Start,
    /// `fullDocument: "whenAvailable"|"required"`: update events carry the logged post-image.
    post_image: Image,
    /// `fullDocumentBeforeChange`: update, replace and delete events carry the logged pre-image.
    pre_image: Image,
}

/// Whether events carry an image (a collection with `changeStreamPreAndPostImages` logs its
/// documents' images with their changes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    Off,
    /// Present, and null when the change has none.
    WhenAvailable,
    /// Present; a change without one ends the stream with an error.
    Required,
}

impl Options {
    /// Parses `{$changeStream: spec}` of an aggregate on `db` and collection `coll` (`None` for
    /// `{aggregate: 1}`).
    pub fn parse(spec: &Bson, db: &str, coll: Option<&str>) -> Result<Options> {
        let Bson::Document(spec) = spec else {
            return Err(Error::failed_to_parse(
                "the $changeStream stage must be an object",
            ));
        };
        for name in spec.keys() {
            if !FIELDS.contains(&name.as_str()) {
                return Err(Error::new(
                    ErrorCode::IDLUnknownField,
                    format!("BSON field '$changeStream.{name}' is an unknown field."),
                ));
            }
        }
        let flag = |name: &str| -> Result<bool> {
            match spec.get(name) {
                None => Ok(false),
                Some(Bson::Boolean(b)) => Ok(*b),
                Some(other) => Err(Error::type_mismatch(format!(
                    "BSON field '$changeStream.{name}' is the wrong type '{}', expected type 'bool'",
                    crate::query::path::type_name(other)
                ))),
            }
        };
        let all = flag("allChangesForCluster")?;
        let expanded = flag("showExpandedEvents")?;
        let scope = scope_of(db, coll, all)?;
        let (update_lookup, post_image) = match text(spec, "fullDocument")? {
            None | Some("default") => (false, Image::Off),
            Some("updateLookup") => (true, Image::Off),
            Some("whenAvailable") => (false, Image::WhenAvailable),
            Some("required") => (false, Image::Required),
            Some(other) => {
                return Err(Error::bad_value(format!(
                    "'{other}' is not a valid value for $changeStream.fullDocument"
                )))
            }
        };
        let pre_image = match text(spec, "fullDocumentBeforeChange")? {
            None | Some("off") => Image::Off,
            Some("whenAvailable") => Image::WhenAvailable,
            Some("required") => Image::Required,
            Some(other) => {
                return Err(Error::bad_value(format!(
                    "'{other}' is not a valid value for $changeStream.fullDocumentBeforeChange"
                )))
            }
        };
        let start = start_of(spec)?;
        Ok(Options {
            scope,
            shape: Shape {
                update_lookup,
                expanded,
                post_image: post_image != Image::Off,
                pre_image: pre_image != Image::Off,
            },
            start,
            post_image,
            pre_image,
        })
    }
}

fn text<'a>(spec: &'a Document, name: &str) -> Result<Option<&'a str>> {
    match spec.get(name) {
        None => Ok(None),
        Some(Bson::String(s)) => Ok(Some(s)),
        Some(other) => Err(Error::type_mismatch(format!(
            "BSON field '$changeStream.{name}' is the wrong type '{}', expected type 'string'",
            crate::query::path::type_name(other)
        ))),
    }
}

fn scope_of(db: &str, coll: Option<&str>, all: bool) -> Result<Scope> {
    match (coll, all) {
        (None, true) if db == "admin" => Ok(Scope::Cluster),
        (_, true) => Err(Error::new(
            ErrorCode::InvalidOptions,
            "A $changeStream with 'allChangesForCluster:true' may only be opened on the 'admin' \
             database, and with no collection name",
        )),
        (_, false) if matches!(db, "admin" | "config" | "local") => Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!("$changeStream may not be opened on the internal {db} database"),
        )),
        (Some(coll), false) if coll.starts_with("system.") => Err(Error::new(
            ErrorCode::InvalidNamespace,
            format!("$changeStream may not be opened on the internal {db}.{coll} collection"),
        )),
        (Some(coll), false) => Ok(Scope::Collection {
            db: db.to_owned(),
            coll: coll.to_owned(),
        }),
        (None, false) => Ok(Scope::Database { db: db.to_owned() }),
    }
}

fn start_of(spec: &Document) -> Result<Start> {
    let given: Vec<&str> = ["resumeAfter", "startAfter", "startAtOperationTime"]
        .into_iter()
        .filter(|name| spec.contains_key(name))
        .collect();
    if given.len() > 1 {
        return Err(Error::new(
            ErrorCode::Location40674,
            "Only one type of resume option is allowed, but multiple were found.",
        ));
    }
    if let Some(token) = spec.get("resumeAfter") {
        let token = Token::parse(token)?;
        if token.kind == Kind::Invalidate {
            return Err(Error::new(
                ErrorCode::InvalidResumeToken,
                "Attempting to resume a change stream using 'resumeAfter' is not allowed from an \
                 invalidate notification.",
            ));
        }
        return Ok(Start::After(token.time));
    }
    if let Some(token) = spec.get("startAfter") {
        return Ok(Start::After(Token::parse(token)?.time));
    }
    match spec.get("startAtOperationTime") {
        None => Ok(Start::Now),
        Some(Bson::Timestamp(t)) => Ok(Start::At(*t)),
        Some(other) => Err(Error::type_mismatch(format!(
            "BSON field '$changeStream.startAtOperationTime' is the wrong type '{}', expected \
             type 'timestamp'",
            crate::query::path::type_name(other)
        ))),
    }
}

/// Checks the stages after `$changeStream`: only those mongod allows in a change stream, and
/// `$changeStream` itself only first.
pub fn check_rest(rest: &[Document]) -> Result<()> {
    for name in rest.iter().filter_map(|s| s.keys().next()) {
        if name == "$changeStream" {
            return Err(Error::new(
                ErrorCode::Location40602,
                "$changeStream is only valid as the first stage in a pipeline.",
            ));
        }
        if !ALLOWED_AFTER.contains(&name.as_str()) {
            if !is_stage_name(name) {
                // mongod parses the whole pipeline first: a name it does not know is that.
                return Err(Error::new(
                    ErrorCode::Location40324,
                    format!("Unrecognized pipeline stage name: '{name}'"),
                ));
            }
            return Err(Error::new(
                ErrorCode::IllegalOperation,
                format!("{name} is not permitted in a $changeStream pipeline"),
            ));
        }
    }
    Ok(())
}

/// Whether `name` is a stage the pipeline parser knows (whatever it thinks of its argument).
fn is_stage_name(name: &str) -> bool {
    let probe = bson::doc! {name: {}};
    let vars = crate::query::expr::Variables::new(bson::DateTime::from_millis(0));
    !matches!(
        crate::pipeline::stage::Stage::parse(&probe, false, &vars),
        Err(e) if e.code == ErrorCode::Location40324
    )
}

/// An open change stream: the cursor's tailing source.
pub struct ChangeStream {
    reader: Reader,
    scope: Scope,
    shape: Shape,
    post_image: Image,
    pre_image: Image,
    /// Every entry up to this time has been read.
    position: Timestamp,
    /// The stages after `$changeStream`, parsed again for each batch of events.
    rest: Vec<Document>,
    env: Env,
    /// `postBatchResumeToken` after the last batch.
    token: Token,
    ended: bool,
}

impl ChangeStream {
    /// Opens a stream with `options`, the stages `rest` after it, reading through `reader`;
    /// `env` is the pipeline environment its stages run in (its view is renewed per batch).
    pub fn open(
        options: Options,
        rest: Vec<Document>,
        reader: Reader,
        env: Env,
    ) -> Result<ChangeStream> {
        check_rest(&rest)?;
        // Parse once now so that a bad stage fails the aggregate, not a later getMore.
        Pipeline::parse(&rest, &env.vars)?;
        let newest = reader.optimes().last_committed();
        let position = match options.start {
            Start::Now => newest,
            Start::After(time) => {
                check_history(&reader, time)?;
                time
            }
            Start::At(time) => {
                check_history(&reader, time)?;
                before(time)
            }
        };
        Ok(ChangeStream {
            reader,
            scope: options.scope,
            shape: options.shape,
            post_image: options.post_image,
            pre_image: options.pre_image,
            position,
            rest,
            env,
            token: Token::new(position, Kind::HighWaterMark),
            ended: false,
        })
    }

    /// The events of the entries after the position, at most `max_docs` (an entry's events
    /// are never split), each run through the stages after `$changeStream`.
    fn read(&mut self, max_docs: usize, max_bytes: usize) -> Result<Vec<RawDocumentBuf>> {
        // The newest committed time first, then the snapshot: it holds every entry up to it.
        let newest = self.reader.optimes().last_committed();
        let view = self.reader.read()?;
        self.env.view = view.clone();
        let mut out = Vec::new();
        let mut bytes = 0usize;
        let mut lookup = |db: &str, coll: &str, key: &Document| -> Result<Option<Document>> {
            let Some(meta) = view.collection(db, coll) else {
                return Ok(None);
            };
            Ok(view.get(&meta, key)?.map(|d| d.doc))
        };
        for entry in view.oplog_after(Some(self.position)) {
            let (time, entry) = entry?;
            if time > newest {
                break;
            }
            let events = event::events(&self.scope, self.shape, time, &entry, &mut lookup)?;
            self.position = time;
            let invalidates = events.iter().any(|e| e.invalidates);
            for (doc, token) in self.transform(events)? {
                let raw = RawDocumentBuf::from_document(&doc)
                    .map_err(|e| Error::internal(format!("cannot encode a change event: {e}")))?;
                bytes += raw.as_bytes().len();
                out.push(raw);
                self.token = token;
            }
            if invalidates {
                self.ended = true;
                return Ok(out);
            }
            if out.len() >= max_docs || bytes >= max_bytes {
                return Ok(out);
            }
            self.env.interrupt.check()?;
        }
        // Everything committed has been read: the position moves to the newest time.
        if newest > self.position {
            self.position = newest;
        }
        self.token = Token::new(self.position, Kind::HighWaterMark);
        Ok(out)
    }

    /// The events after the stages that follow `$changeStream`, each with its token.
    fn transform(&self, events: Vec<Event>) -> Result<Vec<(Document, Token)>> {
        let mut out = Vec::with_capacity(events.len());
        for mut event in events {
            self.add_image_fields(&mut event.doc)?;
            let token_doc = event.token.to_document();
            let rows = if self.rest.is_empty() {
                vec![event.doc]
            } else {
                let pipeline = Pipeline::parse(&self.rest, &self.env.vars)?;
                let input = Box::new(std::iter::once(Ok(Row::computed(event.doc))));
                pipeline
                    .run(input, &self.env)?
                    .map(|r| r.map(|row| row.doc))
                    .collect::<Result<Vec<_>>>()?
            };
            for doc in rows {
                if doc.get_document("_id").ok() != Some(&token_doc) {
                    return Err(Error::new(
                        ErrorCode::ChangeStreamFatalError,
                        "Encountered an event whose _id field, which contains the resume token, \
                         was modified by the pipeline. Modifying the _id field of an event makes \
                         it impossible to resume the stream from that point. Only \
                         transformations that retain the unmodified _id field are allowed.",
                    ));
                }
                out.push((doc, event.token));
            }
        }
        Ok(out)
    }

    /// `fullDocument` / `fullDocumentBeforeChange`: null where an image is wanted
    /// (`whenAvailable`) and the change has none; an error when it is `required`.
    fn add_image_fields(&self, doc: &mut Document) -> Result<()> {
        let operation = doc.get_str("operationType").unwrap_or_default().to_owned();
        if operation == "update" && !doc.contains_key("fullDocument") {
            match self.post_image {
                Image::Off => {}
                Image::WhenAvailable => {
                    doc.insert("fullDocument", Bson::Null);
                }
                Image::Required => return Err(missing_image("post-image", "update", doc)),
            }
        }
        if matches!(operation.as_str(), "update" | "replace" | "delete")
            && !doc.contains_key("fullDocumentBeforeChange")
        {
            match self.pre_image {
                Image::Off => {}
                Image::WhenAvailable => {
                    doc.insert("fullDocumentBeforeChange", Bson::Null);
                }
                Image::Required => {
                    return Err(missing_image(
                        "pre-image",
                        "update, delete and replace",
                        doc,
                    ))
                }
            }
        }
        Ok(())
    }
}

/// mongod's error for a required image (`image`) the change does not have.
fn missing_image(image: &str, events: &str, event: &Document) -> Error {
    Error::new(
        ErrorCode::NoMatchingDocument,
        format!(
            "Change stream was configured to require a {image} for all {events} events, but the \
             {image} was not found for event: {event}"
        ),
    )
}

impl Tail for ChangeStream {
    fn poll(&mut self, max_docs: usize, max_bytes: usize) -> Result<(Vec<RawDocumentBuf>, bool)> {
        if self.ended {
            return Ok((Vec::new(), true));
        }
        let batch = self.read(max_docs.max(1), max_bytes)?;
        Ok((batch, self.ended))
    }

    fn resume_token(&self) -> Document {
        self.token.to_document()
    }
}

/// 286 when entries after `time` may have left the log.
fn check_history(reader: &Reader, time: Timestamp) -> Result<()> {
    match reader.oplog().oldest() {
        Some(oldest) if time < before(oldest) => Err(Error::new(
            ErrorCode::ChangeStreamHistoryLost,
            "Resume of change stream was not possible, as the resume point may no longer be in \
             the oplog.",
        )),
        _ => Ok(()),
    }
}

/// The time just before `time`: a stream starting at `time` reads entries after it.
fn before(time: Timestamp) -> Timestamp {
    match time.increment {
        0 => Timestamp {
            time: time.time.saturating_sub(1),
            increment: u32::MAX,
        },
        n => Timestamp {
            time: time.time,
            increment: n - 1,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn options_are_checked_as_mongod_checks_them() {
        let cases: Vec<(Document, &str, Option<&str>, Option<ErrorCode>)> = vec![
            (doc! {}, "db", Some("c"), None),
            (doc! {}, "db", None, None),
            (doc! {"allChangesForCluster": true}, "admin", None, None),
            (
                doc! {"allChangesForCluster": true},
                "db",
                None,
                Some(ErrorCode::InvalidOptions),
            ),
            (doc! {}, "admin", None, Some(ErrorCode::InvalidNamespace)),
            (
                doc! {},
                "local",
                Some("oplog.rs"),
                Some(ErrorCode::InvalidNamespace),
            ),
            (
                doc! {},
                "db",
                Some("system.views"),
                Some(ErrorCode::InvalidNamespace),
            ),
            (
                doc! {"bogus": 1},
                "db",
                Some("c"),
                Some(ErrorCode::IDLUnknownField),
            ),
            (doc! {"fullDocument": "updateLookup"}, "db", Some("c"), None),
            (
                doc! {"fullDocument": "whenAvailable"},
                "db",
                Some("c"),
                None,
            ),
            (
                doc! {"fullDocument": "nope"},
                "db",
                Some("c"),
                Some(ErrorCode::BadValue),
            ),
            (doc! {"fullDocument": "required"}, "db", Some("c"), None),
            (
                doc! {"fullDocumentBeforeChange": "required"},
                "db",
                Some("c"),
                None,
            ),
            (
                doc! {"fullDocumentBeforeChange": "sometimes"},
                "db",
                Some("c"),
                Some(ErrorCode::BadValue),
            ),
            (
                doc! {"fullDocument": 1},
                "db",
                Some("c"),
                Some(ErrorCode::TypeMismatch),
            ),
            (
                doc! {"resumeAfter": {"_data": "x"}, "startAtOperationTime": Timestamp {time: 1, increment: 1}},
                "db",
                Some("c"),
                Some(ErrorCode::Location40674),
            ),
            (
                doc! {"resumeAfter": {"_data": "x"}},
                "db",
                Some("c"),
                Some(ErrorCode::InvalidResumeToken),
            ),
            (
                doc! {"resumeAfter": Token::new(Timestamp {time: 5, increment: 1}, Kind::Invalidate).to_document()},
                "db",
                Some("c"),
                Some(ErrorCode::InvalidResumeToken),
            ),
            (
                doc! {"startAfter": Token::new(Timestamp {time: 5, increment: 1}, Kind::Invalidate).to_document()},
                "db",
                Some("c"),
                None,
            ),
        ];
        for (spec, db, coll, want) in cases {
            let got = Options::parse(&Bson::Document(spec.clone()), db, coll);
            assert_eq!(got.err().map(|e| e.code), want, "{spec} on {db}.{coll:?}");
        }
    }

    #[test]
    fn only_reshaping_and_filtering_stages_may_follow() {
        assert!(check_rest(&[doc! {"$match": {}}, doc! {"$project": {"a": 1}}]).is_ok());
        let err = check_rest(&[doc! {"$group": {"_id": null}}]).unwrap_err();
        assert_eq!(err.code, ErrorCode::IllegalOperation);
        let err = check_rest(&[doc! {"$changeStream": {}}]).unwrap_err();
        assert_eq!(err.code, ErrorCode::Location40602);
    }

    #[test]
    fn a_start_time_reads_from_that_entry_on() {
        let t = |time, increment| Timestamp { time, increment };
        assert_eq!(before(t(5, 3)), t(5, 2));
        assert_eq!(before(t(5, 0)), t(4, u32::MAX));
    }
}
