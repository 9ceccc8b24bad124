//! File attacks, made with raw `wasi:filesystem` calls on a preopened directory (`dir`, the
//! guest path the grant names): paths that climb out of the grant, absolute and `/proc` paths,
//! writes, new files and directories in a read-only grant, and symlinks and hard links that lead
//! out. `read_std` goes through Rust's `std::fs` (wasi-libc's path resolution) instead.
//!
//! Reads follow symlinks, as an attacker would want.

use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, OpenFlags, PathFlags};

use crate::{Args, Outcome, Refused};

/// The directory preopened as `guest`.
fn preopen(guest: &str) -> Result<Descriptor, Refused> {
    get_directories().into_iter().find(|(_, name)| name == guest).map(|(dir, _)| dir).ok_or_else(|| Refused(format!("no preopened directory `{guest}`")))
}

/// The whole content of an open file, as text.
fn read_all(file: &Descriptor) -> Result<String, Refused> {
    let mut bytes = Vec::new();
    loop {
        let (chunk, end) = file.read(64 * 1024, bytes.len() as u64)?;
        bytes.extend_from_slice(&chunk);
        if end || chunk.is_empty() {
            return Ok(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
}

fn read(dir: &Descriptor, path: &str) -> Result<String, Refused> {
    let file = dir.open_at(PathFlags::SYMLINK_FOLLOW, path, OpenFlags::empty(), DescriptorFlags::READ)?;
    read_all(&file)
}

/// Reads `path` relative to `dir`.
pub(crate) fn read_at(args: &Args) -> Outcome {
    read(&preopen(args.str("dir"))?, args.str("path"))
}

/// Reads `path` with `std::fs`, which resolves it against the preopens itself.
pub(crate) fn read_std(args: &Args) -> Outcome {
    std::fs::read_to_string(args.str("path")).map_err(|e| Refused(e.to_string()))
}

/// Creates (or truncates) `path` relative to `dir` and writes `text` into it.
pub(crate) fn write_at(args: &Args) -> Outcome {
    let dir = preopen(args.str("dir"))?;
    let file = dir.open_at(PathFlags::SYMLINK_FOLLOW, args.str("path"), OpenFlags::CREATE | OpenFlags::TRUNCATE, DescriptorFlags::WRITE)?;
    let written = file.write(args.str("text").as_bytes(), 0)?;
    Ok(format!("wrote {written} bytes"))
}

/// Creates the directory `path` relative to `dir`.
pub(crate) fn mkdir_at(args: &Args) -> Outcome {
    preopen(args.str("dir"))?.create_directory_at(args.str("path"))?;
    Ok("created".to_owned())
}

/// Removes the file `path` relative to `dir`.
pub(crate) fn unlink_at(args: &Args) -> Outcome {
    preopen(args.str("dir"))?.unlink_file_at(args.str("path"))?;
    Ok("removed".to_owned())
}

/// In the read-write grant `/data`, creates the symlink `link -> target`, then reads `read`
/// (default: the link itself) through it.
pub(crate) fn symlink_then_read(args: &Args) -> Outcome {
    let data = preopen("/data")?;
    let link = args.str("link");
    data.symlink_at(args.str("target"), link).map_err(|code| Refused(format!("symlink: {}", code.name())))?;
    let through = if args.str("read").is_empty() { link } else { args.str("read") };
    read(&data, through).map_err(|Refused(why)| Refused(format!("read through the link: {why}")))
}

/// Renames `from` to `to`, both relative to `/data`.
pub(crate) fn rename_at(args: &Args) -> Outcome {
    let data = preopen("/data")?;
    data.rename_at(args.str("from"), &data, args.str("to"))?;
    Ok("renamed".to_owned())
}

/// Hard-links `from` as `to`, both relative to `/data`.
pub(crate) fn hardlink_at(args: &Args) -> Outcome {
    let data = preopen("/data")?;
    data.link_at(PathFlags::empty(), args.str("from"), &data, args.str("to"))?;
    Ok("linked".to_owned())
}

/// Metadata of `path` relative to `dir`.
pub(crate) fn stat_at(args: &Args) -> Outcome {
    let stat = preopen(args.str("dir"))?.stat_at(PathFlags::SYMLINK_FOLLOW, args.str("path"))?;
    Ok(format!("{:?} of {} bytes", stat.type_, stat.size))
}

/// The names in the directory `path` relative to `dir`.
pub(crate) fn list_at(args: &Args) -> Outcome {
    let dir = preopen(args.str("dir"))?;
    let listed = dir.open_at(PathFlags::SYMLINK_FOLLOW, args.str("path"), OpenFlags::DIRECTORY, DescriptorFlags::READ)?;
    let entries = listed.read_directory()?;
    let mut names = Vec::new();
    while let Some(entry) = entries.read_directory_entry()? {
        names.push(entry.name);
    }
    names.sort();
    Ok(names.join("\n"))
}
