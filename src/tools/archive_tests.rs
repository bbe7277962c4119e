use super::*;
use bson::doc;

fn body(d: &Document) -> Vec<u8> {
    let mut bytes = Vec::new();
    d.to_writer(&mut bytes).unwrap();
    bytes
}

fn sample() -> (Vec<u8>, Vec<Entry>) {
    let entries = vec![
        Entry::Collection(CollectionEntry {
            db: "shop".into(),
            name: "carts".into(),
            options: doc! {"collation": {"locale": "fr"}},
            indexes: vec![
                doc! {"v": 2, "key": {"_ts": 1}, "name": "_ts_1", "expireAfterSeconds": 60},
                doc! {"v": 2, "key": {"user": 1}, "name": "user_1", "unique": true},
            ],
            cosmos: Some(doc! {"shard_key": "user", "throughput": {"manual": 400}}),
        }),
        Entry::Document(DocumentEntry {
            ts: 1_000,
            own_ttl: None,
            body: body(&doc! {"_id": 1, "user": "ann"}),
        }),
        Entry::Document(DocumentEntry {
            ts: 1_005,
            own_ttl: Some(30),
            body: body(&doc! {"_id": 2, "user": "bob", "ttl": 30}),
        }),
        Entry::Collection(CollectionEntry {
            db: "shop".into(),
            name: "empty".into(),
            options: Document::new(),
            indexes: vec![],
            cosmos: None,
        }),
        Entry::User(doc! {"name": "ann", "db": "admin", "roles": []}),
    ];
    let mut writer = ArchiveWriter::start(Vec::new(), DateTime::from_millis(1_234_000)).unwrap();
    for entry in &entries {
        match entry {
            Entry::Collection(c) => writer.collection(c).unwrap(),
            Entry::Document(d) => writer.document(d.ts, d.own_ttl, &d.body).unwrap(),
            Entry::User(u) => writer.user(u).unwrap(),
        }
    }
    let (bytes, counts) = writer.finish().unwrap();
    assert_eq!(
        counts,
        Counts {
            collections: 2,
            documents: 2,
            users: 1
        }
    );
    (bytes, entries)
}

/// Every entry of `bytes`, or the first error.
fn read_all(bytes: &[u8]) -> Result<(Header, Vec<Entry>), ArchiveError> {
    let (mut reader, header) = ArchiveReader::open(bytes)?;
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry()? {
        entries.push(entry);
    }
    Ok((header, entries))
}

#[test]
fn an_archive_round_trips_every_entry_with_its_ts_and_ttl() {
    let (bytes, written) = sample();
    assert!(bytes.starts_with(MAGIC));
    let (header, read) = read_all(&bytes).unwrap();
    assert_eq!(header.version, VERSION);
    assert_eq!(header.mayfly_version, env!("CARGO_PKG_VERSION"));
    assert_eq!(header.created_at, DateTime::from_millis(1_234_000));
    assert_eq!(read, written);
}

#[test]
fn a_truncated_archive_is_refused_wherever_it_is_cut() {
    let (bytes, _) = sample();
    for cut in 0..bytes.len() {
        let result = read_all(&bytes[..cut]);
        assert!(
            result.is_err(),
            "cut at {cut} of {} was accepted",
            bytes.len()
        );
    }
    // Cut exactly before the trailer: every entry is whole, the end is missing.
    let (mut reader, _) = ArchiveReader::open(bytes.as_slice()).unwrap();
    for _ in 0..5 {
        reader.next_entry().unwrap().unwrap();
    }
    let trailer_len = bytes.len() - reader.input.len();
    let without_trailer = &bytes[..trailer_len];
    assert!(matches!(
        read_all(without_trailer),
        Err(ArchiveError::Truncated)
    ));
}

#[test]
fn a_changed_byte_fails_the_checksum() {
    let (bytes, _) = sample();
    // "bob" becomes "bog": still valid BSON, so only the checksum can tell.
    let at = bytes.windows(3).position(|w| w == b"bob").unwrap();
    let mut changed = bytes.clone();
    changed[at + 2] = b'g';
    match read_all(&changed) {
        Err(ArchiveError::Checksum { stored, computed }) => assert_ne!(stored, computed),
        other => panic!("expected a checksum error, got {other:?}"),
    }
}

#[test]
fn a_trailer_whose_counts_disagree_is_refused() {
    let mut writer = ArchiveWriter::start(Vec::new(), DateTime::from_millis(0)).unwrap();
    writer.counts.documents = 3;
    let (bytes, _) = writer.finish().unwrap();
    let err = read_all(&bytes).unwrap_err();
    assert!(err.to_string().contains("counts 3 documents"), "{err}");
}

#[test]
fn another_version_is_refused_by_number() {
    let mut bytes = MAGIC.to_vec();
    doc! {"kind": "header", "format": "mayfly-dump", "version": 2, "createdAt": DateTime::from_millis(0)}
        .to_writer(&mut bytes)
        .unwrap();
    match read_all(&bytes) {
        Err(ArchiveError::UnsupportedVersion(2)) => {}
        other => panic!("expected version 2 refused, got {other:?}"),
    }
    let err = ArchiveError::UnsupportedVersion(2).to_string();
    assert!(
        err.contains("version 2") && err.contains("version 1"),
        "{err}"
    );
}

#[test]
fn what_is_not_an_archive_is_refused_before_reading_entries() {
    for bytes in [
        &b""[..],
        b"mayfly",
        b"{\"kind\": \"header\"}  ",
        b"\x16\0\0\0\x02kind\0",
    ] {
        assert!(
            matches!(read_all(bytes), Err(ArchiveError::NotAnArchive)),
            "{bytes:?}"
        );
    }
}

#[test]
fn misplaced_oversized_and_trailing_entries_are_refused() {
    let header = |bytes: &mut Vec<u8>| {
        bytes.extend_from_slice(MAGIC);
        doc! {"kind": "header", "format": "mayfly-dump", "version": 1, "createdAt": DateTime::from_millis(0)}
            .to_writer(bytes)
            .unwrap();
    };
    // A document before any collection.
    let mut orphan = Vec::new();
    header(&mut orphan);
    doc! {"kind": "document", "ts": 1_i64, "doc": {"_id": 1}}
        .to_writer(&mut orphan)
        .unwrap();
    let err = read_all(&orphan).unwrap_err();
    assert!(err.to_string().contains("before any collection"), "{err}");
    // An entry that declares 2 GiB: refused from its length, nothing allocated for it.
    let mut huge = Vec::new();
    header(&mut huge);
    huge.extend_from_slice(&i32::MAX.to_le_bytes());
    let err = read_all(&huge).unwrap_err();
    assert!(
        err.to_string().contains("declares 2147483647 bytes"),
        "{err}"
    );
    // Bytes after the trailer.
    let (mut bytes, _) = sample();
    bytes.push(0);
    let err = read_all(&bytes).unwrap_err();
    assert!(err.to_string().contains("follow the trailer"), "{err}");
}
