//! Fixtures of the tasks scenarios: a plain tool, a long computation that may become a task, jobs
//! that only run as tasks and fail (as a result, or as a protocol error), and tasks that wait
//! for the user's input.

use std::time::{Duration, Instant};

use paddock_sdk::{Elicited, Error, Request, host, tool};
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Greeting {
    /// Who to greet.
    name: String,
}

/// Greets someone, at once.
#[tool]
pub(crate) fn greet(args: Greeting) -> String {
    format!("Hello, {}!", args.name)
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Computation {
    /// How long to work, in seconds.
    seconds: f64,
    /// A label for the result.
    label: String,
}

/// Works for the given time, stopping early when cancelled; may run as a task.
#[tool(task = "optional")]
pub(crate) fn slow_compute(args: Computation) -> Result<String, String> {
    let until = Instant::now() + Duration::from_secs_f64(args.seconds.clamp(0.0, 3600.0));
    while Instant::now() < until {
        if host::is_cancelled() {
            return Err(format!("{}: cancelled", args.label));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(format!("{}: computed in {} s", args.label, args.seconds))
}

/// Fails after a second, as a result the model reads; only runs as a task.
#[tool(task = "required")]
pub(crate) fn failing_job() -> Result<String, String> {
    std::thread::sleep(Duration::from_secs(1));
    Err("the job failed".into())
}

/// Refuses its request after a moment, which fails its task; only runs as a task.
#[tool(task = "required")]
pub(crate) fn protocol_error_job() -> paddock_sdk::Result<String> {
    std::thread::sleep(Duration::from_millis(300));
    Err(Error::invalid_params("the job cannot run with these parameters"))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Filename {
    /// The file to delete.
    filename: String,
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Confirmation {
    confirm: bool,
}

/// Asks for a confirmation within its task, then "deletes" the file.
#[tool(task = "optional", destructive)]
pub(crate) fn confirm_delete(args: Filename, cx: &Request) -> paddock_sdk::Result<String> {
    cx.ask_within_task();
    Ok(match cx.elicit::<Confirmation>("confirm", &format!("Delete {}?", args.filename))? {
        Elicited::Accepted(Confirmation { confirm: true }) => format!("Deleted {}", args.filename),
        _ => format!("Kept {}", args.filename),
    })
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Part {
    name: String,
    confirm: bool,
}

/// Asks two questions at once within its task; each may be answered on its own.
#[tool(task = "optional")]
pub(crate) fn multi_input(cx: &Request) -> paddock_sdk::Result<String> {
    cx.ask_within_task();
    let (first, second) = (cx.elicit::<Part>("first", "First part?"), cx.elicit::<Part>("second", "Second part?"));
    let describe = |part: Elicited<Part>| match part {
        Elicited::Accepted(p) => format!("{} ({})", p.name, if p.confirm { "confirmed" } else { "not confirmed" }),
        _ => "skipped".into(),
    };
    Ok(format!("first: {}, second: {}", describe(first?), describe(second?)))
}

#[derive(Deserialize, JsonSchema)]
pub(crate) struct Name {
    name: String,
}

/// Asks for a name in an ordinary round, then runs as a task with it.
#[tool(task = "required")]
pub(crate) fn test_tool_with_task(cx: &Request) -> paddock_sdk::Result<String> {
    let name = match cx.elicit::<Name>("user_name", "What is your name?")? {
        Elicited::Accepted(user) => user.name,
        _ => "stranger".into(),
    };
    std::thread::sleep(Duration::from_millis(300));
    Ok(format!("Task finished for {name}"))
}
