//! fjall's journal files (`<dbpath>/<id>.jnl`), read by mayfly itself before fjall replays them.
//!
//! Owns: reading fjall 3's journal format, telling a torn tail from damage, and the salvage of
//! the readable batches (`mayfly repair`). Does not own: replaying (fjall does), deciding whether
//! to start (`integrity`), or files other than journals.
//!
//! # Why mayfly reads the journal first
//!
//! fjall 3.1 has one recovery behaviour (its `RecoveryMode` is a placeholder with one variant,
//! `TolerateCorruptTail`, and no setting reaches it). It refuses a batch whose checksum fails,
//! but any entry it cannot decode — a flipped tag, trailer or length byte anywhere in the file —
//! ends the replay there, and it then *truncates the file* at that point: every later batch,
//! acknowledged or not, is gone without an error. So the strict mode mayfly wants (stop only at
//! a genuinely torn tail) is not something fjall can be asked for; mayfly checks every journal
//! before fjall opens it and refuses to start on anything but a clean end or a torn tail.
//!
//! # Format (fjall 3, pinned at =3.1.13)
//!
//! A journal is a sequence of batches; each is a `Start` entry (tag 1, item count `u32`, seqno
//! `u64`), that many `Item` (tag 2: value type, compression, keyspace id `u64`, key length
//! `u16`, value length `u32`, stored length `u32`, key, stored value) or `Clear` (tag 4,
//! keyspace id) entries, and an `End` entry (tag 3, the xxh3-64 of the items' bytes, the magic
//! `FJL\x03`). Integers are little-endian. Only items are checksummed: the `Start` entry is not,
//! so a batch's seqno is checked by order (fjall takes a batch's seqno under the journal lock,
//! so they rise strictly through the files). A new journal is preallocated with zeros (64 MiB),
//! so the written part ends at the last non-zero byte, and a complete batch always ends in the
//! magic's `0x03`.
//!
//! # Torn tail or damage
//!
//! A commit returns only after its whole batch reached the file, so a batch cut short by a crash
//! was never acknowledged as durable. The tail is *torn* when the written part ends inside the
//! last batch: every entry decodes until the data runs out, no `End` completes, and no batch
//! trailer (`FJL\x03`) lies beyond its start — a longer cut-off run with a later trailer in it
//! is a corrupted length, not a cut. Anything else is *damage*: a batch that is complete but
//! fails its checksum or item count, a byte that is not a valid tag, a seqno out of order, or a
//! torn tail in a journal that is no longer the newest (fjall syncs a journal whole before
//! starting the next). A torn tail whose bytes happen to contain `FJL\x03` is reported as
//! damage: a refusal (and `mayfly repair`) rather than a guess.

use std::ops::Range;
use std::path::{Path, PathBuf};

const TAG_START: u8 = 1;
const TAG_ITEM: u8 = 2;
const TAG_END: u8 = 3;
const TAG_CLEAR: u8 = 4;
/// fjall's batch trailer.
pub const MAGIC: [u8; 4] = *b"FJL\x03";
/// tag, value type, compression, keyspace id, key length, value length, stored length.
const ITEM_HEADER: usize = 1 + 1 + 1 + 8 + 2 + 4 + 4;

/// A journal file and its number; fjall replays them in number order, the highest is active.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JournalFile {
    pub id: u64,
    pub path: PathBuf,
}

/// The journal files of data directory `dir`, oldest first. A `.jnl` name that is not a number
/// is an error, as in fjall.
pub fn list(dir: &Path) -> std::io::Result<Vec<JournalFile>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_none_or(|e| e != "jnl") {
            continue;
        }
        let id = path
            .file_stem()
            .and_then(|s| s.to_str())
            .and_then(|s| s.parse::<u64>().ok())
            .ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{}: not a journal file name", path.display()),
                )
            })?;
        files.push(JournalFile { id, path });
    }
    files.sort_by_key(|f| f.id);
    Ok(files)
}

/// A batch that parsed whole and passed its checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    pub offset: usize,
    pub end: usize,
    pub seqno: u64,
    pub items: u32,
}

/// The incomplete last batch of the newest journal, left by a crash in the middle of a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    pub offset: u64,
    /// Written bytes from `offset` to the last non-zero byte.
    pub bytes: u64,
    /// The batch's seqno and declared item count, when its `Start` entry was written whole.
    pub seqno: Option<u64>,
    pub items: Option<u32>,
}

/// Where a journal stops being readable, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Damage {
    pub offset: u64,
    pub detail: String,
}

/// How a journal file ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ending {
    /// Every written byte belongs to a valid batch.
    Clean,
    /// The last batch was cut short (only acceptable in the newest journal).
    Torn(TornTail),
    /// Something before the end cannot be read; fjall must not replay this file.
    Damaged(Damage),
}

/// What reading one journal file found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan {
    /// Valid batches before the ending, and the last seqno seen (this file's, or `after`).
    pub batches: u64,
    pub last_seqno: Option<u64>,
    /// Where the valid batches end.
    pub valid_end: u64,
    pub ending: Ending,
}

/// Why a batch at some offset did not parse.
enum Fault {
    /// The written data ran out inside it.
    Cut {
        seqno: Option<u64>,
        items: Option<u32>,
    },
    /// It is not a valid batch, though its bytes are there.
    Invalid(String),
}

/// The written part of `bytes`: up to and including the last non-zero byte.
pub fn written(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    bytes.get(..end).unwrap_or(bytes)
}

/// Reads a journal's bytes. `after` is the seqno of the last batch of the journal before it
/// (seqnos must rise); `newest` says whether a torn tail is acceptable here.
pub fn scan(bytes: &[u8], after: Option<u64>, newest: bool) -> Scan {
    let data = written(bytes);
    let mut at = 0usize;
    let mut batches = 0u64;
    let mut last = after;
    let ending = loop {
        if at >= data.len() {
            break Ending::Clean;
        }
        match parse_batch(data, at) {
            Ok(batch) => {
                if let Some(previous) = last.filter(|&p| batch.seqno <= p) {
                    break Ending::Damaged(Damage {
                        offset: at as u64,
                        detail: format!(
                            "batch seqno {} does not follow seqno {previous}",
                            batch.seqno
                        ),
                    });
                }
                batches += 1;
                last = Some(batch.seqno);
                at = batch.end;
            }
            Err(fault) => break classify(data, at, fault, newest),
        }
    };
    Scan {
        batches,
        last_seqno: last,
        valid_end: at as u64,
        ending,
    }
}

/// A failed batch at `at`: a torn tail or damage.
fn classify(data: &[u8], at: usize, fault: Fault, newest: bool) -> Ending {
    let rest = data.get(at..).unwrap_or_default();
    match fault {
        Fault::Invalid(detail) => Ending::Damaged(Damage {
            offset: at as u64,
            detail,
        }),
        Fault::Cut { .. } if contains(rest, &MAGIC) => Ending::Damaged(Damage {
            offset: at as u64,
            detail: format!(
                "a batch of the journal runs past the end of its {} written bytes, yet a later \
                 batch trailer follows it: a corrupted length, not a torn write",
                data.len()
            ),
        }),
        Fault::Cut { .. } if !newest => Ending::Damaged(Damage {
            offset: at as u64,
            detail: "the journal ends inside a batch, but it is not the newest journal (fjall \
                     syncs a journal whole before starting the next): it was truncated"
                .to_owned(),
        }),
        Fault::Cut { seqno, items } => Ending::Torn(TornTail {
            offset: at as u64,
            bytes: rest.len() as u64,
            seqno,
            items,
        }),
    }
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A cursor over the written data; a read past its end is a cut.
struct Reader<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let bytes = self.data.get(self.at..end)?;
        self.at = end;
        Some(bytes)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1)?.first().copied()
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// Parses the batch at `at` of `data` (the written part), checking its item count, trailer and
/// checksum.
fn parse_batch(data: &[u8], at: usize) -> Result<Batch, Fault> {
    let mut r = Reader { data, at };
    let cut = |seqno, items| Fault::Cut { seqno, items };
    let tag = r.u8().ok_or(cut(None, None))?;
    if tag != TAG_START {
        return Err(Fault::Invalid(format!(
            "expected the start of a batch, found byte {tag:#04x}"
        )));
    }
    let (Some(items), Some(seqno)) = (r.u32(), r.u64()) else {
        return Err(cut(None, None));
    };
    let cut_here = || cut(Some(seqno), Some(items));
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut seen = 0u32;
    loop {
        let entry_start = r.at;
        let tag = r.u8().ok_or_else(cut_here)?;
        match tag {
            TAG_ITEM | TAG_CLEAR if seen == items => {
                return Err(Fault::Invalid(format!(
                    "batch seqno {seqno} declares {items} items but holds more"
                )));
            }
            TAG_ITEM => {
                let header = r.take(ITEM_HEADER - 1).ok_or_else(cut_here)?;
                let field = |range: Range<usize>| header.get(range).unwrap_or_default();
                let value_type = field(0..1).first().copied().unwrap_or(u8::MAX);
                let compression = field(1..2).first().copied().unwrap_or(u8::MAX);
                // Value, tombstone, weak tombstone (fjall never journals an indirection).
                if value_type > 2 {
                    return Err(Fault::Invalid(format!(
                        "batch seqno {seqno}: item of unknown value type {value_type}"
                    )));
                }
                if compression > 1 {
                    return Err(Fault::Invalid(format!(
                        "batch seqno {seqno}: item of unknown compression {compression}"
                    )));
                }
                let key_len = u16::from_le_bytes(field(10..12).try_into().unwrap_or_default());
                let stored_len = u32::from_le_bytes(field(16..20).try_into().unwrap_or_default());
                let body = usize::from(key_len).saturating_add(stored_len as usize);
                r.take(body).ok_or_else(cut_here)?;
            }
            TAG_CLEAR => {
                r.u64().ok_or_else(cut_here)?;
            }
            TAG_END => {
                let expected = r.u64().ok_or_else(cut_here)?;
                let magic = r.take(MAGIC.len()).ok_or_else(cut_here)?;
                if magic != MAGIC {
                    return Err(Fault::Invalid(format!("batch seqno {seqno}: bad trailer")));
                }
                if seen != items {
                    return Err(Fault::Invalid(format!(
                        "batch seqno {seqno} declares {items} items but holds {seen}"
                    )));
                }
                if hasher.digest() != expected {
                    return Err(Fault::Invalid(format!(
                        "batch seqno {seqno} ({items} items) fails its checksum"
                    )));
                }
                return Ok(Batch {
                    offset: at,
                    end: r.at,
                    seqno,
                    items,
                });
            }
            other => {
                return Err(Fault::Invalid(format!(
                    "batch seqno {seqno}: byte {other:#04x} at offset {entry_start} is not an \
                     entry"
                )));
            }
        }
        hasher.update(data.get(entry_start..r.at).unwrap_or_default());
        seen += 1;
    }
}

/// What `mayfly repair` keeps of a journal, and what it cannot.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Salvage {
    /// Byte ranges of the valid batches, in order: the repaired journal is their concatenation.
    pub kept: Vec<Range<usize>>,
    pub kept_batches: u64,
    pub last_seqno: Option<u64>,
    /// Runs of bytes dropped, each with the reason its first batch could not be read.
    pub lost: Vec<Lost>,
}

/// A run of journal bytes `mayfly repair` drops.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lost {
    pub offset: u64,
    pub bytes: u64,
    pub detail: String,
    /// Whether this is the torn tail: a batch never acknowledged as durable.
    pub torn: bool,
}

/// Keeps every valid batch of a journal, skipping what cannot be read: after a bad batch, the
/// next offset where a whole batch with a valid checksum and a later seqno parses is where
/// reading resumes. A batch lost this way may have been acknowledged.
pub fn salvage(bytes: &[u8], after: Option<u64>) -> Salvage {
    let data = written(bytes);
    let mut out = Salvage {
        last_seqno: after,
        ..Salvage::default()
    };
    let mut at = 0usize;
    while at < data.len() {
        let follows = |b: &Batch| out.last_seqno.is_none_or(|p| b.seqno > p);
        match parse_batch(data, at) {
            Ok(batch) if follows(&batch) => {
                out.kept.push(batch.offset..batch.end);
                out.kept_batches += 1;
                out.last_seqno = Some(batch.seqno);
                at = batch.end;
            }
            failed => {
                let ending = match failed {
                    Ok(batch) => Ending::Damaged(Damage {
                        offset: at as u64,
                        detail: format!("batch seqno {} is out of order", batch.seqno),
                    }),
                    Err(fault) => classify(data, at, fault, true),
                };
                let resume = (at + 1..data.len()).find(|&q| {
                    data.get(q) == Some(&TAG_START)
                        && parse_batch(data, q).is_ok_and(|b| follows(&b))
                });
                let end = resume.unwrap_or(data.len());
                let (detail, torn) = match ending {
                    Ending::Torn(_) => (
                        "torn last batch, never acknowledged as durable".to_owned(),
                        true,
                    ),
                    Ending::Damaged(d) => (d.detail, false),
                    Ending::Clean => (String::new(), false),
                };
                out.lost.push(Lost {
                    offset: at as u64,
                    bytes: (end - at) as u64,
                    detail,
                    torn,
                });
                at = end;
            }
        }
    }
    out
}

/// Reads a journal file whole. Bounded by fjall's journal size limit (512 MiB across all
/// journals), and usually about a memtable's worth plus the 64 MiB preallocation.
pub fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path)
}
