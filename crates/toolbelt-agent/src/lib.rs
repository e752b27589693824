//! The agent runtime: run, run_stream, approval, agents as tools (work in progress).
