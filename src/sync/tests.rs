use super::*;
use std::sync::Arc;

/// A lock a thread panicked while holding, as a bug in a blocking thread leaves it.
fn poisoned_mutex<T: Send + 'static>(value: T) -> Arc<Mutex<T>> {
    let mutex = Arc::new(Mutex::new(value));
    let held = Arc::clone(&mutex);
    let _ = std::thread::spawn(move || {
        let _guard = held.lock().unwrap();
        std::panic::resume_unwind(Box::new("a bug while holding the lock"));
    })
    .join();
    assert!(mutex.is_poisoned());
    mutex
}

fn poisoned_rwlock<T: Send + Sync + 'static>(value: T) -> Arc<RwLock<T>> {
    let lock = Arc::new(RwLock::new(value));
    let held = Arc::clone(&lock);
    let _ = std::thread::spawn(move || {
        let _guard = held.write().unwrap();
        std::panic::resume_unwind(Box::new("a bug while holding the lock"));
    })
    .join();
    assert!(lock.is_poisoned());
    lock
}

/// The count of one lock (tests use a name of their own: the counts are the process's).
fn count_of(name: &str) -> u64 {
    poisoned_by_lock()
        .into_iter()
        .find(|(n, _)| *n == name)
        .map_or(0, |(_, n)| n)
}

#[test]
fn a_healthy_lock_is_taken_and_not_counted() {
    let mutex = Mutex::new(1);
    let rw = RwLock::new(2);
    assert_eq!(*lock(&mutex, "test healthy").unwrap(), 1);
    assert_eq!(*read(&rw, "test healthy").unwrap(), 2);
    *write(&rw, "test healthy").unwrap() = 3;
    assert_eq!(*read_recovering(&rw, "test healthy"), 3);
    assert_eq!(*lock_recovering(&mutex, "test healthy"), 1);
    assert_eq!(count_of("test healthy"), 0);
}

#[test]
fn a_poisoned_lock_under_the_error_policy_is_refused_with_its_name() {
    let mutex = poisoned_mutex(vec![1, 2]);
    let rw = poisoned_rwlock(5);
    let cases: [(&str, Result<(), Poisoned>); 3] = [
        (
            "test refused mutex",
            lock(&mutex, "test refused mutex").map(drop),
        ),
        (
            "test refused read",
            read(&rw, "test refused read").map(drop),
        ),
        (
            "test refused write",
            write(&rw, "test refused write").map(drop),
        ),
    ];
    for (name, result) in cases {
        let refused = result.unwrap_err();
        assert_eq!(refused.lock(), name);
        assert_eq!(
            refused.to_string(),
            format!(
                "the {name} lock is poisoned: a thread panicked while holding it; \
                 restart the server"
            )
        );
        assert_eq!(count_of(name), 1, "{name}");
    }
    // Poison lasts: the next try is refused and counted again.
    assert!(lock(&mutex, "test refused mutex").is_err());
    assert_eq!(count_of("test refused mutex"), 2);
}

#[test]
fn a_poisoned_lock_under_the_recover_policy_gives_the_value_and_is_counted() {
    let mutex = poisoned_mutex(7);
    let rw = poisoned_rwlock(String::from("kept"));
    let before = poisoned_total();
    assert_eq!(*lock_recovering(&mutex, "test recovered mutex"), 7);
    assert_eq!(*read_recovering(&rw, "test recovered rw"), "kept");
    write_recovering(&rw, "test recovered rw").push('!');
    assert_eq!(*read_recovering(&rw, "test recovered rw"), "kept!");
    assert_eq!(count_of("test recovered mutex"), 1);
    assert_eq!(count_of("test recovered rw"), 3);
    // Other tests count too, concurrently: at least these four.
    assert!(poisoned_total() >= before + 4);
}

#[test]
fn occurrences_logged_are_the_powers_of_two() {
    let cases = [
        (0, false),
        (1, true),
        (2, true),
        (3, false),
        (4, true),
        (5, false),
        (7, false),
        (8, true),
        (9, false),
        (1024, true),
        (1025, false),
        (u64::MAX, false),
    ];
    for (occurrences, logged) in cases {
        assert_eq!(worth_logging(occurrences), logged, "{occurrences}");
    }
}

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn a_poisoned_lock_logs_one_error_line_per_power_of_two_naming_the_lock() {
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    let mutex = poisoned_mutex(());
    tracing::subscriber::with_default(subscriber, || {
        for _ in 0..10 {
            assert!(lock(&mutex, "test logged").is_err());
        }
    });
    let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    for (line, occurrences) in lines.iter().zip([1, 2, 4, 8]) {
        assert!(line.contains("ERROR"), "{line}");
        assert!(line.contains("Lock poisoned"), "{line}");
        assert!(line.contains("lock=\"test logged\""), "{line}");
        assert!(
            line.contains(&format!("occurrences={occurrences} ")),
            "{line}"
        );
    }
    assert_eq!(count_of("test logged"), 10);
}
