//! Mistakes in `#[derive(Wire)]` input are compile errors pointing at the mistake.

#[test]
fn derive_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
