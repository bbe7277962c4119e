//! mayfly's integration tests, one module per area, in one test binary: each module starts
//! servers in this process and drives them through the `mongodb` crate (or raw wire messages).
//! One binary links the server once, where a binary per file linked it once per file.
//!
//! Four areas keep binaries of their own (`tests/*.rs`), because they read what belongs to the
//! whole process: the log capture (a process has one global subscriber: `auth_scram`,
//! `legacy_opcodes`, `replica_set_monitoring`) and the peak resident set (`limits`).

#[path = "../common/mod.rs"]
mod common;

mod aggregate_collation;
mod aggregate_group;
mod aggregate_spill;
mod aggregate_stages;
mod aggregate_window;
mod auth_enforcement;
mod auth_roles_e2e;
mod bounded_writes;
mod change_streams;
mod collation;
mod command_fields;
mod concurrency;
mod cosmos_accounts;
mod cosmos_connection;
mod cosmos_profile;
mod crud_read;
mod crud_write;
mod ddl;
mod decimal_updates;
mod disk_full;
mod disk_full_flush;
mod disk_full_spill;
mod dump;
mod durability;
mod explain;
mod fail_points;
mod find_index_options;
mod find_projection;
mod format_version;
mod handshake;
mod hashed_indexes;
mod held_memory;
mod hidden_indexes;
mod hostile_input;
mod index_build;
mod index_build_progress;
mod index_stats;
mod indexes;
mod logs;
mod long_keys;
mod metrics;
mod network;
mod nul_field_names;
mod operations;
mod partial_indexes;
mod ping;
mod planner_differential;
mod poisoned_locks;
mod profiler;
mod query_operations;
mod regex;
mod replica_set;
mod resource_governance;
mod retryable_writes;
mod secrets;
mod sessions;
mod sort_spill;
mod storage_cache;
mod storage_memory;
mod stored_counts;
mod tls;
mod transactions;
mod ttl_custom_path;
mod ttl_dates;
mod ttl_differential;
mod ttl_reaper;
mod ttl_rules;
mod ttl_transactions;
mod ttl_view;
mod ttl_visibility;
mod users;
mod validate;
mod wire_protocol;
mod write_validation;
