use sv2c_binary::Wire;

#[derive(Wire)]
struct WithLifetime<'a> {
    name: &'a [u8],
}

fn main() {}
