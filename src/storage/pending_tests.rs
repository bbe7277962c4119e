use super::*;
use proptest::prelude::*;

fn key() -> impl Strategy<Value = Vec<u8>> {
    prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 7, 0xfe, 0xff]), 1..4)
}

fn bound() -> impl Strategy<Value = Bound<Vec<u8>>> {
    let probe = prop::collection::vec(prop::sample::select(vec![0u8, 1, 2, 7, 0xff]), 0..4);
    prop_oneof![
        Just(Bound::Unbounded),
        probe.clone().prop_map(Bound::Included),
        probe.prop_map(Bound::Excluded),
    ]
}

/// A batch of writes: keys in ascending order (as a bulk insert writes them) or in any order.
fn batch() -> impl Strategy<Value = Vec<(Vec<u8>, Write)>> {
    let write = prop::option::of(prop::collection::vec(any::<u8>(), 0..2));
    prop_oneof![
        prop::collection::btree_map(key(), write.clone(), 0..80)
            .prop_map(|sorted| sorted.into_iter().collect::<Vec<_>>()),
        prop::collection::vec((key(), write), 0..20),
    ]
}

fn as_slices(bound: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    bound.as_ref().map(Vec::as_slice)
}

/// Whether `key` is between the bounds.
fn within(key: &Vec<u8>, start: &Bound<Vec<u8>>, end: &Bound<Vec<u8>>) -> bool {
    std::ops::RangeBounds::<Vec<u8>>::contains(&(start.as_ref(), end.as_ref()), key)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Pending writes read as a `BTreeMap` of the same writes does: the last write of a key
    /// wins, point reads, ranges in both directions and the consumed order agree, and the
    /// unordered consumption holds the same writes, whichever runs and map the writes were
    /// spread over.
    #[test]
    fn pending_writes_read_as_a_map_of_them(
        batches in prop::collection::vec(batch(), 1..16),
        ranges in prop::collection::vec((bound(), bound(), any::<bool>()), 1..8),
        probes in prop::collection::vec(key(), 0..16),
    ) {
        let mut pending = Pending::default();
        let mut model: BTreeMap<Vec<u8>, Write> = BTreeMap::new();
        for batch in batches {
            // Announced or not, and truly ascending or not: room is only a hint.
            if batch.len() % 3 == 0 {
                pending.reserve(batch.len());
            }
            for (key, write) in batch {
                pending.insert(key.clone(), write.clone());
                model.insert(key, write);
            }
            prop_assert!(pending.runs.len() <= MAX_CLOSED_RUNS + 1);
        }
        prop_assert_eq!(pending.len(), model.len());
        prop_assert_eq!(pending.is_empty(), model.is_empty());
        for key in model.keys().chain(&probes) {
            prop_assert_eq!(pending.get(key), model.get(key));
        }
        let all: Vec<_> = pending.iter().map(|(k, w)| (k.clone(), w.clone())).collect();
        let want: Vec<_> = model.clone().into_iter().collect();
        prop_assert_eq!(&all, &want);
        for (start, end, reverse) in ranges {
            let got: Vec<_> = pending
                .range((as_slices(&start), as_slices(&end)), reverse)
                .map(|(k, w)| (k.clone(), w.clone()))
                .collect();
            let mut expected: Vec<_> = want
                .iter()
                .filter(|(k, _)| within(k, &start, &end))
                .cloned()
                .collect();
            if reverse {
                expected.reverse();
            }
            prop_assert_eq!(got, expected);
        }
        let runs: Vec<Vec<_>> = pending.clone().into_runs().collect();
        for run in &runs {
            prop_assert!(run.windows(2).all(|pair| pair[0].0 < pair[1].0), "a run ascends");
        }
        let mut unordered: Vec<_> = runs.into_iter().flatten().collect();
        unordered.sort();
        prop_assert_eq!(&unordered, &want, "each key once, with its last write");
        prop_assert_eq!(pending.into_iter().collect::<Vec<_>>(), want);
    }
}

/// Batches of ascending keys are kept as runs, not in the map, and many of them are merged so
/// that a read checks a bounded number of runs.
#[test]
fn ascending_batches_become_runs() {
    let mut pending = Pending::default();
    for batch in (0..20u8).rev() {
        for i in 0..100u8 {
            pending.insert(vec![batch, i], Some(vec![i]));
        }
    }
    assert!(pending.map.is_empty());
    assert!(pending.runs.len() <= MAX_CLOSED_RUNS + 1);
    assert_eq!(pending.len(), 2000);
    assert_eq!(pending.get(&[3, 42]), Some(&Some(vec![42])));
    let keys: Vec<_> = pending.keys().cloned().collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
}

/// Announced writes go into room made for them at once, whether they open a run or extend the
/// open one.
#[test]
fn announced_writes_need_no_growth() {
    let mut pending = Pending::default();
    for batch in [2u8, 3, 1] {
        pending.reserve(1000);
        for i in 0..1000u16 {
            pending.insert([&[batch][..], &i.to_be_bytes()].concat(), None);
        }
    }
    // Batch 3 extended batch 2's run; batch 1 opened one of its own.
    let capacities: Vec<(usize, usize)> = pending
        .runs
        .iter()
        .map(|run| (run.len(), run.capacity()))
        .collect();
    assert_eq!(capacities, [(2000, 2000), (1000, 1000)]);
    // A run opened by a write announced by no one starts as small as it can.
    pending.insert(vec![0], None);
    assert_eq!(pending.runs.last().map(Vec::capacity), Some(1));
    pending.reserve(10);
    pending.insert(vec![9], None);
    assert!(pending.runs.last().is_some_and(|run| run.capacity() >= 11));
    assert_eq!(pending.len(), 3002);
}

/// Keys in no order go into the map once the open run is short, instead of making a run each.
#[test]
fn keys_in_no_order_go_into_the_map() {
    let mut pending = Pending::default();
    for key in [50u8, 10, 40, 20, 30, 5, 60] {
        pending.insert(vec![key], None);
    }
    assert_eq!(pending.runs.len(), 1);
    assert_eq!(pending.map.len(), 5);
    assert_eq!(pending.len(), 7);
}

/// A key in two sources (which the invariant rules out) does not stop a merge: both come out.
#[test]
fn a_merge_ends_even_with_a_key_in_two_sources() {
    let a: Vec<Entry> = vec![(vec![1], None), (vec![3], None)];
    let b: Vec<Entry> = vec![(vec![1], Some(vec![9])), (vec![2], None)];
    let merged: Vec<Vec<u8>> = Merge::new(vec![a.into_iter(), b.into_iter()], false)
        .map(|(key, _)| key)
        .collect();
    assert_eq!(merged, vec![vec![1], vec![1], vec![2], vec![3]]);
}
