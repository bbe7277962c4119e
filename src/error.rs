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

            /// The code with this number, if the table has it.
            pub fn from_code(code: i32) -> Option<ErrorCode> {
                match code {
                    $($code => Some(ErrorCode::$name),)*
                    _ => None,
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
    UnsupportedFormat = 12,
    TypeMismatch = 14,
    IllegalOperation = 20,
    NamespaceNotFound = 26,
    IndexNotFound = 27,
    PathNotViable = 28,
    ConflictingUpdateOperators = 40,
    CursorNotFound = 43,
    NoMatchingDocument = 47,
    NamespaceExists = 48,
    MaxTimeMSExpired = 50,
    Interrupted = 11601,
    InterruptedAtShutdown = 11600,
    OutOfDiskSpace = 14031,
    InvalidResumeToken = 260,
    IndexBuildAborted = 276,
    ChangeStreamFatalError = 280,
    ChangeStreamHistoryLost = 286,
    Location40573 = 40573,
    Location40674 = 40674,
    DollarPrefixedFieldName = 52,
    InvalidIdField = 53,
    NotSingleValueField = 54,
    EmptyFieldName = 56,
    CommandNotFound = 59,
    ShardKeyNotFound = 61,
    ImmutableField = 66,
    CannotCreateIndex = 67,
    IndexAlreadyExists = 68,
    InvalidOptions = 72,
    InvalidNamespace = 73,
    NoReplicationEnabled = 76,
    AlreadyInitialized = 23,
    UnknownReplWriteConcern = 79,
    UnsatisfiableWriteConcern = 100,
    NewReplicaSetConfigurationIncompatible = 103,
    ExceededTimeLimit = 262,
    Location31368 = 31368,
    Location31372 = 31372,
    Location31382 = 31382,
    IndexOptionsConflict = 85,
    IndexKeySpecsConflict = 86,
    IncompatibleCollationVersion = 95,
    OperationFailed = 96,
    CommandNotSupported = 115,
    InvalidUuid = 207,
    IncompleteTransactionHistory = 217,
    TransactionTooOld = 225,
    TooManyLogicalSessions = 261,
    NotImplemented = 238,
    ChecksumMismatch = 288,
    QueryExceededMemoryLimitNoDiskUseAllowed = 292,
    InvalidIndexSpecificationOption = 197,
    QueryFeatureNotAllowed = 224,
    UnsupportedOpQueryCommand = 352,
    InvalidBSON = 22,
    BSONObjectTooLarge = 10334,
    DuplicateKey = 11000,
    RequestRateTooLarge = 16500,
    Location50841 = 50841,
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
    Location16411 = 16411,
    Location16412 = 16412,
    Location40352 = 40352,
    Location40353 = 40353,
    Location40159 = 40159,
    Location9534700 = 9534700,
    Location16872 = 16872,
    Location16764 = 16764,
    Location16766 = 16766,
    Location31303 = 31303,
    Location17217 = 17217,
    Location17276 = 17276,
    Location28745 = 28745,
    Location28746 = 28746,
    Location28747 = 28747,
    Location28748 = 28748,
    Location28749 = 28749,
    Location28803 = 28803,
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
    QueryPlanKilled = 175,
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
    Location51108 = 51108,
    Location51109 = 51109,
    Location51110 = 51110,
    Location51111 = 51111,
    Location51156 = 51156,
    Location5729100 = 5729100,
    Location7749501 = 7749501,
    Location51270 = 51270,
    Location31255 = 31255,
    Location31256 = 31256,
    Location31257 = 31257,
    Location31258 = 31258,
    Location31259 = 31259,
    Location31270 = 31270,
    Location31271 = 31271,
    Location31272 = 31272,
    Location31273 = 31273,
    Location31274 = 31274,
    Location31275 = 31275,
    Location31276 = 31276,
    Location31277 = 31277,
    Location31287 = 31287,
    Location31308 = 31308,
    Location31310 = 31310,
    Location31324 = 31324,
    Location51050 = 51050,
    Location51246 = 51246,
    Location51247 = 51247,
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
    Location40100 = 40100,
    Location40101 = 40101,
    Location40102 = 40102,
    Location40103 = 40103,
    Location40104 = 40104,
    Location40105 = 40105,
    Location40185 = 40185,
    Location40186 = 40186,
    Location17053 = 17053,
    Location16990 = 16990,
    Location17385 = 17385,
    Location51178 = 51178,
    Location51182 = 51182,
    Location51134 = 51134,
    Location51186 = 51186,
    Location51199 = 51199,
    Location51132 = 51132,
    Location51185 = 51185,
    Location51183 = 51183,
    Location13113 = 13113,
    Location40601 = 40601,
    Location4570 = 4570,
    Location40319 = 40319,
    Location4568 = 4568,
    Location51047 = 51047,
    Location40600 = 40600,
    Location40169 = 40169,
    Location40170 = 40170,
    Location40171 = 40171,
    Location40172 = 40172,
    Location4031700 = 4031700,
    Location5858203 = 5858203,
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
    Location16007 = 16007,
    Location16034 = 16034,
    Location16035 = 16035,
    Location16493 = 16493,
    Location16702 = 16702,
    Location17040 = 17040,
    Location17041 = 17041,
    Location17042 = 17042,
    Location17043 = 17043,
    Location17044 = 17044,
    Location17045 = 17045,
    Location17046 = 17046,
    Location17047 = 17047,
    Location17048 = 17048,
    Location17049 = 17049,
    Location17124 = 17124,
    Location28656 = 28656,
    Location28657 = 28657,
    Location28664 = 28664,
    Location28689 = 28689,
    Location28690 = 28690,
    Location28691 = 28691,
    Location28724 = 28724,
    Location28725 = 28725,
    Location28726 = 28726,
    Location28727 = 28727,
    Location28728 = 28728,
    Location28729 = 28729,
    Location31022 = 31022,
    Location31023 = 31023,
    Location31024 = 31024,
    Location34435 = 34435,
    Location34443 = 34443,
    Location34444 = 34444,
    Location34445 = 34445,
    Location34446 = 34446,
    Location34447 = 34447,
    Location34448 = 34448,
    Location34449 = 34449,
    Location34450 = 34450,
    Location34451 = 34451,
    Location34452 = 34452,
    Location34453 = 34453,
    Location34454 = 34454,
    Location34455 = 34455,
    Location34460 = 34460,
    Location34461 = 34461,
    Location34462 = 34462,
    Location34463 = 34463,
    Location34464 = 34464,
    Location34465 = 34465,
    Location34466 = 34466,
    Location34467 = 34467,
    Location34468 = 34468,
    Location34470 = 34470,
    Location34471 = 34471,
    Location34472 = 34472,
    Location34473 = 34473,
    Location40081 = 40081,
    Location40085 = 40085,
    Location40086 = 40086,
    Location40087 = 40087,
    Location40090 = 40090,
    Location40091 = 40091,
    Location40092 = 40092,
    Location40093 = 40093,
    Location40094 = 40094,
    Location40096 = 40096,
    Location40097 = 40097,
    Location40386 = 40386,
    Location40390 = 40390,
    Location40391 = 40391,
    Location40392 = 40392,
    Location40393 = 40393,
    Location40394 = 40394,
    Location40395 = 40395,
    Location40396 = 40396,
    Location40397 = 40397,
    Location40398 = 40398,
    Location50694 = 50694,
    Location50695 = 50695,
    Location50696 = 50696,
    Location50699 = 50699,
    Location50700 = 50700,
    Location50736 = 50736,
    Location50737 = 50737,
    Location50738 = 50738,
    Location50752 = 50752,
    NotARetryableWriteCommand = 50768,
    Location51103 = 51103,
    Location51104 = 51104,
    Location51105 = 51105,
    Location51106 = 51106,
    Location51107 = 51107,
    Location51151 = 51151,
    Location51744 = 51744,
    Location51745 = 51745,
    Location51746 = 51746,
    Location51747 = 51747,
    Location51748 = 51748,
    Location51749 = 51749,
    Location51750 = 51750,
    Location51751 = 51751,
    Location2942500 = 2942500,
    Location2942501 = 2942501,
    Location2942502 = 2942502,
    Location2942503 = 2942503,
    Location2942504 = 2942504,
    Location2942505 = 2942505,
    Location2942506 = 2942506,
    Location2942507 = 2942507,
    Location3041701 = 3041701,
    Location3041702 = 3041702,
    Location3041703 = 3041703,
    Location4161100 = 4161100,
    Location4161101 = 4161101,
    Location4161102 = 4161102,
    Location4161103 = 4161103,
    Location4161105 = 4161105,
    Location4161106 = 4161106,
    Location4161107 = 4161107,
    Location4161108 = 4161108,
    Location4161109 = 4161109,
    Location4940400 = 4940400,
    Location4940401 = 4940401,
    Location5654600 = 5654600,
    Location5654601 = 5654601,
    Location5654602 = 5654602,
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
    Location5788200 = 5788200,
    Location6716200 = 6716200,
    Location28680 = 28680,
    Location16612 = 16612,
    Location5733415 = 5733415,
    Location16610 = 16610,
    Location16611 = 16611,
    Location28765 = 28765,
    Location28766 = 28766,
    Location28756 = 28756,
    Location28757 = 28757,
    Location28758 = 28758,
    Location28759 = 28759,
    Location28761 = 28761,
    Location28762 = 28762,
    Location28763 = 28763,
    Location28764 = 28764,
    Location28714 = 28714,
    Location51080 = 51080,
    Location51081 = 51081,
    Location51082 = 51082,
    Location51083 = 51083,
    Location17080 = 17080,
    Location17081 = 17081,
    Location17082 = 17082,
    Location17083 = 17083,
    Location1257300 = 1257300,
    Location40060 = 40060,
    Location40061 = 40061,
    Location40062 = 40062,
    Location40063 = 40063,
    Location40064 = 40064,
    Location40065 = 40065,
    Location40067 = 40067,
    Location40068 = 40068,
    Location50989 = 50989,
    Location51044 = 51044,
    Location51045 = 51045,
    Location50723 = 50723,
    Location31393 = 31393,
    Location51276 = 51276,
    Location5687301 = 5687301,
    Location5687302 = 5687302,
    Location17307 = 17307,
    Location17308 = 17308,
    Location3040501 = 3040501,
    Location7750300 = 7750300,
    Location7750301 = 7750301,
    Location7750302 = 7750302,
    Location7750303 = 7750303,
    Location7436200 = 7436200,
    Location7436201 = 7436201,
    Location31260 = 31260,
    Location31261 = 31261,
    Location31262 = 31262,
    Location31263 = 31263,
    Location31418 = 31418,
    Location31419 = 31419,
    Location31432 = 31432,
    Location16004 = 16004,
    Location31109 = 31109,
    Location40218 = 40218,
    Location16006 = 16006,
    Location18533 = 18533,
    Location18534 = 18534,
    Location18535 = 18535,
    Location18536 = 18536,
    Location18537 = 18537,
    Location18628 = 18628,
    Location18629 = 18629,
    Location31034 = 31034,
    Location31095 = 31095,
    Location40485 = 40485,
    Location40489 = 40489,
    Location40515 = 40515,
    Location40516 = 40516,
    Location40517 = 40517,
    Location40518 = 40518,
    Location40519 = 40519,
    Location40520 = 40520,
    Location40521 = 40521,
    Location40522 = 40522,
    Location40523 = 40523,
    Location40524 = 40524,
    Location40525 = 40525,
    Location40533 = 40533,
    Location40535 = 40535,
    Location40536 = 40536,
    Location40539 = 40539,
    Location40540 = 40540,
    Location40541 = 40541,
    Location40542 = 40542,
    Location40684 = 40684,
    Location5166301 = 5166301,
    Location5166302 = 5166302,
    Location5166303 = 5166303,
    Location5166304 = 5166304,
    Location5166305 = 5166305,
    Location5166307 = 5166307,
    Location5166308 = 5166308,
    Location5166400 = 5166400,
    Location5166401 = 5166401,
    Location5166402 = 5166402,
    Location5166403 = 5166403,
    Location5166404 = 5166404,
    Location5166405 = 5166405,
    Location5166406 = 5166406,
    Location5439000 = 5439000,
    Location5439001 = 5439001,
    Location5439002 = 5439002,
    Location5439006 = 5439006,
    Location5439007 = 5439007,
    Location5439008 = 5439008,
    Location5439009 = 5439009,
    Location5439010 = 5439010,
    Location5439012 = 5439012,
    Location5439013 = 5439013,
    Location5439014 = 5439014,
    Location5439015 = 5439015,
    Location5439016 = 5439016,
    Location5439017 = 5439017,
    Location5439018 = 5439018,
    Location5976500 = 5976500,
    Location6045000 = 6045000,
    Location605001 = 605001,
    Location5339900 = 5339900,
    Location5339901 = 5339901,
    Location5339902 = 5339902,
    Location5371601 = 5371601,
    Location5371602 = 5371602,
    Location5371603 = 5371603,
    Location5414201 = 5414201,
    Location5423900 = 5423900,
    Location5423901 = 5423901,
    Location5423902 = 5423902,
    Location5429413 = 5429413,
    Location5429414 = 5429414,
    Location5429513 = 5429513,
    Location5490710 = 5490710,
    Location5624900 = 5624900,
    Location5624901 = 5624901,
    Location5624902 = 5624902,
    Location5624903 = 5624903,
    Location5733201 = 5733201,
    Location5733401 = 5733401,
    Location5733402 = 5733402,
    Location5733403 = 5733403,
    Location5733404 = 5733404,
    Location5733405 = 5733405,
    Location5733406 = 5733406,
    Location5733408 = 5733408,
    Location5733409 = 5733409,
    Location5733410 = 5733410,
    Location5876900 = 5876900,
    Location5897900 = 5897900,
    Location5946800 = 5946800,
    Location5946802 = 5946802,
    Location6050106 = 6050106,
    Location6050200 = 6050200,
    Location6050201 = 6050201,
    Location6050202 = 6050202,
    Location6050203 = 6050203,
    Location6050204 = 6050204,
    Location6307900 = 6307900,
    Location6586400 = 6586400,
    Location8947401 = 8947401,
    Location5642403 = 5642403,
    // Codes of a replica set, a network or a sharded cluster that a standalone never returns on
    // its own but a `failCommand` fail point may be told to (drivers' retry tests use them).
    HostUnreachable = 6,
    HostNotFound = 7,
    UnknownError = 8,
    LockTimeout = 24,
    ManualInterventionRequired = 51,
    WriteConcernFailed = 64,
    NetworkTimeout = 89,
    ShutdownInProgress = 91,
    WriteConflict = 112,
    DocumentValidationFailure = 121,
    NotAReplicaSet = 123,
    FailedToSatisfyReadPreference = 133,
    ReadConcernMajorityNotAvailableYet = 134,
    StaleEpoch = 150,
    PrimarySteppedDown = 189,
    ElectionInProgress = 216,
    RetryChangeStream = 234,
    SnapshotUnavailable = 246,
    NoSuchTransaction = 251,
    FailPointSetFailed = 266,
    PreparedTransactionInProgress = 267,
    ReauthenticationRequired = 391,
    // Multi-document transactions.
    ConflictingOperationInProgress = 117,
    TransactionCommitted = 256,
    OperationNotSupportedInTransaction = 263,
    SocketException = 9001,
    NotWritablePrimary = 10107,
    InterruptedDueToReplStateChange = 11602,
    NotPrimaryNoSecondaryOk = 13435,
    NotPrimaryOrSecondary = 13436,
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

    /// Client bytes that are not valid BSON (22 InvalidBSON).
    pub fn invalid_bson(reason: bson::raw::Error) -> Self {
        Error::new(ErrorCode::InvalidBSON, format!("invalid BSON: {reason}"))
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

/// A lock a thread panicked while holding fails the command that needed it (1 InternalError),
/// naming the lock.
impl From<crate::sync::Poisoned> for Error {
    fn from(poisoned: crate::sync::Poisoned) -> Self {
        Error::internal(poisoned.to_string())
    }
}

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

    #[test]
    fn a_poisoned_lock_is_an_internal_error_naming_the_lock() {
        let lock = std::sync::RwLock::new(());
        let _ = std::thread::scope(|s| {
            s.spawn(|| {
                let _held = lock.write().unwrap();
                std::panic::resume_unwind(Box::new("a bug while holding the lock"));
            })
            .join()
        });
        let err = Error::from(crate::sync::read(&lock, "test error catalog").unwrap_err());
        let reply = err.to_reply();
        assert_eq!(reply.get_i32("code"), Ok(1));
        assert_eq!(reply.get_str("codeName"), Ok("InternalError"));
        assert_eq!(
            reply.get_str("errmsg"),
            Ok(
                "the test error catalog lock is poisoned: a thread panicked while holding it; \
                restart the server"
            )
        );
    }
}
