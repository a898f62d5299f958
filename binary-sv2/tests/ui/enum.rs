use sv2c_binary::Wire;

#[derive(Wire)]
enum NotAStruct {
    A,
}

fn main() {}
