//! Mistakes in `#[derive(MessageSet)]` input are compile errors: overlapping message ids
//! (a const assertion naming the two variants, the id in hex and the message on each side) and variant shapes other than `Name(Type)`.

#[test]
fn message_set_derive_errors() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui_message_set/*.rs");
}
