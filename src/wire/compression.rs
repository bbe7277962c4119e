//! OP_COMPRESSED (opcode 2012): snappy, zlib and zstd. Sizes are checked before anything is
//! allocated, and a decompressed size that differs from the declared one is a framing error.

use super::{Reader, WireError, HEADER_LEN, MAX_MESSAGE_SIZE};
use std::io::{Read, Write};

pub use crate::protocol::Compressor;

impl Compressor {
    /// `None` for the noop compressor (id 0).
    fn from_id(id: u8) -> Result<Option<Compressor>, WireError> {
        match id {
            0 => Ok(None),
            1 => Ok(Some(Compressor::Snappy)),
            2 => Ok(Some(Compressor::Zlib)),
            3 => Ok(Some(Compressor::Zstd)),
            other => Err(WireError::UnknownCompressor(other)),
        }
    }

    pub fn compress(self, input: &[u8]) -> Result<Vec<u8>, WireError> {
        let fail = |e: std::io::Error| WireError::Decompression(format!("{}: {e}", self.name()));
        match self {
            Compressor::Snappy => snap::raw::Encoder::new()
                .compress_vec(input)
                .map_err(|e| WireError::Decompression(e.to_string())),
            Compressor::Zlib => {
                let mut enc =
                    flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
                enc.write_all(input).map_err(fail)?;
                enc.finish().map_err(fail)
            }
            Compressor::Zstd => {
                zstd::bulk::compress(input, zstd::DEFAULT_COMPRESSION_LEVEL).map_err(fail)
            }
        }
    }

    /// Decompresses exactly `expected` bytes, never allocating more than that.
    fn decompress(self, input: &[u8], expected: usize) -> Result<Vec<u8>, WireError> {
        let lie = |actual: usize| {
            WireError::Decompression(format!(
                "{}: declared {expected} bytes, got {actual}",
                self.name()
            ))
        };
        let out = match self {
            Compressor::Snappy => {
                let len = snap::raw::decompress_len(input)
                    .map_err(|e| WireError::Decompression(format!("snappy: {e}")))?;
                if len != expected {
                    return Err(lie(len));
                }
                snap::raw::Decoder::new()
                    .decompress_vec(input)
                    .map_err(|e| WireError::Decompression(format!("snappy: {e}")))?
            }
            Compressor::Zlib => {
                let mut out = Vec::with_capacity(expected);
                flate2::read::ZlibDecoder::new(input)
                    .take(expected as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| WireError::Decompression(format!("zlib: {e}")))?;
                out
            }
            Compressor::Zstd => {
                let mut out = Vec::with_capacity(expected);
                zstd::stream::read::Decoder::new(input)
                    .map_err(|e| WireError::Decompression(format!("zstd: {e}")))?
                    .take(expected as u64 + 1)
                    .read_to_end(&mut out)
                    .map_err(|e| WireError::Decompression(format!("zstd: {e}")))?;
                out
            }
        };
        if out.len() != expected {
            return Err(lie(out.len()));
        }
        Ok(out)
    }
}

/// The message an OP_COMPRESSED wraps.
pub struct Decompressed {
    pub original_op_code: i32,
    pub compressor: Option<Compressor>,
    pub payload: Vec<u8>,
}

pub fn decompress(payload: &[u8]) -> Result<Decompressed, WireError> {
    let mut r = Reader::new(payload, "OP_COMPRESSED");
    let original_op_code = r.i32()?;
    let declared = r.i32()?;
    let compressor = Compressor::from_id(r.u8()?)?;
    let expected = usize::try_from(declared)
        .ok()
        .filter(|&n| n <= MAX_MESSAGE_SIZE - HEADER_LEN)
        .ok_or(WireError::BadLength(
            i64::from(declared) + HEADER_LEN as i64,
        ))?;
    let data = r.remaining();
    let payload = match compressor {
        None if data.len() == expected => data.to_vec(),
        None => {
            return Err(WireError::Decompression(format!(
                "noop: declared {expected} bytes, got {}",
                data.len()
            )))
        }
        Some(c) => c.decompress(data, expected)?,
    };
    Ok(Decompressed {
        original_op_code,
        compressor,
        payload,
    })
}

/// Wraps an encoded payload of `original_op_code` in an OP_COMPRESSED payload.
pub fn compress(
    compressor: Compressor,
    original_op_code: i32,
    payload: &[u8],
) -> Result<Vec<u8>, WireError> {
    let size =
        i32::try_from(payload.len()).map_err(|_| WireError::BadLength(payload.len() as i64))?;
    let data = compressor.compress(payload)?;
    let mut out = Vec::with_capacity(9 + data.len());
    out.extend_from_slice(&original_op_code.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    out.push(compressor.id());
    out.extend_from_slice(&data);
    Ok(out)
}
