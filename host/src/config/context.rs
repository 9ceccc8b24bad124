//! Where a key's problems go while a plugin's table is applied: the file and plugin they are
//! reported against, and the list that collects them. Shared by `values` and `secrets`.

use std::path::Path;

use super::{ConfigError, Severity};

pub(super) struct Ctx<'a> {
    pub(super) file: &'a Path,
    pub(super) plugin: &'a str,
    pub(super) problems: &'a mut Vec<ConfigError>,
}

impl Ctx<'_> {
    pub(super) fn error(&mut self, key: &str, message: impl Into<String>, fix: impl Into<String>) {
        self.problems.push(ConfigError {
            file: self.file.to_path_buf(),
            key: key.to_owned(),
            message: message.into(),
            fix: fix.into(),
            severity: Severity::Error,
            plugin: Some(self.plugin.to_owned()),
        });
    }
}
