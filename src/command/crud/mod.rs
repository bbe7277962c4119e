//! The document commands: reads, writes, change streams, cursors and their explain.

pub(super) mod aggregate;
pub(super) mod batch;
pub(super) mod change_stream;
pub(super) mod cursor;
pub(super) mod explain;
pub(super) mod find;
pub(super) mod insert;
pub(super) mod oplog_reads;
pub(super) mod read;
pub(super) mod write;
