//! The handles the engine holds: the backend a server runs on ([`Store`], fjall or memory,
//! chosen at start) behind the fault-injecting wrapper (every fault off unless a test turns
//! one on), and that backend's snapshot.
//!
//! Owns: naming the one concrete backend and snapshot type. Does not own: any backend's
//! behaviour (`store`, `faults`), or what the engine keeps in it.

use super::faults::FaultyBackend;
use super::store::{Store, StoreSnapshot};

/// The backend the engine reads and writes; used only through the `storage` traits.
pub type Db = FaultyBackend<Store>;

/// A consistent point-in-time view of [`Db`].
pub type Snap = StoreSnapshot;
