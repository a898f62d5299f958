use sv2c_binary::Wire;

#[derive(Wire)]
struct Tuple(u32, u32);

fn main() {}
