//! Store benchmarks (filled in below).
fn main() {}
