//! The `files` sample plugin: lists, reads and writes files, but only inside the directories
//! its operator granted (preopened at paths such as `/data`); nothing else is visible.

use paddock_sdk::{Deserialize, Json, JsonSchema, Requests, Serialize, export_plugin, tool};

/// The largest file `read_file` returns.
const MAX_READ: u64 = 1 << 20;

#[derive(Deserialize, JsonSchema)]
struct PathArg {
    /// A path inside the sandbox, for example `/data/notes.txt`.
    path: String,
}

/// Reads a UTF-8 text file (up to 1 MiB).
#[tool(read_only)]
fn read_file(args: PathArg) -> Result<String, String> {
    let meta = std::fs::metadata(&args.path).map_err(|e| format!("cannot read `{}`: {e}", args.path))?;
    if meta.len() > MAX_READ {
        return Err(format!("`{}` is {} bytes; read_file returns at most {MAX_READ}", args.path, meta.len()));
    }
    std::fs::read_to_string(&args.path).map_err(|e| format!("cannot read `{}`: {e}", args.path))
}

#[derive(Deserialize, JsonSchema)]
struct WriteArgs {
    /// A path inside a writable grant, for example `/data/notes.txt`.
    path: String,
    /// The new contents of the file.
    content: String,
}

/// Writes a text file, replacing it if it exists.
#[tool(destructive)]
fn write_file(args: WriteArgs) -> Result<String, String> {
    std::fs::write(&args.path, args.content.as_bytes()).map_err(|e| format!("cannot write `{}`: {e}", args.path))?;
    Ok(format!("wrote {} bytes to {}", args.content.len(), args.path))
}

/// Lists a directory: one entry per line, directories with a trailing `/`.
#[tool(read_only)]
fn list_dir(args: PathArg) -> Result<String, String> {
    let entries = std::fs::read_dir(&args.path).map_err(|e| format!("cannot list `{}`: {e}", args.path))?;
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot list `{}`: {e}", args.path))?;
        let mut name = entry.file_name().to_string_lossy().into_owned();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            name.push('/');
        }
        names.push(name);
    }
    names.sort();
    Ok(names.join("\n"))
}

#[derive(Serialize, JsonSchema)]
struct Stat {
    /// `file`, `dir` or `other`.
    kind: String,
    /// Size in bytes.
    size: u64,
    /// Whether the file can be written (the grant may still refuse).
    readonly: bool,
}

/// Describes a file or directory.
#[tool(read_only)]
fn stat(args: PathArg) -> Result<Json<Stat>, String> {
    let meta = std::fs::metadata(&args.path).map_err(|e| format!("cannot stat `{}`: {e}", args.path))?;
    let kind = if meta.is_file() { "file" } else if meta.is_dir() { "dir" } else { "other" };
    Ok(Json(Stat { kind: kind.to_owned(), size: meta.len(), readonly: meta.permissions().readonly() }))
}

export_plugin! {
    name: "files",
    version: env!("CARGO_PKG_VERSION"),
    title: "Files",
    description: "Lists, reads and writes files inside the directories its operator granted",
    instructions: "Paths are inside the sandbox; granted directories are usually mounted at /data.",
    requests: Requests::new().file("/data", true, "the files to read and write"),
    tools: [read_file, write_file, list_dir, stat],
}
