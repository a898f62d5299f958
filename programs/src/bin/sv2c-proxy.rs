//! `sv2c-proxy`: the Stratum V2 mining proxy (`sv2c-proxy --help`;
//! [`sv2c_programs::proxy`]).

fn main() -> std::process::ExitCode {
    sv2c_programs::proxy::main("sv2c-proxy")
}
