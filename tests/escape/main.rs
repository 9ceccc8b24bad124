//! The hostile-plugin suite: every attack on the sandbox, run against the real `paddock` binary.
//!
//! Each row of `attacks::ATTACKS` is one attack by a real component from `tests/plugins/`. For
//! each, the suite asserts that the attack is refused or bounded (never a host crash), that the
//! refusal is in the host's JSON log naming the plugin, that the host answers a ping and another
//! plugin within a second while the attack runs and after it, that nothing outside the attacker's
//! read-write grant changed and no ungranted server was reached, and that the permitted twin (the
//! same operation under a grant that permits it, or bounded) works. `protocol.rs` adds the
//! client's side: pipelined calls and malformed lines. The coverage test keeps the table and the
//! hostile component in step.
//!
//! Run it alone with `cargo test --release -p paddock-tests --test escape` after
//! `scripts/build-plugins` and `cargo build --release --workspace`.

// Each row prints its summary: what was refused and how the host fared.
#![allow(clippy::print_stdout)]

mod attacks;
mod harness;
mod protocol;
mod servers;

use std::collections::BTreeSet;

use attacks::{ATTACKS, Class, Component};
use paddock_tests::{PluginDir, StdioHost, fixture_wasm};
use serde_json::json;
use servers::Servers;

/// Runs every attack of `classes`, in table order, and reports every failure at once.
async fn run_classes(classes: &[Class]) {
    let servers = Servers::start().await;
    let mut failures = Vec::new();
    let rows: Vec<_> = ATTACKS.iter().filter(|a| classes.contains(&a.class)).collect();
    assert!(!rows.is_empty(), "no attacks of {classes:?}");
    for attack in rows {
        match harness::run(attack, &servers).await {
            Ok(summary) => println!("{} ({:?}): {summary}", attack.name, attack.class),
            Err(error) => failures.push(format!("{} ({:?}): {error:#}", attack.name, attack.class)),
        }
    }
    assert!(failures.is_empty(), "{} attack(s) did not hold:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[tokio::test]
async fn file_attacks_are_refused_and_recorded() {
    run_classes(&[Class::Files]).await;
}

#[tokio::test]
async fn environment_network_and_socket_attacks_are_refused_and_recorded() {
    run_classes(&[Class::Environment, Class::Network, Class::Sockets]).await;
}

#[tokio::test]
async fn time_attacks_end_at_the_deadline() {
    run_classes(&[Class::Time]).await;
}

#[tokio::test]
async fn memory_trap_and_resource_attacks_are_bounded() {
    run_classes(&[Class::Memory, Class::Traps, Class::Resources]).await;
}

#[tokio::test]
async fn output_floods_and_bad_results_are_bounded() {
    run_classes(&[Class::Output, Class::Results]).await;
}

#[tokio::test]
async fn plugins_that_cannot_load_are_refused_beside_good_ones() {
    run_classes(&[Class::Loading]).await;
}

#[tokio::test]
async fn a_thousand_pipelined_calls_are_each_answered_and_ping_goes_through() {
    let tally = protocol::pipelined().await.expect("pipelined calls");
    println!("{} pipelined calls: {tally:?}", protocol::PIPELINED_CALLS);
    assert!(tally.answered >= 16, "at least the calls that fit ran: {tally:?}");
    assert_eq!(tally.answered + tally.failed_in_time + tally.busy, protocol::PIPELINED_CALLS as usize, "{tally:?}");
}

#[tokio::test]
async fn malformed_client_lines_are_answered_with_their_errors() {
    protocol::fuzz_all().await.expect("fuzz");
}

#[tokio::test]
async fn every_hostile_tool_has_an_attack_and_every_attack_a_tool() {
    let plugins = PluginDir::new().add(harness::ATTACKER, &fixture_wasm("hostile"));
    let mut host = StdioHost::start(plugins.path(), &[]).expect("start");
    host.initialize("2025-11-25").await.expect("initialize");
    let tools = host.request("tools/list", json!({})).await.expect("tools/list");
    let prefix = format!("{}_", harness::ATTACKER);
    let listed: BTreeSet<String> =
        tools["result"]["tools"].as_array().expect("tools").iter().filter_map(|t| t["name"].as_str()?.strip_prefix(&prefix).map(str::to_owned)).collect();
    let mut in_table: BTreeSet<String> = BTreeSet::new();
    for attack in ATTACKS {
        if let (Component::Hostile, Some(call)) = (attack.component, attack.call) {
            in_table.insert(call.tool.to_owned());
        }
        if attack.twin.component == Component::Hostile {
            in_table.insert(attack.twin.call.tool.to_owned());
        }
    }
    in_table.insert(protocol::SLOW_TOOL.to_owned());
    let untested: Vec<_> = listed.difference(&in_table).collect();
    let missing: Vec<_> = in_table.difference(&listed).collect();
    assert!(untested.is_empty(), "hostile tools with no attack in the table: {untested:?}");
    assert!(missing.is_empty(), "attacks on tools the hostile component does not have: {missing:?}");
    assert_eq!(host.close().await.expect("exit"), 0);

    let mut names = BTreeSet::new();
    for attack in ATTACKS {
        assert!(names.insert(attack.name), "two attacks are named {}", attack.name);
        assert_eq!(attack.call.is_none(), attack.class == Class::Loading, "{}: only loading attacks have no call", attack.name);
    }
    assert!(ATTACKS.len() + protocol::FUZZ.len() + 1 >= 40, "the suite has {} attacks", ATTACKS.len());
}
