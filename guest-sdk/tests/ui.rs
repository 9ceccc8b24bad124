//! Macro UI tests: a correct plugin compiles, and each misuse of the attribute macros is a
//! compile error that points at the offending token (snapshots in `ui/fail/*.stderr`).

#[test]
fn ui() {
    let cases = trybuild::TestCases::new();
    cases.pass("tests/ui/pass/*.rs");
    cases.compile_fail("tests/ui/fail/*.rs");
}
