//! The hostile-client suite: each row is an attack by a client on the real binary, beside its
//! permitted twin, asserting that the host's memory and descriptors (read from `/proc`) stay
//! within what its limits allow, and that another client on another address is served within a
//! second during and after the attack. Rows run one at a time, so one row's load never makes
//! another's bystander late.

// Rows print what they measured (stalls, RSS, how long the bystander took).
#![allow(clippy::print_stderr)]

mod callers;
mod harness;
mod held;
mod replicas;
mod rows;
