//! Compile-time behaviour: what `#[tool]` accepts, and the errors it reports.
//!
//! Regenerate the `.stderr` snapshots with `TRYBUILD=overwrite` and read them
//! before committing; CI refuses new snapshots.

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
