//! End-to-end tests: the real `paddock` binary with real plugins and real MCP clients.

// Some tests print what they ran (the conformance suite's report, measured figures).
#![allow(clippy::print_stderr)]

mod author_loop; // paddock new → cargo test and build → check → call of every kind (folder and URL) → dev swapping in a save
mod callers; // caller policy over HTTP: hidden tools, approvals with the Python client, 429, the audit file, check
mod catalogs; // hostile catalogs, results and resource templates next to a good plugin
mod cli; // the command line: inspect, call, errors and exit codes
mod clients_http; // every client over every network transport it speaks: Python, TypeScript, Inspector CLI
mod clients_python; // the official Python SDK client (`mcp` 2.3.0) in both eras
mod clients_rmcp; // the official Rust SDK client (`rmcp` 3.9) in both eras, over stdio and Streamable HTTP
mod clients_ts; // the official TypeScript SDK client (1.32.2, on Node 22) in a legacy session
mod confirmations; // the files sample asking its user before it replaces or deletes a file
mod conformance; // the conformance plugin lists every fixture the suite names, under its own names
mod conformance_suite; // the official conformance suite against `paddock serve --http`, both requirement sets
mod contract; // the released WIT packages are frozen: each definition as recorded in wit/released.toml
mod grants; // sample plugins against their grants: files, network, env
mod http_channels; // WebSocket and HTTP+SSE: framing, subprotocol, limits, session lifetime
mod http_guard; // Host/Origin, bearer tokens, size and connection limits, graceful shutdown
mod http_sessions; // Streamable HTTP legacy sessions: statuses, GET stream, resumption, expiry, cap
mod http_stateless; // Streamable HTTP 2026-07-28: headers, statuses, SSE, listen, cancel, replicas
mod layers; // imports point down: a layer per host module, no circle inside a folder
mod live_folder; // the live plugins folder: add, replace, remove, broken and slow files, grant changes, bursts, SIGHUP
mod load_balancers; // three replicas behind real nginx and HAProxy with the recipes of host/deploy: the conformance suite and the real clients; every recipe checked offline
mod loading; // broken, wrong-world and badly granted plugins next to good ones
mod lock_and_drift; // paddock.lock, --locked, and drift allow/warn/hold/block with the logged diff
mod oauth; // OAuth 2.1 resource server: a real issuer, each attack beside its twin, every official client with a token
mod observability; // metrics scraped by a real Prometheus and promtool, bounded labels, the listener's guard, one OTLP trace into the upstream
mod replicas; // several replicas sharing a key: owner-tagged ids, forwarding to the owner, forged ids and posing clients, an owner gone
mod replicas_store; // three replicas sharing a real redis-server: tasks across replicas, an owner killed, fan-out, the store stopped, missing, optional
mod stdio; // the stdio transport of the real binary: stdout purity, EOF, framing errors, page faults of a large call
mod tidy; // repository hygiene: module docs, no inherited stdio/env/network, stdout writers
