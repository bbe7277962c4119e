//! Work the engine does on its own threads, through the writer and paced behind clients: the
//! TTL reaper (`reaper`), the sweep of dropped collections' and indexes' entries (`sweep`), and
//! index builds (`index_build`) and what they show of their progress (`progress`).

pub mod index_build;
pub mod progress;
pub mod reaper;
pub mod sweep;
