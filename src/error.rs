//! One error vocabulary: MongoDB's error codes and names, and the one mapping of an [`Error`]
//! to a command reply `{ok: 0, errmsg, code, codeName}`.
//!
//! Owns: the code table and the error value every layer returns. Does not own: framing errors
//! (`wire::WireError`), which close a connection instead of producing a reply.

use bson::{doc, Document};
use std::fmt;

macro_rules! error_codes {
    ($($name:ident = $code:literal),* $(,)?) => {
        /// A MongoDB error code; the variant name is mongod's `codeName`.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum ErrorCode {
            $($name),*
        }

        impl ErrorCode {
            /// The numeric code mongod sends.
            pub fn code(self) -> i32 {
                match self {
                    $(ErrorCode::$name => $code),*
                }
            }

            /// The `codeName` mongod sends.
            pub fn name(self) -> &'static str {
                match self {
                    $(ErrorCode::$name => stringify!($name)),*
                }
            }
        }
    };
}

error_codes! {
    InternalError = 1,
    Overflow = 15,
    BadValue = 2,
    NoSuchKey = 4,
    FailedToParse = 9,
    InvalidLength = 16,
    TypeMismatch = 14,
    IllegalOperation = 20,
    NamespaceNotFound = 26,
    IndexNotFound = 27,
    PathNotViable = 28,
    ConflictingUpdateOperators = 40,
    CursorNotFound = 43,
    NamespaceExists = 48,
    MaxTimeMSExpired = 50,
    Interrupted = 11601,
    InterruptedAtShutdown = 11600,
    OutOfDiskSpace = 14031,
    IndexBuildAborted = 276,
    DollarPrefixedFieldName = 52,
    InvalidIdField = 53,
    NotSingleValueField = 54,
    EmptyFieldName = 56,
    CommandNotFound = 59,
    ImmutableField = 66,
    CannotCreateIndex = 67,
    IndexAlreadyExists = 68,
    InvalidOptions = 72,
    InvalidNamespace = 73,
    NoReplicationEnabled = 76,
    IndexOptionsConflict = 85,
    IndexKeySpecsConflict = 86,
    OperationFailed = 96,
    CommandNotSupported = 115,
    InvalidUuid = 207,
    NotImplemented = 238,
    ChecksumMismatch = 288,
    QueryExceededMemoryLimitNoDiskUseAllowed = 292,
    InvalidIndexSpecificationOption = 197,
    UnsupportedOpQueryCommand = 352,
    InvalidBSON = 22,
    BSONObjectTooLarge = 10334,
    DuplicateKey = 11000,
    Location16410 = 16410,
    Location40414 = 40414,
    IDLUnknownField = 40415,
    Location40621 = 40621,
    Location40324 = 40324,
    InvalidPipelineOperator = 168,
    Location15947 = 15947,
    Location15952 = 15952,
    Location15955 = 15955,
    Location15956 = 15956,
    Location15957 = 15957,
    Location15958 = 15958,
    Location15959 = 15959,
    Location15972 = 15972,
    Location15973 = 15973,
    Location15976 = 15976,
    Location15981 = 15981,
    Location15983 = 15983,
    Location15998 = 15998,
    Location16412 = 16412,
    Location16872 = 16872,
    Location17217 = 17217,
    Location17276 = 17276,
    Location28745 = 28745,
    Location28746 = 28746,
    Location28747 = 28747,
    Location28748 = 28748,
    Location28749 = 28749,
    Location28808 = 28808,
    Location28809 = 28809,
    Location28810 = 28810,
    Location28811 = 28811,
    Location28812 = 28812,
    Location28818 = 28818,
    Location28822 = 28822,
    Location31252 = 31252,
    Location40156 = 40156,
    Location40157 = 40157,
    Location40158 = 40158,
    Location40160 = 40160,
    Location40166 = 40166,
    Location40234 = 40234,
    Location40235 = 40235,
    Location40236 = 40236,
    Location40237 = 40237,
    Location40238 = 40238,
    Location40602 = 40602,
    Location51024 = 51024,
    Location51173 = 51173,
    Location51174 = 51174,
    Location51175 = 51175,
    Location51272 = 51272,
    ClientMetadataCannotBeMutated = 186,
    Unauthorized = 13,
    KeyTooLong = 17280,
    CannotIndexParallelArrays = 171,
    Location15969 = 15969,
    Location31120 = 31120,
    Location31249 = 31249,
    Location31250 = 31250,
    Location31253 = 31253,
    Location31254 = 31254,
    Location40228 = 40228,
    Location40229 = 40229,
    Location40231 = 40231,
    Location40272 = 40272,
    Location40323 = 40323,
    Location51074 = 51074,
    Location51075 = 51075,
    Location51091 = 51091,
    Location51156 = 51156,
    Location5729100 = 5729100,
    Location7749501 = 7749501,
    Location51270 = 51270,
    AuthenticationFailed = 18,
    ProtocolError = 17,
    MechanismUnavailable = 334,
    Location10270 = 10270,
    Location40537 = 40537,
    Location5626701 = 5626701,
    Location5626702 = 5626702,
    Location40571 = 40571,
    Location26823 = 26823,
    Location5739101 = 5739101,
    ExceededMemoryLimit = 146,
    UserNotFound = 11,
    RoleNotFound = 31,
    Location51003 = 51003,
    Location5739000 = 5739000,
    Location5745700 = 5745700,
    Location5745701 = 5745701,
    Location5745702 = 5745702,
    Location5745703 = 5745703,
    ConversionFailure = 241,
    Location16020 = 16020,
    Location28667 = 28667,
    Location16866 = 16866,
    Location16867 = 16867,
    Location16868 = 16868,
    Location16869 = 16869,
    Location16870 = 16870,
    Location16871 = 16871,
    Location51144 = 51144,
    Location16874 = 16874,
    Location16875 = 16875,
    Location16876 = 16876,
    Location16877 = 16877,
    Location10065 = 10065,
    Location16878 = 16878,
    Location16879 = 16879,
    Location16880 = 16880,
    Location16882 = 16882,
    Location16883 = 16883,
    Location28646 = 28646,
    Location28647 = 28647,
    Location28648 = 28648,
    Location28650 = 28650,
    Location28651 = 28651,
    Location327391 = 327391,
    Location327392 = 327392,
    Location40075 = 40075,
    Location40076 = 40076,
    Location40077 = 40077,
    Location40078 = 40078,
    Location40079 = 40079,
    Location40080 = 40080,
    Location31264 = 31264,
    Location40066 = 40066,
    Location40191 = 40191,
    Location40192 = 40192,
    Location40193 = 40193,
    Location40194 = 40194,
    Location40195 = 40195,
    Location40196 = 40196,
    Location40197 = 40197,
    Location40198 = 40198,
    Location40199 = 40199,
    Location40200 = 40200,
    Location40201 = 40201,
    Location40202 = 40202,
    Location40203 = 40203,
    Location40239 = 40239,
    Location40240 = 40240,
    Location40241 = 40241,
    Location40242 = 40242,
    Location40243 = 40243,
    Location40244 = 40244,
    Location40245 = 40245,
    Location40246 = 40246,
    Location40247 = 40247,
    Location40248 = 40248,
    Location40249 = 40249,
    Location40250 = 40250,
    Location40257 = 40257,
    Location40258 = 40258,
    Location40259 = 40259,
    Location40260 = 40260,
    Location40261 = 40261,
    Location40262 = 40262,
    Location4544714 = 4544714,
    Location40400 = 40400,
    Location5787801 = 5787801,
    Location5787900 = 5787900,
    Location5787901 = 5787901,
    Location5787902 = 5787902,
    Location5787903 = 5787903,
    Location5787906 = 5787906,
    Location5787907 = 5787907,
    Location5787908 = 5787908,
    Location5788001 = 5788001,
    Location5788002 = 5788002,
    Location5788003 = 5788003,
    Location5788004 = 5788004,
    Location5788005 = 5788005,
    Location7429703 = 7429703,
    Location7436100 = 7436100,
    Location7750300 = 7750300,
    Location7750301 = 7750301,
    Location7750302 = 7750302,
    Location7750303 = 7750303,
}

/// A failure a client can cause (or an internal one), carrying mongod's code and message.
#[derive(Debug, Clone, PartialEq)]
pub struct Error {
    pub code: ErrorCode,
    pub message: String,
    /// Extra fields mongod adds to this error (e.g. `keyPattern`/`keyValue` for 11000).
    pub extra: Option<Document>,
}

/// Every fallible operation above storage returns this.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
            extra: None,
        }
    }

    pub fn with_extra(mut self, extra: Document) -> Self {
        self.extra = Some(extra);
        self
    }

    pub fn bad_value(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::BadValue, message)
    }

    pub fn failed_to_parse(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::FailedToParse, message)
    }

    pub fn type_mismatch(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::TypeMismatch, message)
    }

    pub fn internal(message: impl Into<String>) -> Self {
        Error::new(ErrorCode::InternalError, message)
    }

    /// A write batch of `got` statements, outside `1..=maxWriteBatchSize` (16 InvalidLength).
    pub fn write_batch_size(got: usize) -> Self {
        Error::new(
            ErrorCode::InvalidLength,
            format!(
                "Write batch sizes must be between 1 and {}. Got {got} operations.",
                crate::protocol::MAX_WRITE_BATCH_SIZE
            ),
        )
    }

    /// The reply document for a failed command: `{ok: 0.0, errmsg, code, codeName, ...extra}`.
    pub fn to_reply(&self) -> Document {
        let mut reply = doc! {
            "ok": 0.0,
            "errmsg": self.message.as_str(),
            "code": self.code.code(),
            "codeName": self.code.name(),
        };
        if let Some(extra) = &self.extra {
            for (key, value) in extra {
                reply.insert(key.clone(), value.clone());
            }
        }
        reply
    }

    /// The write-error entry for operation `index` of a write batch.
    pub fn to_write_error(&self, index: usize) -> Document {
        let mut entry = doc! {
            "index": i32::try_from(index).unwrap_or(i32::MAX),
            "code": self.code.code(),
        };
        if let Some(extra) = &self.extra {
            for (key, value) in extra {
                entry.insert(key.clone(), value.clone());
            }
        }
        entry.insert("errmsg", self.message.as_str());
        entry
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} ({}): {}",
            self.code.name(),
            self.code.code(),
            self.message
        )
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reply_has_mongod_shape() {
        let reply = Error::new(ErrorCode::CommandNotFound, "no such command: 'x'").to_reply();
        assert_eq!(reply.get_f64("ok"), Ok(0.0));
        assert_eq!(reply.get_i32("code"), Ok(59));
        assert_eq!(reply.get_str("codeName"), Ok("CommandNotFound"));
        assert_eq!(reply.get_str("errmsg"), Ok("no such command: 'x'"));
    }

    #[test]
    fn extra_fields_follow_the_code() {
        let err = Error::new(ErrorCode::DuplicateKey, "E11000")
            .with_extra(doc! {"keyPattern": {"_id": 1}, "keyValue": {"_id": 1}});
        let entry = err.to_write_error(3);
        assert_eq!(entry.get_i32("index"), Ok(3));
        assert_eq!(entry.get_i32("code"), Ok(11000));
        assert!(entry.get_document("keyPattern").is_ok());
    }
}
