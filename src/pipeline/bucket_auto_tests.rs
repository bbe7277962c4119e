use super::*;
use crate::engine::exec::spill::open_files_under;
use crate::error::ErrorCode;

/// 3,000 documents whose `g` has ties, missing values and mixed types; `n` is a non-negative
/// number (for granularity).
fn input() -> Vec<Document> {
    (0..3000i32)
        .map(|i| {
            let mut d = doc! {"_id": i, "n": f64::from((i * 37) % 1001) / 10.0};
            match i % 6 {
                0 => {}
                1 => {
                    d.insert("g", format!("s{}", i % 11));
                }
                2 => {
                    d.insert("g", Bson::Null);
                }
                3 => {
                    d.insert("g", f64::from(i % 50) + 0.5);
                }
                _ => {
                    d.insert("g", (i * 7) % 97);
                }
            }
            d
        })
        .collect()
}

fn stage(spec: Document) -> BucketAuto {
    BucketAuto::parse(&Bson::Document(spec), &Variables::default()).unwrap()
}

fn run(
    stage: BucketAuto,
    docs: Vec<Document>,
    disk: bool,
    dir: Option<&SpillDir>,
) -> Result<Vec<Document>> {
    let rows: Rows = Box::new(docs.into_iter().map(|d| Ok(Row::computed(d))));
    let limits = StageLimits {
        allow_disk_use: disk,
        ..StageLimits::default()
    };
    stage
        .apply(rows, &limits, dir)?
        .map(|r| r.map(|r| r.doc))
        .collect()
}

#[test]
fn spilled_buckets_are_the_buckets_cut_in_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = SpillDir::open(tmp.path()).unwrap();
    let output = doc! {"count": {"$sum": 1}, "ids": {"$push": "$_id"}, "first": {"$first": "$n"}};
    let specs = [
        doc! {"groupBy": "$g", "buckets": 7, "output": output.clone()},
        doc! {"groupBy": "$g", "buckets": 1},
        doc! {"groupBy": "$g", "buckets": 5000, "output": output.clone()},
        doc! {"groupBy": "$n", "buckets": 9, "granularity": "R20", "output": output.clone()},
        doc! {"groupBy": "$n", "buckets": 4, "granularity": "POWERSOF2"},
        doc! {"groupBy": {"$mod": ["$_id", 10]}, "buckets": 3, "output": output},
    ];
    for spec in specs {
        let held = run(stage(spec.clone()), input(), false, None).unwrap();
        let spilled = run(
            stage(spec.clone()).with_limit(200_000),
            input(),
            true,
            Some(&dir),
        )
        .unwrap();
        assert!(!held.is_empty());
        assert_eq!(spilled, held, "{spec}");
    }
    assert_eq!(open_files_under(&tmp.path().join("_tmp")), 0);
}

#[test]
fn past_its_budget_bucket_auto_needs_allow_disk_use() {
    let spec = doc! {"groupBy": "$g", "buckets": 3};
    let err = run(stage(spec).with_limit(20_000), input(), false, None).unwrap_err();
    assert_eq!(
        err.code,
        ErrorCode::QueryExceededMemoryLimitNoDiskUseAllowed
    );
    assert!(err.message.ends_with(
        "Exceeded memory limit for $bucketAuto, but didn't allow external sort. Pass \
         allowDiskUse:true to opt in."
    ));
}

#[test]
fn one_bucket_past_the_budget_fails_even_spilled() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = SpillDir::open(tmp.path()).unwrap();
    let spec = doc! {"groupBy": "$g", "buckets": 1, "output": {"all": {"$push": "$$ROOT"}}};
    let err = run(stage(spec).with_limit(20_000), input(), true, Some(&dir)).unwrap_err();
    assert_eq!(err.code, ErrorCode::ExceededMemoryLimit);
    assert_eq!(open_files_under(&tmp.path().join("_tmp")), 0);
}

#[test]
fn an_interrupted_input_leaves_no_spill_file_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = SpillDir::open(tmp.path()).unwrap();
    let rows: Rows = Box::new(input().into_iter().enumerate().map(|(i, d)| {
        if i == 2500 {
            return Err(crate::error::Error::new(
                ErrorCode::Interrupted,
                "operation was interrupted",
            ));
        }
        Ok(Row::computed(d))
    }));
    let limits = StageLimits {
        allow_disk_use: true,
        ..StageLimits::default()
    };
    let spec = doc! {"groupBy": "$g", "buckets": 3};
    let err = stage(spec)
        .with_limit(20_000)
        .apply(rows, &limits, Some(&dir))
        .err()
        .unwrap();
    assert_eq!(err.code, ErrorCode::Interrupted);
    assert_eq!(open_files_under(&tmp.path().join("_tmp")), 0);
}
