//! The attack table: every attack on the sandbox the suite makes, one row each. A row names the
//! hostile component and the grant it runs under, the call that attacks (none for attacks made by
//! loading), what the host must answer, what it must record naming the plugin, and the permitted
//! twin: the same operation under a grant that permits it (or bounded), which must work.
//!
//! Templates: `{data}` and `{ro}` in a grant are the plugin's own read-write and read-only
//! directories, `{plugins}` the plugins folder and `{cache}` the compiled-plugin cache; `{granted}`, `{decoy}`, `{redirect_out}`, `{redirect_in}`, `{silent}`,
//! `{endless}`, `{drip}` and `{udp}` are the ports of the servers in `servers.rs`.
//!
//! Each plugin gets its own directory tree: `data/` (granted read-write as `/data`, holding
//! `inside.txt` and `sub/deep.txt`), `ro/` (granted read-only as `/ro`, holding `notes.txt`) and,
//! beside them and granted to nobody, `outside.txt`.

/// What part of the sandbox an attack tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    Files,
    Environment,
    Network,
    Sockets,
    Time,
    Memory,
    Traps,
    Output,
    Results,
    Resources,
    Loading,
}

/// The component a plugin is made from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Component {
    /// `tests/plugins/hostile`: one tool per attack.
    Hostile,
    /// `tests/plugins/bad-catalog`: a catalog that turns bad as `BAD_CATALOG` says.
    BadCatalog,
    /// `tests/plugins/other-world`: a component of another world.
    OtherWorld,
    /// `tests/plugins/unknown-import`: a plugin that imports an interface no host provides.
    UnknownImport,
    /// `tests/plugins/table-bomb`: tools `grow` and `bomb` that grow a function table.
    TableBomb,
    /// An empty core module, not a component.
    CoreModule,
    /// Bytes that are not WebAssembly at all.
    Garbage,
    /// The first half of the hostile component.
    Truncated,
    /// A component built against another version of the contract (`paddock:plugin@0.1.0`).
    OlderContract,
}

/// A tool call: the tool's name in its plugin and its arguments (a JSON template).
#[derive(Debug, Clone, Copy)]
pub struct Call {
    pub tool: &'static str,
    pub args: &'static str,
}

/// What the host must answer the attack.
#[derive(Debug, Clone, Copy)]
pub enum Expect {
    /// An error result whose text contains this.
    ToolError(&'static str),
    /// An error result saying the call timed out, within its `limits.timeout` and a second.
    Deadline,
    /// An ordinary result whose text contains this: the attack ran to its end, bounded.
    Bounded(&'static str),
    /// An ordinary result whose text is exactly this JSON.
    Json(&'static str),
    /// The plugin is not served: none of its tools is listed.
    NotLoaded,
}

/// What the host's JSON log must hold, naming the hostile plugin (`plugin` = its id).
#[derive(Debug, Clone, Copy)]
pub enum Recorded {
    /// A refusal record (`runtime/refusals.rs`) of this kind.
    Refusal(&'static str),
    /// A `tool call failed` warning whose error contains this.
    CallFailed(&'static str),
    /// A `plugin not loaded` error whose message contains this.
    NotLoaded(&'static str),
    /// Nothing can be refused: the host is never asked for anything beyond the grant (a plugin's
    /// environment, arguments and stdin are built from the grant, and the attack reads them).
    NeverAsked,
}

/// The permitted twin of an attack: it must answer an ordinary result containing `answers`.
#[derive(Debug, Clone, Copy)]
pub struct Twin {
    pub component: Component,
    pub grant: &'static str,
    pub call: Call,
    pub answers: &'static str,
}

/// One attack.
#[derive(Debug, Clone, Copy)]
pub struct Attack {
    pub name: &'static str,
    pub class: Class,
    pub component: Component,
    pub grant: &'static str,
    /// The attacking call; `None` when loading the plugin is the attack.
    pub call: Option<Call>,
    pub expect: Expect,
    pub recorded: Recorded,
    pub twin: Twin,
}

/// No grant at all: the plugin can compute, log and call the host.
pub const NOTHING: &str = "";
/// Two directories: `/data` read-write and `/ro` read-only.
pub const FILES: &str = r#"files = [{ host = "{data}", guest = "/data", mode = "rw" }, { host = "{ro}", guest = "/ro", mode = "ro" }]"#;
/// The granted server only.
pub const GRANTED: &str = r#"network = ["http://127.0.0.1:{granted}"]"#;
/// The granted server and the redirect that leads out of the grant.
const GRANTED_AND_REDIRECT_OUT: &str = r#"network = ["http://127.0.0.1:{granted}", "http://127.0.0.1:{redirect_out}"]"#;
/// The granted server and the redirect that leads to it.
const GRANTED_AND_REDIRECT_IN: &str = r#"network = ["http://127.0.0.1:{granted}", "http://127.0.0.1:{redirect_in}"]"#;
/// The decoy's port, under a name that is not the decoy's address.
const DECOY_PORT_ELSEWHERE: &str = r#"network = ["http://granted.invalid:{decoy}"]"#;
/// The decoy itself, by its address.
const DECOY: &str = r#"network = ["http://127.0.0.1:{decoy}"]"#;
/// The granted server by the name `localhost`, which the host resolves itself.
const GRANTED_BY_NAME: &str = r#"network = ["http://localhost:{granted}"]"#;
/// A one-second deadline.
const QUICK: &str = r#"limits = { timeout = "1s" }"#;
const QUICK_GRANTED: &str = r#"network = ["http://127.0.0.1:{granted}"]
limits = { timeout = "1s" }"#;
const QUICK_SILENT: &str = r#"network = ["http://127.0.0.1:{silent}"]
limits = { timeout = "1s" }"#;
const QUICK_DRIP: &str = r#"network = ["http://127.0.0.1:{drip}"]
limits = { timeout = "1s" }"#;
/// The endless server, 16 MiB of memory (and so of response bytes) and a 5 s deadline.
const ENDLESS: &str = r#"network = ["http://127.0.0.1:{endless}"]
limits = { memory = "16MiB", timeout = "5s" }"#;
const GRANTED_SMALL: &str = r#"network = ["http://127.0.0.1:{granted}"]
limits = { memory = "16MiB", timeout = "5s" }"#;
/// 16 MiB of memory.
const SMALL_MEMORY: &str = r#"limits = { memory = "16MiB" }"#;
/// 64 KiB of output.
const SMALL_OUTPUT: &str = r#"limits = { output = "64KiB" }"#;
/// One granted variable.
const ONE_VARIABLE: &str = r#"env = { GRANTED_VAR = "granted-value" }"#;

const fn call(tool: &'static str, args: &'static str) -> Call {
    Call { tool, args }
}

const fn twin(grant: &'static str, tool: &'static str, args: &'static str, answers: &'static str) -> Twin {
    Twin { component: Component::Hostile, grant, call: call(tool, args), answers }
}

/// A file attack by the hostile plugin under `FILES`, refused and recorded as a file refusal.
const fn file_attack(name: &'static str, tool: &'static str, args: &'static str, refusal: &'static str, twin: Twin) -> Attack {
    Attack {
        name,
        class: Class::Files,
        component: Component::Hostile,
        grant: FILES,
        call: Some(call(tool, args)),
        expect: Expect::ToolError(refusal),
        recorded: Recorded::Refusal("file"),
        twin,
    }
}

/// An outgoing-HTTP attack refused by the network grant and recorded as a network refusal.
const fn http_attack(name: &'static str, grant: &'static str, args: &'static str, twin: Twin) -> Attack {
    Attack {
        name,
        class: Class::Network,
        component: Component::Hostile,
        grant,
        call: Some(call("http_get", args)),
        expect: Expect::ToolError("HttpRequestDenied"),
        recorded: Recorded::Refusal("network"),
        twin,
    }
}

/// A raw-socket attack, refused (no grant opens sockets) and recorded as `kind`.
const fn socket_attack(name: &'static str, tool: &'static str, args: &'static str, refusal: &'static str, kind: &'static str, twin: Twin) -> Attack {
    Attack {
        name,
        class: Class::Sockets,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call(tool, args)),
        expect: Expect::ToolError(refusal),
        recorded: Recorded::Refusal(kind),
        twin,
    }
}

/// An attack stopped by its one-second deadline, recorded as a failed call.
const fn deadline_attack(name: &'static str, grant: &'static str, tool: &'static str, args: &'static str, twin: Twin) -> Attack {
    Attack {
        name,
        class: Class::Time,
        component: Component::Hostile,
        grant,
        call: Some(call(tool, args)),
        expect: Expect::Deadline,
        recorded: Recorded::CallFailed("timed out"),
        twin,
    }
}

/// A component that must not load, with what the log says about it.
const fn load_attack(name: &'static str, component: Component, grant: &'static str, reason: &'static str, twin: Twin) -> Attack {
    Attack { name, class: Class::Loading, component, grant, call: None, expect: Expect::NotLoaded, recorded: Recorded::NotLoaded(reason), twin }
}

/// Reading `/data/inside.txt`: the twin of most file attacks.
const READ_INSIDE: Twin = twin(FILES, "read_at", r#"{"dir":"/data","path":"inside.txt"}"#, "INSIDE");
/// Reaching the granted server: the twin of most network attacks.
const GET_GRANTED: Twin = twin(GRANTED, "http_get", r#"{"url":"http://127.0.0.1:{granted}/"}"#, "200 GRANTED-BODY");
/// Reaching the decoy by its address when the grant names it.
const GET_DECOY: Twin = twin(DECOY, "http_get", r#"{"url":"http://127.0.0.1:{decoy}/"}"#, "200 DECOY-BODY");
/// A tool of the hostile plugin that loads: the twin of a plugin that does not.
const HOSTILE_LOADS: Twin = twin(NOTHING, "spin", r#"{"iterations":1000}"#, "counted to 1000");

/// Every attack.
pub const ATTACKS: &[Attack] = &[
    // Files: paths out of the grant, /proc, writes to a read-only grant, links leading out.
    file_attack("path_traversal_dotdot", "read_at", r#"{"dir":"/data","path":"../outside.txt"}"#, "not-permitted", READ_INSIDE),
    file_attack(
        "path_traversal_nested",
        "read_at",
        r#"{"dir":"/data","path":"sub/../../outside.txt"}"#,
        "not-permitted",
        twin(FILES, "read_at", r#"{"dir":"/data","path":"sub/../inside.txt"}"#, "INSIDE"),
    ),
    file_attack(
        "path_traversal_through_libc",
        "read_std",
        r#"{"path":"/data/../outside.txt"}"#,
        "refused",
        twin(FILES, "read_std", r#"{"path":"/data/inside.txt"}"#, "INSIDE"),
    ),
    file_attack("absolute_path_outside", "read_at", r#"{"dir":"/data","path":"/etc/passwd"}"#, "not-permitted", READ_INSIDE),
    file_attack("proc_self_environ", "read_at", r#"{"dir":"/data","path":"/proc/self/environ"}"#, "not-permitted", READ_INSIDE),
    file_attack(
        "proc_self_root_by_dotdot",
        "read_at",
        r#"{"dir":"/data","path":"../../../../../../../../proc/self/root/etc/passwd"}"#,
        "not-permitted",
        READ_INSIDE,
    ),
    file_attack(
        "write_to_read_only_grant",
        "write_at",
        r#"{"dir":"/ro","path":"notes.txt","text":"overwritten"}"#,
        "not-permitted",
        twin(FILES, "write_at", r#"{"dir":"/data","path":"notes.txt","text":"written"}"#, "wrote 7 bytes"),
    ),
    file_attack(
        "create_in_read_only_grant",
        "write_at",
        r#"{"dir":"/ro","path":"planted.txt","text":"planted"}"#,
        "not-permitted",
        twin(FILES, "write_at", r#"{"dir":"/data","path":"planted.txt","text":"planted"}"#, "wrote 7 bytes"),
    ),
    file_attack(
        "write_outside_the_grant",
        "write_at",
        r#"{"dir":"/data","path":"../planted.txt","text":"planted"}"#,
        "not-permitted",
        twin(FILES, "write_at", r#"{"dir":"/data","path":"planted.txt","text":"planted"}"#, "wrote 7 bytes"),
    ),
    file_attack(
        "mkdir_in_read_only_grant",
        "mkdir_at",
        r#"{"dir":"/ro","path":"made"}"#,
        "not-permitted",
        twin(FILES, "mkdir_at", r#"{"dir":"/data","path":"made"}"#, "created"),
    ),
    file_attack(
        "unlink_in_read_only_grant",
        "unlink_at",
        r#"{"dir":"/ro","path":"notes.txt"}"#,
        "not-permitted",
        twin(FILES, "unlink_at", r#"{"dir":"/data","path":"inside.txt"}"#, "removed"),
    ),
    file_attack(
        "symlink_out_relative",
        "symlink_then_read",
        r#"{"target":"../outside.txt","link":"escape"}"#,
        "not-permitted",
        twin(FILES, "symlink_then_read", r#"{"target":"inside.txt","link":"alias"}"#, "INSIDE"),
    ),
    file_attack(
        "symlink_out_absolute",
        "symlink_then_read",
        r#"{"target":"/etc/passwd","link":"escape"}"#,
        "not-permitted",
        twin(FILES, "symlink_then_read", r#"{"target":"inside.txt","link":"alias"}"#, "INSIDE"),
    ),
    file_attack(
        "symlink_to_parent_directory",
        "symlink_then_read",
        r#"{"target":"..","link":"up","read":"up/outside.txt"}"#,
        "not-permitted",
        twin(FILES, "symlink_then_read", r#"{"target":"sub","link":"down","read":"down/deep.txt"}"#, "DEEP"),
    ),
    file_attack(
        "rename_out_of_the_grant",
        "rename_at",
        r#"{"from":"inside.txt","to":"../moved.txt"}"#,
        "not-permitted",
        twin(FILES, "rename_at", r#"{"from":"inside.txt","to":"renamed.txt"}"#, "renamed"),
    ),
    file_attack(
        "hardlink_from_outside",
        "hardlink_at",
        r#"{"from":"../outside.txt","to":"hard.txt"}"#,
        "not-permitted",
        twin(FILES, "hardlink_at", r#"{"from":"inside.txt","to":"hard.txt"}"#, "linked"),
    ),
    file_attack(
        "stat_outside",
        "stat_at",
        r#"{"dir":"/data","path":"../outside.txt"}"#,
        "not-permitted",
        twin(FILES, "stat_at", r#"{"dir":"/data","path":"inside.txt"}"#, "RegularFile"),
    ),
    file_attack(
        "list_parent_directory",
        "list_at",
        r#"{"dir":"/data","path":".."}"#,
        "not-permitted",
        twin(FILES, "list_at", r#"{"dir":"/data","path":"."}"#, "inside.txt"),
    ),
    // Environment: nothing but the granted variables, no arguments, no working directory, no stdin.
    Attack {
        name: "ambient_environment_args_and_stdin",
        class: Class::Environment,
        component: Component::Hostile,
        grant: ONE_VARIABLE,
        call: Some(call("ambient", "{}")),
        expect: Expect::Json(r#"{"env":{"GRANTED_VAR":"granted-value"},"args":[],"cwd":null,"stdin":""}"#),
        recorded: Recorded::NeverAsked,
        twin: twin(ONE_VARIABLE, "ambient", "{}", "granted-value"),
    },
    // Outgoing HTTP: ungranted targets, a redirect out of the grant, IP spellings, metadata.
    http_attack("ungranted_port", GRANTED, r#"{"url":"http://127.0.0.1:{decoy}/"}"#, GET_GRANTED),
    http_attack("ungranted_name", GRANTED, r#"{"url":"http://decoy.invalid:{granted}/"}"#, GET_GRANTED),
    http_attack("https_under_an_http_grant", GRANTED, r#"{"url":"https://127.0.0.1:{granted}/"}"#, GET_GRANTED),
    http_attack(
        "redirect_to_ungranted",
        GRANTED_AND_REDIRECT_OUT,
        r#"{"url":"http://127.0.0.1:{redirect_out}/","redirects":3}"#,
        twin(GRANTED_AND_REDIRECT_IN, "http_get", r#"{"url":"http://127.0.0.1:{redirect_in}/","redirects":3}"#, "200 GRANTED-BODY"),
    ),
    http_attack("ip_decimal", DECOY_PORT_ELSEWHERE, r#"{"url":"http://2130706433:{decoy}/"}"#, GET_DECOY),
    http_attack("ip_octal", DECOY_PORT_ELSEWHERE, r#"{"url":"http://0177.0.0.1:{decoy}/"}"#, GET_DECOY),
    http_attack("ip_hex", DECOY_PORT_ELSEWHERE, r#"{"url":"http://0x7f000001:{decoy}/"}"#, GET_DECOY),
    http_attack("ip_v4_mapped_v6", DECOY_PORT_ELSEWHERE, r#"{"url":"http://[::ffff:127.0.0.1]:{decoy}/"}"#, GET_DECOY),
    http_attack("ip_short_form", DECOY_PORT_ELSEWHERE, r#"{"url":"http://127.1:{decoy}/"}"#, GET_DECOY),
    http_attack("cloud_metadata_address", GRANTED, r#"{"url":"http://169.254.169.254/latest/meta-data/"}"#, GET_GRANTED),
    Attack {
        name: "http_requests_in_flight",
        class: Class::Network,
        component: Component::Hostile,
        grant: GRANTED,
        call: Some(call("http_parallel", r#"{"url":"http://127.0.0.1:{granted}/","count":64}"#)),
        expect: Expect::ToolError("ConnectionLimitReached"),
        recorded: Recorded::Refusal("resources"),
        twin: twin(GRANTED, "http_parallel", r#"{"url":"http://127.0.0.1:{granted}/","count":8}"#, "8 answered"),
    },
    Attack {
        name: "http_header_bomb",
        class: Class::Network,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("header_bomb", r#"{"count":1,"bytes":65536}"#)),
        expect: Expect::ToolError("resources limit"),
        recorded: Recorded::Refusal("resources"),
        twin: twin(NOTHING, "header_bomb", r#"{"count":4,"bytes":1024}"#, "4 values of 1024 bytes held"),
    },
    // Raw sockets and name lookups: never granted; the door to the network is wasi:http.
    socket_attack("tcp_connect", "tcp_connect", r#"{"port":{decoy}}"#, "create-tcp-socket: access-denied", "socket", GET_DECOY),
    socket_attack("tcp_bind_and_listen", "tcp_listen", r#"{"port":0}"#, "create-tcp-socket: access-denied", "socket", GET_GRANTED),
    socket_attack("udp_bind", "udp_bind", r#"{"port":0}"#, "create-udp-socket: access-denied", "socket", GET_GRANTED),
    socket_attack("udp_send", "udp_send", r#"{"port":{udp}}"#, "create-udp-socket: access-denied", "socket", GET_GRANTED),
    socket_attack(
        "dns_lookup",
        "dns_lookup",
        r#"{"name":"localhost"}"#,
        "resolve-addresses",
        "dns",
        twin(GRANTED_BY_NAME, "http_get", r#"{"url":"http://localhost:{granted}/"}"#, "200 GRANTED-BODY"),
    ),
    // Time: servers that never answer or never finish, busy loops, a pollable for hours.
    deadline_attack(
        "server_never_answers",
        QUICK_SILENT,
        "http_get",
        r#"{"url":"http://127.0.0.1:{silent}/"}"#,
        twin(QUICK_GRANTED, "http_get", r#"{"url":"http://127.0.0.1:{granted}/"}"#, "200 GRANTED-BODY"),
    ),
    deadline_attack(
        "server_drips_forever",
        QUICK_DRIP,
        "http_get",
        r#"{"url":"http://127.0.0.1:{drip}/","discard":true}"#,
        twin(QUICK_GRANTED, "http_get", r#"{"url":"http://127.0.0.1:{granted}/","discard":true}"#, "200 12 bytes"),
    ),
    Attack {
        name: "server_answers_endlessly",
        class: Class::Time,
        component: Component::Hostile,
        grant: ENDLESS,
        call: Some(call("http_get", r#"{"url":"http://127.0.0.1:{endless}/","discard":true}"#)),
        expect: Expect::ToolError("body after"),
        recorded: Recorded::Refusal("resources"),
        twin: twin(GRANTED_SMALL, "http_get", r#"{"url":"http://127.0.0.1:{granted}/","discard":true}"#, "200 12 bytes"),
    },
    deadline_attack("infinite_loop", QUICK, "spin", r#"{"iterations":0}"#, twin(QUICK, "spin", r#"{"iterations":1000000}"#, "counted to 1000000")),
    deadline_attack("pollable_blocks_for_hours", QUICK, "block_on_clock", r#"{"ms":36000000}"#, twin(QUICK, "block_on_clock", r#"{"ms":1}"#, "waited 1 ms")),
    // Memory: a vector past the limit, raw memory.grow, function-table growth.
    Attack {
        name: "memory_bomb",
        class: Class::Memory,
        component: Component::Hostile,
        grant: SMALL_MEMORY,
        call: Some(call("grow_vec", r#"{"mib":64}"#)),
        expect: Expect::ToolError("exceeded its memory limit"),
        recorded: Recorded::Refusal("memory"),
        twin: twin(SMALL_MEMORY, "grow_vec", r#"{"mib":4}"#, "filled 4194304 bytes"),
    },
    Attack {
        name: "raw_memory_grow",
        class: Class::Memory,
        component: Component::Hostile,
        grant: SMALL_MEMORY,
        call: Some(call("memory_grow_raw", r#"{"pages":1024}"#)),
        expect: Expect::ToolError("returned -1"),
        recorded: Recorded::Refusal("memory"),
        twin: twin(SMALL_MEMORY, "memory_grow_raw", r#"{"pages":16}"#, "by 16"),
    },
    Attack {
        name: "table_growth_bomb",
        class: Class::Memory,
        component: Component::TableBomb,
        grant: NOTHING,
        call: Some(call("bomb", "{}")),
        expect: Expect::ToolError("table.grow refused"),
        recorded: Recorded::Refusal("resources"),
        twin: Twin { component: Component::TableBomb, grant: NOTHING, call: call("grow", "{}"), answers: r#""grown":true"# },
    },
    // Traps: the call stack, a panic, an exit; the host and the session go on.
    Attack {
        name: "stack_overflow",
        class: Class::Traps,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("recurse", r#"{"depth":100000000}"#)),
        expect: Expect::ToolError("plugin crashed"),
        recorded: Recorded::CallFailed("plugin crashed"),
        twin: twin(NOTHING, "recurse", r#"{"depth":1000}"#, "recursed 1000 deep"),
    },
    Attack {
        name: "panic",
        class: Class::Traps,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("panic_now", r#"{"panic":true}"#)),
        expect: Expect::ToolError("plugin crashed"),
        recorded: Recorded::CallFailed("plugin crashed"),
        twin: twin(NOTHING, "panic_now", r#"{"panic":false}"#, "did not panic"),
    },
    Attack {
        name: "process_exit",
        class: Class::Traps,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("exit_process", r#"{"exit":true}"#)),
        expect: Expect::ToolError("plugin crashed"),
        recorded: Recorded::CallFailed("plugin crashed"),
        twin: twin(NOTHING, "exit_process", r#"{"exit":false}"#, "stayed"),
    },
    // Guest output and host-call floods: cut to the call's budgets, counted, the call answers.
    Attack {
        name: "stdout_flood",
        class: Class::Output,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("print_flood", r#"{"lines":100000,"bytes":100,"stream":"stdout"}"#)),
        expect: Expect::Bounded("printed 100000 lines"),
        recorded: Recorded::Refusal("guest-output"),
        twin: twin(NOTHING, "print_flood", r#"{"lines":3,"bytes":100,"stream":"stdout"}"#, "printed 3 lines"),
    },
    Attack {
        name: "stderr_flood",
        class: Class::Output,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("print_flood", r#"{"lines":100000,"bytes":100,"stream":"stderr"}"#)),
        expect: Expect::Bounded("printed 100000 lines"),
        recorded: Recorded::Refusal("guest-output"),
        twin: twin(NOTHING, "print_flood", r#"{"lines":3,"bytes":100,"stream":"stderr"}"#, "printed 3 lines"),
    },
    Attack {
        name: "newline_flood",
        class: Class::Output,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("newline_flood", r#"{"count":100000}"#)),
        expect: Expect::Bounded("wrote 100000 newlines"),
        recorded: Recorded::Refusal("guest-output"),
        twin: twin(NOTHING, "newline_flood", r#"{"count":3}"#, "wrote 3 newlines"),
    },
    Attack {
        name: "log_flood",
        class: Class::Output,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("log_flood", r#"{"count":5000,"bytes":16384}"#)),
        expect: Expect::Bounded("logged 5000 records"),
        recorded: Recorded::Refusal("log"),
        twin: twin(NOTHING, "log_flood", r#"{"count":3,"bytes":100}"#, "logged 3 records"),
    },
    Attack {
        name: "progress_flood",
        class: Class::Output,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("progress_flood", r#"{"count":100000}"#)),
        expect: Expect::Bounded("reported 100000 times"),
        recorded: Recorded::Refusal("progress"),
        twin: twin(NOTHING, "progress_flood", r#"{"count":3}"#, "reported 3 times"),
    },
    Attack {
        name: "notice_flood",
        class: Class::Output,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("notice_flood", r#"{"count":10000}"#)),
        expect: Expect::Bounded("announced 10000 times"),
        recorded: Recorded::Refusal("notices"),
        twin: twin(NOTHING, "notice_flood", r#"{"count":3}"#, "announced 3 times"),
    },
    // Results: too big, too many blocks, JSON that is not JSON.
    Attack {
        name: "huge_result",
        class: Class::Results,
        component: Component::Hostile,
        grant: SMALL_OUTPUT,
        call: Some(call("big_result", r#"{"bytes":1000000}"#)),
        expect: Expect::ToolError("exceeded its output limit"),
        recorded: Recorded::Refusal("output"),
        twin: twin(SMALL_OUTPUT, "big_result", r#"{"bytes":1000}"#, "xxxxxxxxxx"),
    },
    Attack {
        name: "many_empty_blocks",
        class: Class::Results,
        component: Component::Hostile,
        grant: SMALL_OUTPUT,
        call: Some(call("many_blocks", r#"{"count":10000}"#)),
        expect: Expect::ToolError("exceeded its output limit"),
        recorded: Recorded::Refusal("output"),
        twin: twin(SMALL_OUTPUT, "many_blocks", r#"{"count":10}"#, r#""content":[{"#),
    },
    Attack {
        name: "result_too_big_to_lift",
        class: Class::Results,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("many_blocks", r#"{"count":100000}"#)),
        expect: Expect::ToolError("exceeded its output limit"),
        recorded: Recorded::Refusal("output"),
        twin: twin(NOTHING, "many_blocks", r#"{"count":1000}"#, r#""content":[{"#),
    },
    Attack {
        name: "malformed_structured_content",
        class: Class::Results,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("structured", r#"{"json":"{not json"}"#)),
        expect: Expect::ToolError("malformed output"),
        recorded: Recorded::CallFailed("structured content"),
        twin: twin(NOTHING, "structured", r#"{"json":"{\"ok\":true}"}"#, "structured"),
    },
    Attack {
        name: "malformed_meta",
        class: Class::Results,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("result_meta", r#"{"json":"[1,"}"#)),
        expect: Expect::ToolError("malformed output"),
        recorded: Recorded::CallFailed("_meta"),
        twin: twin(NOTHING, "result_meta", r#"{"json":"{\"ok\":true}"}"#, "with _meta"),
    },
    Attack {
        name: "url_elicitation_to_a_script",
        class: Class::Results,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("elicit_url", r#"{"url":"javascript:alert(document.cookie)","regardless":true}"#)),
        expect: Expect::ToolError("malformed output"),
        recorded: Recorded::CallFailed("input request `page`: the URL must be absolute and `https:`"),
        twin: twin(NOTHING, "elicit_url", r#"{"url":"https://example.com/login"}"#, "not asked: the client cannot open https://example.com/login"),
    },
    // Host resources held by the thousand: open files, header sets, pollables.
    Attack {
        name: "open_files_exhaustion",
        class: Class::Resources,
        component: Component::Hostile,
        grant: FILES,
        call: Some(call("open_many", r#"{"count":5000}"#)),
        expect: Expect::ToolError("resources limit"),
        recorded: Recorded::Refusal("resources"),
        twin: twin(FILES, "open_many", r#"{"count":10}"#, "10 files open"),
    },
    Attack {
        name: "header_sets_exhaustion",
        class: Class::Resources,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("fields_many", r#"{"count":10000}"#)),
        expect: Expect::ToolError("resources limit"),
        recorded: Recorded::Refusal("resources"),
        twin: twin(NOTHING, "fields_many", r#"{"count":100}"#, "100 header sets held"),
    },
    Attack {
        name: "pollables_exhaustion",
        class: Class::Resources,
        component: Component::Hostile,
        grant: NOTHING,
        call: Some(call("pollables_many", r#"{"count":10000}"#)),
        expect: Expect::ToolError("resources limit"),
        recorded: Recorded::Refusal("resources"),
        twin: twin(NOTHING, "pollables_many", r#"{"count":100}"#, "100 pollables held"),
    },
    // Loading: bad catalogs, a catalog that traps, other worlds and imports, not components.
    load_attack(
        "bad_catalog_deep_schema",
        Component::BadCatalog,
        r#"env = { BAD_CATALOG = "deep-schema" }"#,
        "input schema nests deeper than 64 levels",
        Twin { component: Component::BadCatalog, grant: NOTHING, call: call("echo", r#"{"text":"loaded"}"#), answers: "loaded" },
    ),
    load_attack(
        "bad_catalog_lone_surrogate",
        Component::BadCatalog,
        r#"env = { BAD_CATALOG = "surrogate" }"#,
        "lone surrogate",
        Twin { component: Component::BadCatalog, grant: NOTHING, call: call("echo", r#"{"text":"loaded"}"#), answers: "loaded" },
    ),
    load_attack("catalog_traps_at_load", Component::Hostile, r#"env = { HOSTILE_CATALOG = "trap" }"#, "reading its catalog failed", HOSTILE_LOADS),
    load_attack(
        "nested_grants_one_read_write",
        Component::Hostile,
        r#"files = [{ host = "{data}", guest = "/data", mode = "rw" }, { host = "{data}/sub", guest = "/sub", mode = "ro" }]"#,
        "overlaps grant",
        READ_INSIDE,
    ),
    load_attack(
        "read_write_grant_over_the_plugins_folder",
        Component::Hostile,
        r#"files = [{ host = "{plugins}", guest = "/plugins", mode = "rw" }]"#,
        "covers the plugins folder",
        READ_INSIDE,
    ),
    load_attack(
        "grant_over_the_compiled_plugin_cache",
        Component::Hostile,
        r#"files = [{ host = "{cache}", guest = "/cache", mode = "ro" }]"#,
        "covers the compiled-plugin cache",
        READ_INSIDE,
    ),
    load_attack("wrong_world", Component::OtherWorld, NOTHING, "targets another world", HOSTILE_LOADS),
    load_attack("unknown_import", Component::UnknownImport, NOTHING, "evil:escape/shell", HOSTILE_LOADS),
    load_attack("core_module", Component::CoreModule, NOTHING, "core module", HOSTILE_LOADS),
    load_attack("garbage_file", Component::Garbage, NOTHING, "not a WebAssembly file", HOSTILE_LOADS),
    load_attack("truncated_component", Component::Truncated, NOTHING, "does not compile", HOSTILE_LOADS),
    load_attack("older_contract", Component::OlderContract, NOTHING, "built against contract paddock:plugin@0.1.0", HOSTILE_LOADS),
];
