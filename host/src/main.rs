//! The `paddock` binary: installs logging on stderr, parses the command line, runs it.

fn main() -> std::process::ExitCode {
    paddock::cli::main()
}
