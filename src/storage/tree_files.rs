//! lsm-tree's per-keyspace metadata files, read by mayfly to check and repair them:
//! `keyspaces/<id>/current` (25 bytes: version number `u64`, the xxh3-128 of the version file
//! `u128`, checksum type `u8`, little-endian) and `keyspaces/<id>/v<N>`, the version file (an
//! `sfa` archive whose `tables` section lists every table with the xxh3-128 of its whole file).
//!
//! Owns: reading these formats (lsm-tree 3.1, pinned through fjall =3.1.13), verifying the
//! checksums lsm-tree records but does not check at open (the version file's, and each whole
//! table file's: lsm-tree checks a table's blocks only as it reads them), and rewriting a lost
//! or damaged `current` from the newest intact version file. Does not own: opening the trees.

use std::io::Read;
use std::path::{Path, PathBuf};

pub const CURRENT: &str = "current";
const CURRENT_LEN: usize = 8 + 16 + 1;
/// The only checksum type lsm-tree 3 writes (xxh3).
const XXH3: u8 = 0;

/// A file that fails its check, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadFile {
    pub path: PathBuf,
    pub detail: String,
}

impl BadFile {
    fn new(path: &Path, detail: impl Into<String>) -> BadFile {
        BadFile {
            path: path.to_path_buf(),
            detail: detail.into(),
        }
    }
}

/// What `current` says: the version number and its file's checksum.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Current {
    pub version: u64,
    pub checksum: u128,
}

fn parse_current(bytes: &[u8]) -> Option<Current> {
    if bytes.len() != CURRENT_LEN || bytes.get(24) != Some(&XXH3) {
        return None;
    }
    Some(Current {
        version: u64::from_le_bytes(bytes.get(0..8)?.try_into().ok()?),
        checksum: u128::from_le_bytes(bytes.get(8..24)?.try_into().ok()?),
    })
}

fn encode_current(current: Current) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(CURRENT_LEN);
    bytes.extend_from_slice(&current.version.to_le_bytes());
    bytes.extend_from_slice(&current.checksum.to_le_bytes());
    bytes.push(XXH3);
    bytes
}

fn hash_file(path: &Path) -> std::io::Result<u128> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = xxhash_rust::xxh3::Xxh3::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buffer)?;
        if n == 0 {
            return Ok(hasher.digest128());
        }
        hasher.update(buffer.get(..n).unwrap_or_default());
    }
}

/// "missing" for a file that is not there, the error otherwise.
fn missing_or(error: std::io::Error) -> String {
    if error.kind() == std::io::ErrorKind::NotFound {
        "missing".to_owned()
    } else {
        error.to_string()
    }
}

fn version_path(tree: &Path, version: u64) -> PathBuf {
    tree.join(format!("v{version}"))
}

/// Checks a tree's `current` and the version file it names: present, well-formed, and the
/// version file's bytes match the checksum `current` records.
pub fn check_current(tree: &Path) -> Result<Current, BadFile> {
    let path = tree.join(CURRENT);
    let bytes = std::fs::read(&path).map_err(|e| BadFile::new(&path, missing_or(e)))?;
    let current = parse_current(&bytes).ok_or_else(|| {
        BadFile::new(
            &path,
            format!("not a version pointer ({} bytes)", bytes.len()),
        )
    })?;
    let version = version_path(tree, current.version);
    let hash = hash_file(&version).map_err(|e| BadFile::new(&version, missing_or(e)))?;
    if hash != current.checksum {
        return Err(BadFile::new(
            &version,
            "fails the checksum its `current` file records",
        ));
    }
    Ok(current)
}

/// Rewrites `current` to name the newest version file that reads as a whole archive (its table
/// of contents passes its checksum); returns that version, or `None` when there is none.
pub fn rebuild_current(tree: &Path) -> std::io::Result<Option<u64>> {
    let mut versions: Vec<u64> = std::fs::read_dir(tree)?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name();
            name.to_str()?.strip_prefix('v')?.parse::<u64>().ok()
        })
        .collect();
    versions.sort_unstable();
    for version in versions.into_iter().rev() {
        let path = version_path(tree, version);
        if sfa::Reader::new(&path).is_err() {
            continue;
        }
        let checksum = hash_file(&path)?;
        let current = encode_current(Current { version, checksum });
        let tmp = tree.join("current.repair");
        std::fs::write(&tmp, current)?;
        std::fs::File::open(&tmp)?.sync_all()?;
        std::fs::rename(&tmp, tree.join(CURRENT))?;
        std::fs::File::open(tree)?.sync_all()?;
        return Ok(Some(version));
    }
    Ok(None)
}

/// A table the version file lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct TableEntry {
    id: u64,
    checksum: u128,
}

/// The tables a (checked) version file lists.
fn listed_tables(version: &Path) -> Result<Vec<TableEntry>, BadFile> {
    let bad = |detail: String| BadFile::new(version, detail);
    let reader = sfa::Reader::new(version).map_err(|e| bad(format!("{e:?}")))?;
    let section = reader
        .toc()
        .section(b"tables")
        .ok_or_else(|| bad("no tables section".to_owned()))?;
    let mut r = section
        .buf_reader(version)
        .map_err(|e| bad(e.to_string()))?;
    let short = |e: std::io::Error| bad(format!("tables section: {e}"));
    let mut tables = Vec::new();
    let levels = read_u8(&mut r).map_err(short)?;
    for _ in 0..levels {
        let runs = read_u8(&mut r).map_err(short)?;
        for _ in 0..runs {
            let count = read_array::<4>(&mut r).map_err(short)?;
            for _ in 0..u32::from_le_bytes(count) {
                let id = u64::from_le_bytes(read_array::<8>(&mut r).map_err(short)?);
                if read_u8(&mut r).map_err(short)? != XXH3 {
                    return Err(bad(format!("table {id}: unknown checksum type")));
                }
                let checksum = u128::from_le_bytes(read_array::<16>(&mut r).map_err(short)?);
                read_array::<8>(&mut r).map_err(short)?; // global seqno
                tables.push(TableEntry { id, checksum });
            }
        }
    }
    Ok(tables)
}

fn read_u8(r: &mut impl Read) -> std::io::Result<u8> {
    Ok(u8::from_le_bytes(read_array::<1>(r)?))
}

fn read_array<const N: usize>(r: &mut impl Read) -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    r.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// What checking one tree's files found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeCheck {
    pub tables: u64,
    pub bytes: u64,
    pub bad: Vec<BadFile>,
}

/// Checks a tree: `current`, its version file, and every table it lists read whole against
/// the checksum the version file records.
pub fn check_tree(tree: &Path) -> TreeCheck {
    let mut out = TreeCheck::default();
    let current = match check_current(tree) {
        Ok(current) => current,
        Err(bad) => {
            out.bad.push(bad);
            return out;
        }
    };
    let tables = match listed_tables(&version_path(tree, current.version)) {
        Ok(tables) => tables,
        Err(bad) => {
            out.bad.push(bad);
            return out;
        }
    };
    for table in tables {
        let path = tree.join("tables").join(table.id.to_string());
        match hash_file(&path) {
            Ok(hash) if hash == table.checksum => {
                out.tables += 1;
                out.bytes += std::fs::metadata(&path).map_or(0, |m| m.len());
            }
            Ok(_) => out.bad.push(BadFile::new(
                &path,
                "fails the checksum its version file records",
            )),
            Err(e) => out.bad.push(BadFile::new(&path, missing_or(e))),
        }
    }
    out
}

/// The tree directories of a data directory (`keyspaces/<n>`), fjall's own keyspace catalog
/// (`0`) first.
pub fn trees(dbpath: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut trees: Vec<(u64, PathBuf)> = std::fs::read_dir(dbpath.join("keyspaces"))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter_map(|e| Some((e.file_name().to_str()?.parse().ok()?, e.path())))
        .collect();
    trees.sort();
    Ok(trees.into_iter().map(|(_, p)| p).collect())
}
