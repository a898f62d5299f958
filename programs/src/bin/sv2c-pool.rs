//! `sv2c-pool`: the Stratum V2 pool server (`sv2c-pool --help`; [`sv2c_programs::pool`]).

fn main() -> std::process::ExitCode {
    sv2c_programs::pool::main("sv2c-pool")
}
