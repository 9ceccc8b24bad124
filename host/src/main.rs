//! The `paddock` binary: bounds the allocator, installs logging on stderr, parses the command
//! line, runs it.

fn main() -> std::process::ExitCode {
    paddock::allocator::tune();
    paddock::cli::main()
}
