//! The `paddock` binary: bounds the allocator, installs logging on stderr, parses the command
//! line, runs it.

fn main() -> std::process::ExitCode {
    paddock::allocator::bound_arenas();
    paddock::cli::main()
}
