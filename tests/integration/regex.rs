//! `$regex` through the driver, as mongod runs it on PCRE2: inline options, Unicode properties,
//! backreferences, lookbehind and named groups select the documents they should; a bad
//! pattern, a bad option letter and a runaway match are mongod's errors.

use crate::common;

use common::bson::{doc, Bson, Document, Regex};
use common::{error_code, TestServer};
use futures::TryStreamExt;
use mongodb::Collection;

async fn seeded(server: &TestServer) -> Collection<Document> {
    let coll: Collection<Document> = server.client().await.database("test").collection("re");
    let words = [
        "Apple",
        "apple pie",
        "Grüße",
        "abc1",
        "aa",
        "ab",
        "me@example.com",
        "example.org",
        "2024-05",
        "line one\nline two",
    ];
    let docs: Vec<Document> = words
        .iter()
        .enumerate()
        .map(|(i, w)| doc! {"_id": i as i32, "s": *w})
        .collect();
    coll.insert_many(docs).await.unwrap();
    coll
}

async fn ids(coll: &Collection<Document>, filter: Document) -> Vec<i32> {
    let found: Vec<Document> = coll
        .find(filter.clone())
        .sort(doc! {"_id": 1})
        .await
        .unwrap()
        .try_collect()
        .await
        .unwrap_or_else(|e| panic!("{filter}: {e}"));
    found.iter().map(|d| d.get_i32("_id").unwrap()).collect()
}

fn regex(pattern: &str, options: &str) -> Bson {
    Bson::RegularExpression(Regex {
        pattern: pattern.into(),
        options: options.into(),
    })
}

#[tokio::test]
async fn pcre2_features_select_the_right_documents() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let cases: Vec<(Document, Vec<i32>)> = vec![
        (doc! {"s": {"$regex": "(?i)^apple"}}, vec![0, 1]),
        (doc! {"s": {"$regex": "^apple"}}, vec![1]),
        (
            doc! {"s": {"$regex": "^APPLE", "$options": "i"}},
            vec![0, 1],
        ),
        (doc! {"s": regex("^APPLE$", "i")}, vec![0]),
        (doc! {"s": {"$regex": "^\\p{L}+$"}}, vec![0, 2, 4, 5]),
        (doc! {"s": {"$regex": "^(\\w)\\1$"}}, vec![4]),
        (doc! {"s": {"$regex": "(?<=@)example"}}, vec![6]),
        (doc! {"s": {"$regex": "(?<!@)example"}}, vec![7]),
        (
            doc! {"s": {"$regex": "^(?<year>\\d{4})-(?<month>\\d\\d)$"}},
            vec![8],
        ),
        (
            doc! {"s": {"$regex": "^line two", "$options": "m"}},
            vec![9],
        ),
        (doc! {"s": {"$regex": "one.line", "$options": "s"}}, vec![9]),
        (doc! {"s": {"$in": [regex("^ab", ""), "aa"]}}, vec![3, 4, 5]),
        (doc! {"s": {"$not": regex("[a-z]", "i")}}, vec![8]),
    ];
    for (filter, expected) in cases {
        assert_eq!(ids(&coll, filter.clone()).await, expected, "{filter}");
    }
}

#[tokio::test]
async fn bad_patterns_and_options_are_mongods_errors() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let cases: Vec<(Document, i32, &str)> = vec![
        (
            doc! {"s": {"$regex": "a("}},
            51091,
            "Regular expression is invalid: missing closing parenthesis",
        ),
        (
            doc! {"s": {"$regex": "(?<=a+)b"}},
            51091,
            "Regular expression is invalid: length of lookbehind assertion is not limited",
        ),
        (
            doc! {"s": {"$regex": "a", "$options": "q"}},
            51108,
            " invalid flag in regex options: q",
        ),
        (
            doc! {"s": regex("a", "iz")},
            51108,
            " invalid flag in regex options: z",
        ),
        (
            doc! {"s": {"$regex": "a\u{0}b"}},
            2,
            "Regular expression cannot contain an embedded null byte",
        ),
    ];
    for (filter, code, message) in cases {
        let err = coll.find_one(filter.clone()).await.unwrap_err();
        assert_eq!(error_code(&err), Some(code), "{filter}: {err}");
        assert!(err.to_string().contains(message), "{filter}: {err}");
    }
}

#[tokio::test]
async fn a_runaway_match_is_51156_not_a_mismatch() {
    let server = TestServer::start().await;
    let coll = seeded(&server).await;
    let runaway: Collection<Document> =
        server.client().await.database("test").collection("runaway");
    runaway
        .insert_one(doc! {"s": format!("{}b", "a".repeat(30))})
        .await
        .unwrap();
    let err = runaway
        .find_one(doc! {"s": {"$regex": "(a+)+$"}})
        .await
        .unwrap_err();
    assert_eq!(error_code(&err), Some(51156), "{err}");
    assert!(
        err.to_string().contains(
            "Error occurred while executing the regular expression in $regex. Result code: \
             match limit exceeded"
        ),
        "{err}"
    );
    // The server goes on answering, the same pattern included where it can decide.
    assert_eq!(ids(&coll, doc! {"s": {"$regex": "^(a+)+$"}}).await, vec![4]);
}
