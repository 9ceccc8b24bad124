//! The cache's file system calls for a host without Unix, where the cache would be off
//! (`CacheError::Unsupported`): ownership and permission bits are what its trust rests on. No such
//! build exists: the host uses Unix APIs without a fallback elsewhere (`runtime/sandbox.rs`,
//! `input/seal.rs`, the stdio transport), so `cfg(not(unix))` never holds and this file is never
//! compiled. It only gives the `cfg(not(unix))` branches of `cache.rs` something to name.

use std::convert::Infallible;
use std::fs::File;
use std::io;
use std::path::Path;

use super::{CacheError, Info, Opened};

pub(super) struct Dir(Infallible);

impl Dir {
    pub(super) fn open(_path: &Path) -> Result<(Dir, Info), CacheError> {
        Err(CacheError::Unsupported)
    }

    pub(super) fn euid(&self) -> u32 {
        match self.0 {}
    }

    pub(super) fn open_file(&self, _name: &str) -> io::Result<Opened> {
        match self.0 {}
    }

    pub(super) fn create_new(&self, _name: &str) -> io::Result<File> {
        match self.0 {}
    }

    pub(super) fn rename(&self, _from: &str, _to: &str) -> io::Result<()> {
        match self.0 {}
    }

    pub(super) fn link(&self, _from: &str, _to: &str) -> io::Result<()> {
        match self.0 {}
    }

    pub(super) fn remove(&self, _name: &str) -> io::Result<()> {
        match self.0 {}
    }
}

pub(super) fn read_exact_at(_file: &File, _buf: &mut [u8], _offset: u64) -> io::Result<()> {
    Err(io::Error::from(io::ErrorKind::Unsupported))
}

pub(super) struct Mapped(Infallible);

impl Mapped {
    pub(super) unsafe fn new(_file: &File, _len: usize) -> io::Result<Mapped> {
        Err(io::Error::from(io::ErrorKind::Unsupported))
    }

    pub(super) fn bytes(&self) -> &[u8] {
        match self.0 {}
    }
}

pub(super) unsafe fn map_verified(_engine: &wasmtime::Engine, _file: &File) -> wasmtime::Result<wasmtime::component::Component> {
    Err(wasmtime::Error::msg("the compiled-plugin cache is only supported on Unix hosts"))
}
