//! Exhaustion attacks: time (busy loops, a pollable that never fires), memory (a growing vector,
//! raw `memory.grow`), the call stack, exits and panics, floods of guest output and host calls,
//! results that are too big or not valid JSON, and host resources held by the thousand (open
//! files, header sets, pollables).

use wasip2::clocks::monotonic_clock::subscribe_duration;
use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{DescriptorFlags, OpenFlags, PathFlags};

use crate::exports::paddock::plugin::tools::CallResult;
use crate::paddock::plugin::host::{self, ListKind, LogLevel};
use crate::{Args, Outcome, Refused, text};

/// Counts to `iterations`, or forever when it is 0.
pub(crate) fn spin(args: &Args) -> Outcome {
    let limit = args.int("iterations");
    let mut count: u64 = 0;
    while limit == 0 || count < limit {
        count = std::hint::black_box(count + 1);
    }
    Ok(format!("counted to {count}"))
}

/// Fills a vector of `mib` MiB; an allocation the host refuses aborts the guest.
pub(crate) fn grow_vec(args: &Args) -> Outcome {
    let filled = vec![1u8; (args.int("mib") as usize) << 20];
    Ok(format!("filled {} bytes", std::hint::black_box(&filled).len()))
}

/// Grows linear memory by `pages` pages with the raw instruction.
pub(crate) fn memory_grow_raw(args: &Args) -> Outcome {
    let pages = args.int("pages") as usize;
    match core::arch::wasm32::memory_grow(0, pages) {
        usize::MAX => Err(Refused(format!("memory.grow by {pages} pages returned -1"))),
        before => Ok(format!("grew from {before} pages by {pages}")),
    }
}

fn depth(n: u64) -> u64 {
    if n == 0 { 0 } else { std::hint::black_box(depth(std::hint::black_box(n - 1))) + 1 }
}

/// Recurses `depth` calls deep.
pub(crate) fn recurse(args: &Args) -> Outcome {
    Ok(format!("recursed {} deep", depth(args.int("depth"))))
}

/// Blocks on a monotonic-clock pollable that fires after `ms` milliseconds.
pub(crate) fn block_on_clock(args: &Args) -> Outcome {
    subscribe_duration(args.int("ms").saturating_mul(1_000_000)).block();
    Ok(format!("waited {} ms", args.int("ms")))
}

/// Calls `wasi:cli/exit` when `exit` is true.
pub(crate) fn exit_process(args: &Args) -> Outcome {
    if args.flag("exit") {
        wasip2::cli::exit::exit(Err(()));
    }
    Ok("stayed".to_owned())
}

/// Panics (a trap) when `panic` is true.
pub(crate) fn panic_now(args: &Args) -> Outcome {
    assert!(!args.flag("panic"), "the hostile plugin panics on purpose");
    Ok("did not panic".to_owned())
}

/// Writes `lines` lines of `bytes` bytes each to `stream` (`stdout` or `stderr`).
pub(crate) fn print_flood(args: &Args) -> Outcome {
    let line = "x".repeat(args.int("bytes") as usize);
    let to_stderr = args.str("stream") == "stderr";
    for _ in 0..args.int("lines") {
        if to_stderr {
            eprintln!("{line}");
        } else {
            println!("{line}");
        }
    }
    Ok(format!("printed {} lines", args.int("lines")))
}

/// Writes `count` bare newlines to stderr.
pub(crate) fn newline_flood(args: &Args) -> Outcome {
    eprint!("{}", "\n".repeat(args.int("count") as usize));
    Ok(format!("wrote {} newlines", args.int("count")))
}

/// Sends `count` log records of `bytes` bytes each.
pub(crate) fn log_flood(args: &Args) -> Outcome {
    let message = "x".repeat(args.int("bytes") as usize);
    for _ in 0..args.int("count") {
        host::log(LogLevel::Error, Some("hostile"), &message);
    }
    Ok(format!("logged {} records", args.int("count")))
}

/// Sends `count` progress notifications.
pub(crate) fn progress_flood(args: &Args) -> Outcome {
    for i in 0..args.int("count") {
        host::progress(i as f64 + 1.0, None, Some("flooding"));
    }
    Ok(format!("reported {} times", args.int("count")))
}

/// Sends `count` list-changed and `count` resource-updated notices.
pub(crate) fn notice_flood(args: &Args) -> Outcome {
    for i in 0..args.int("count") {
        host::notify_list_changed(ListKind::Tools);
        host::notify_resource_updated(&format!("hostile://r/{i}"));
    }
    Ok(format!("announced {} times", args.int("count")))
}

/// The result attacks, which shape the result itself: `big_result` (`bytes` of text),
/// `many_blocks` (`count` empty text blocks), `structured` and `result_meta` (`json` as
/// structured content or `_meta`, unparsed). `None` for every other tool.
pub(crate) fn result_attack(name: &str, args: &Args) -> Option<CallResult> {
    let plain = |content| CallResult { content, structured_content: None, is_error: false, meta: None };
    Some(match name {
        "big_result" => plain(vec![text("x".repeat(args.int("bytes") as usize))]),
        "many_blocks" => plain((0..args.int("count")).map(|_| text("")).collect()),
        "structured" => CallResult { structured_content: Some(args.str("json").to_owned()), ..plain(vec![text("structured")]) },
        "result_meta" => CallResult { meta: Some(args.str("json").to_owned()), ..plain(vec![text("with _meta")]) },
        _ => return None,
    })
}

/// Opens `/data/inside.txt` `count` times and keeps every descriptor open.
pub(crate) fn open_many(args: &Args) -> Outcome {
    let (data, _) = get_directories().into_iter().find(|(_, name)| name == "/data").ok_or_else(|| Refused("no preopened /data".to_owned()))?;
    let mut open = Vec::new();
    for _ in 0..args.int("count") {
        match data.open_at(PathFlags::empty(), "inside.txt", OpenFlags::empty(), DescriptorFlags::READ) {
            Ok(file) => open.push(file),
            Err(code) => return Err(Refused(format!("open {} failed: {}", open.len() + 1, code.name()))),
        }
    }
    Ok(format!("{} files open", open.len()))
}

/// Creates `count` empty header sets and keeps them.
pub(crate) fn fields_many(args: &Args) -> Outcome {
    let kept: Vec<_> = (0..args.int("count")).map(|_| wasip2::http::types::Fields::new()).collect();
    Ok(format!("{} header sets held", kept.len()))
}

/// Creates `count` clock pollables (an hour each) and keeps them.
pub(crate) fn pollables_many(args: &Args) -> Outcome {
    let kept: Vec<_> = (0..args.int("count")).map(|_| subscribe_duration(3_600_000_000_000)).collect();
    Ok(format!("{} pollables held", kept.len()))
}
