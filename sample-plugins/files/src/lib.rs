//! The `files` sample plugin: lists, reads, writes and deletes files, but only inside the
//! directories its operator granted (preopened at paths such as `/data`); nothing else is visible.
//! Before it replaces or deletes a file it asks the user (elicitation); a client that cannot ask
//! the user must say so in the call itself (`overwrite: true`, `confirm: true`).

use paddock_sdk::{Deserialize, Elicited, Json, JsonSchema, Request, Requests, Serialize, export_plugin, tool};

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
    /// Replace an existing file without asking the user. Only honoured when the client cannot
    /// ask the user; otherwise the user decides.
    #[serde(default)]
    overwrite: bool,
}

/// The user's answer to a confirmation.
#[derive(Deserialize, JsonSchema)]
struct Confirmation {
    /// Go ahead.
    confirm: bool,
}

/// Whether the user agrees to `question` (asked under `key`), or, for a client that cannot ask
/// its user, whether the call said so itself. `Ok(Err(why))` is a refusal to report.
fn confirmed(cx: &Request, key: &str, question: &str, said_so: bool, flag: &str) -> paddock_sdk::Result<Result<(), String>> {
    if !cx.client_supports("elicitation.form") {
        return Ok(if said_so { Ok(()) } else { Err(format!("{question} This client cannot ask its user: call again with `{flag}: true` to go ahead.")) });
    }
    Ok(match cx.elicit::<Confirmation>(key, question)? {
        Elicited::Accepted(Confirmation { confirm: true }) => Ok(()),
        Elicited::Accepted(_) | Elicited::Declined => Err("the user said no".to_owned()),
        Elicited::Cancelled => Err("the user dismissed the question".to_owned()),
    })
}

/// Writes a text file. Replacing an existing file needs the user's confirmation.
#[tool(destructive)]
fn write_file(args: WriteArgs, cx: &Request) -> paddock_sdk::Result<String> {
    if let Ok(existing) = std::fs::metadata(&args.path) {
        if existing.is_dir() {
            return Err(paddock_sdk::Error::failed(format!("`{}` is a directory", args.path)));
        }
        let question = format!("`{}` exists ({} bytes). Replace it?", args.path, existing.len());
        if let Err(why) = confirmed(cx, "confirm_overwrite", &question, args.overwrite, "overwrite")? {
            return Err(paddock_sdk::Error::failed(format!("`{}` was not replaced: {why}", args.path)));
        }
    }
    std::fs::write(&args.path, args.content.as_bytes()).map_err(|e| paddock_sdk::Error::failed(format!("cannot write `{}`: {e}", args.path)))?;
    Ok(format!("wrote {} bytes to {}", args.content.len(), args.path))
}

#[derive(Deserialize, JsonSchema)]
struct DeleteArgs {
    /// A file inside a writable grant, for example `/data/old.txt`.
    path: String,
    /// Delete without asking the user. Only honoured when the client cannot ask the user;
    /// otherwise the user decides.
    #[serde(default)]
    confirm: bool,
}

/// Deletes a file, once the user confirms.
#[tool(destructive, idempotent)]
fn delete_file(args: DeleteArgs, cx: &Request) -> paddock_sdk::Result<String> {
    let existing = std::fs::metadata(&args.path).map_err(|e| paddock_sdk::Error::failed(format!("cannot delete `{}`: {e}", args.path)))?;
    if existing.is_dir() {
        return Err(paddock_sdk::Error::failed(format!("`{}` is a directory; delete_file only deletes files", args.path)));
    }
    let question = format!("Delete `{}` ({} bytes)?", args.path, existing.len());
    if let Err(why) = confirmed(cx, "confirm_delete", &question, args.confirm, "confirm")? {
        return Err(paddock_sdk::Error::failed(format!("`{}` was not deleted: {why}", args.path)));
    }
    std::fs::remove_file(&args.path).map_err(|e| paddock_sdk::Error::failed(format!("cannot delete `{}`: {e}", args.path)))?;
    Ok(format!("deleted {}", args.path))
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
    let kind = if meta.is_file() {
        "file"
    } else if meta.is_dir() {
        "dir"
    } else {
        "other"
    };
    Ok(Json(Stat { kind: kind.to_owned(), size: meta.len(), readonly: meta.permissions().readonly() }))
}

export_plugin! {
    name: "files",
    version: env!("CARGO_PKG_VERSION"),
    title: "Files",
    description: "Lists, reads, writes and deletes files inside the directories its operator granted, asking the user before it replaces or deletes one",
    instructions: "Paths are inside the sandbox; granted directories are usually mounted at /data.",
    requests: Requests::new().file("/data", true, "the files to read and write"),
    tools: [read_file, write_file, delete_file, list_dir, stat],
}
