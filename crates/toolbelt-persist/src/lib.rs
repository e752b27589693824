#![doc = include_str!("../README.md")]
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod memory;
mod routine;
mod vectors;

pub use memory::{
    DEFAULT_MAX_ENTRIES_PER_AGENT, DEFAULT_MAX_ENTRY_BYTES, MAX_TAG_BYTES, MAX_TAGS, MemoryEntry,
    MemoryError, MemoryIndex, MemoryLimits, MemoryScope, MemoryStore, NewMemory, RecallHit,
    RecallQuery, WordMatches, bm25, format_ms, memory_terms, owns, sort_hits,
};
pub use routine::{
    MAX_INTERVAL_SECS, MissedPolicy, RoutineDraft, RoutineError, RoutineInfo, RoutineStore,
    SCHEDULE_FORMS, Schedule, describe_routine, utc_ms,
};
pub use vectors::QuantizedVector;
