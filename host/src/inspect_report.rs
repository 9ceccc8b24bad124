//! Renders `paddock inspect`: what a plugin exports, what it requests, and what it is granted.

use std::fmt::Write;

use crate::policy::{FsMode, Grant};
use crate::runtime::Inspection;

/// The report as plain text, one section per kind of item.
pub fn render(id: &str, inspection: &Inspection, grant: Option<&Grant>) -> String {
    let mut out = String::new();
    let catalog = &inspection.catalog;
    let info = &catalog.info;
    let _ = writeln!(out, "plugin {id} ({}) {} {}", inspection.path.display(), info.name, info.version);
    if let Some(description) = &info.description {
        let _ = writeln!(out, "  {description}");
    }
    let _ = writeln!(out, "\ntools ({}):", catalog.tools.len());
    for tool in &catalog.tools {
        let _ = writeln!(out, "  {:<24} {}", tool.name, tool.description.as_deref().unwrap_or_default().lines().next().unwrap_or_default());
    }
    let _ = writeln!(out, "\nresources ({}):", catalog.resources.len());
    for resource in &catalog.resources {
        let _ = writeln!(out, "  {:<24} {}", resource.uri, resource.name);
    }
    let _ = writeln!(out, "\nresource templates ({}):", catalog.resource_templates.len());
    for template in &catalog.resource_templates {
        let _ = writeln!(out, "  {:<24} {}", template.uri_template, template.name);
    }
    let _ = writeln!(out, "\nprompts ({}):", catalog.prompts.len());
    for prompt in &catalog.prompts {
        let args: Vec<String> = prompt.arguments.iter().map(|a| if a.required { a.name.clone() } else { format!("{}?", a.name) }).collect();
        let _ = writeln!(out, "  {:<24} ({})", prompt.name, args.join(", "));
    }

    let requests = &info.requests;
    let _ = writeln!(out, "\nrequested capabilities:");
    if requests.files.is_empty() && requests.network.is_empty() && requests.env.is_empty() {
        let _ = writeln!(out, "  none");
    }
    for file in &requests.files {
        let mode = if file.writable { "rw" } else { "ro" };
        let _ = writeln!(out, "  files    {} ({mode}){}", file.guest_path, file.reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default());
    }
    for target in &requests.network {
        let _ = writeln!(out, "  network  {target}");
    }
    for name in &requests.env {
        let _ = writeln!(out, "  env      {name}");
    }

    let _ = writeln!(out, "\ngranted:");
    match grant {
        None => {
            let _ = writeln!(out, "  (the grant in the configuration is invalid; run `paddock check`)");
        }
        Some(grant) => {
            let patterns = grant.network.patterns();
            if grant.files.is_empty() && grant.env.is_empty() && patterns.is_empty() && grant.secrets.is_empty() {
                let _ = writeln!(out, "  nothing (deny by default)");
            }
            for file in &grant.files {
                let mode = if file.mode == FsMode::ReadWrite { "rw" } else { "ro" };
                let _ = writeln!(out, "  files    {} ({mode}) <- {}", file.guest, file.host.display());
            }
            for pattern in &patterns {
                let _ = writeln!(out, "  network  {pattern}");
            }
            for name in grant.env.keys() {
                let _ = writeln!(out, "  env      {name}");
            }
            for line in secret_lines(grant) {
                let _ = writeln!(out, "  secret   {line}");
            }
            let limits = &grant.limits;
            let _ = writeln!(
                out,
                "  limits   memory {} MiB, timeout {:?}, concurrency {}, output {} KiB",
                limits.memory >> 20,
                limits.timeout,
                limits.concurrency,
                limits.output >> 10
            );
            let missing: Vec<String> = requests
                .files
                .iter()
                .filter(|f| !grant.files.iter().any(|g| g.guest == f.guest_path))
                .map(|f| format!("files {}", f.guest_path))
                .chain(requests.env.iter().filter(|e| !grant.env.contains_key(*e)).map(|e| format!("env {e}")))
                .chain(requests.network.iter().filter(|n| !patterns.contains(n)).map(|n| format!("network {n}")))
                .collect();
            if !missing.is_empty() {
                let _ = writeln!(out, "\nrequested but not granted (the plugin runs without them):");
                for item in missing {
                    let _ = writeln!(out, "  {item}");
                }
            }
        }
    }
    out
}

/// One line per configured secret: header, target and where the value comes from, never the
/// value itself.
pub fn secret_lines(grant: &crate::policy::Grant) -> Vec<String> {
    grant.secrets.iter().map(|s| format!("{} for {} (from {})", s.header, s.target, s.source)).collect()
}
