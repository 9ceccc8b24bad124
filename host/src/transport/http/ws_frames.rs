//! A passive reader of the WebSocket frames a client sends, under the WebSocket library: it
//! sees when a data message begins and ends, and how large it has grown.
//!
//! The library assembles fragmented messages out of sight, and control frames (pings, pongs)
//! may come between the fragments, so the connection cannot tell from the messages it gets
//! whether a client is half-way through a message. This wrapper follows the frame headers in
//! the byte stream as it is read (RFC 6455 §5.2: two bytes, an extended length, a mask key,
//! the payload) without copying or changing anything, so the transport can hold a message to a
//! deadline that pongs do not extend, and charge the bytes of a message being assembled to the
//! memory budget: a read that would take the message past what the budget allows fails, which
//! closes the connection.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::budget::{Budget, Charge};

/// What the transport reads of the message being received.
#[derive(Debug, Default)]
pub(super) struct MessageWatch {
    /// When the first frame of the message being received began, if one is.
    started: Mutex<Option<Instant>>,
}

impl MessageWatch {
    /// When the message now being received began, if a message is half-way.
    pub(super) fn started(&self) -> Option<Instant> {
        *self.started.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn set(&self, started: Option<Instant>) {
        *self.started.lock().unwrap_or_else(|e| e.into_inner()) = started;
    }
}

#[derive(Debug)]
enum State {
    /// Reading a frame header: the bytes so far.
    Header { bytes: [u8; 14], have: usize },
    /// Skipping a frame's payload.
    Payload { remaining: u64, data: bool, fin: bool },
}

/// The connection's IO, watched.
pub(super) struct Watched<T> {
    inner: T,
    state: State,
    watch: Arc<MessageWatch>,
    budget: Arc<Budget>,
    /// The bytes of the message being received, charged to the budget.
    charge: Option<Charge>,
    message_bytes: usize,
}

impl<T> Watched<T> {
    pub(super) fn new(inner: T, watch: Arc<MessageWatch>, budget: Arc<Budget>) -> Watched<T> {
        Watched { inner, state: State::Header { bytes: [0; 14], have: 0 }, watch, budget, charge: None, message_bytes: 0 }
    }

    /// Follows `bytes` through the frame headers; an error when the message outgrows the budget.
    fn observe(&mut self, mut bytes: &[u8]) -> std::io::Result<()> {
        while !bytes.is_empty() {
            match &mut self.state {
                State::Header { bytes: header, have } => {
                    if *have == 0 && self.watch.started().is_none() && is_data(bytes[0]) {
                        self.watch.set(Some(Instant::now()));
                    }
                    let need = header_len(&header[..*have]).unwrap_or(2);
                    let take = (need - *have).min(bytes.len());
                    header[*have..*have + take].copy_from_slice(&bytes[..take]);
                    *have += take;
                    bytes = &bytes[take..];
                    let Some(full) = header_len(&header[..*have]) else { continue };
                    if *have < full {
                        continue;
                    }
                    let (fin, opcode, length) = decode(&header[..full]);
                    let data = opcode < 8;
                    if data && self.watch.started().is_none() {
                        self.watch.set(Some(Instant::now()));
                    }
                    if data {
                        self.message_bytes = self.message_bytes.saturating_add(usize::try_from(length).unwrap_or(usize::MAX));
                        self.charge_message()?;
                    }
                    self.state = State::Payload { remaining: length, data, fin };
                    self.frame_end_if_done();
                }
                State::Payload { remaining, .. } => {
                    let skip = (*remaining).min(bytes.len() as u64);
                    *remaining -= skip;
                    bytes = &bytes[usize::try_from(skip).unwrap_or(bytes.len())..];
                    self.frame_end_if_done();
                }
            }
        }
        Ok(())
    }

    fn charge_message(&mut self) -> std::io::Result<()> {
        let refused = match &mut self.charge {
            Some(charge) => charge.grow_to(self.message_bytes).err(),
            None => match self.budget.charge(self.message_bytes) {
                Ok(charge) => {
                    self.charge = Some(charge);
                    None
                }
                Err(over) => Some(over),
            },
        };
        match refused {
            Some(over) => Err(std::io::Error::other(over)),
            None => Ok(()),
        }
    }

    fn frame_end_if_done(&mut self) {
        let State::Payload { remaining: 0, data, fin } = self.state else { return };
        if data && fin {
            // The message is whole; the library now holds it and hands it on.
            self.watch.set(None);
            self.charge = None;
            self.message_bytes = 0;
        }
        self.state = State::Header { bytes: [0; 14], have: 0 };
    }
}

/// Whether a frame's first byte starts a data frame (text, binary or continuation).
fn is_data(first: u8) -> bool {
    first & 0x0f < 8
}

/// The length of a header that begins with `bytes`, once its first two bytes are known.
fn header_len(bytes: &[u8]) -> Option<usize> {
    let second = *bytes.get(1)?;
    let extended = match second & 0x7f {
        126 => 2,
        127 => 8,
        _ => 0,
    };
    let mask = if second & 0x80 != 0 { 4 } else { 0 };
    Some(2 + extended + mask)
}

/// FIN, opcode and payload length of a whole header.
fn decode(header: &[u8]) -> (bool, u8, u64) {
    let fin = header[0] & 0x80 != 0;
    let opcode = header[0] & 0x0f;
    let length = match header[1] & 0x7f {
        126 => u64::from(u16::from_be_bytes([header[2], header[3]])),
        127 => u64::from_be_bytes(header[2..10].try_into().unwrap_or([0xff; 8])),
        n => u64::from(n),
    };
    (fin, opcode, length)
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(Ok(())) => Poll::Ready(this.observe(&buf.filled()[before..])),
            other => other,
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bufs: &[std::io::IoSlice<'_>]) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client frame: FIN, opcode, masked payload.
    fn frame(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        match payload.len() {
            n if n < 126 => out.push(0x80 | n as u8),
            n if n <= 0xffff => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                out.push(0x80 | 127);
                out.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        out.extend_from_slice(&[1, 2, 3, 4]);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ [1, 2, 3, 4][i % 4]));
        out
    }

    fn watched(budget: Arc<Budget>) -> (Watched<tokio::io::Empty>, Arc<MessageWatch>) {
        let watch = Arc::new(MessageWatch::default());
        (Watched::new(tokio::io::empty(), Arc::clone(&watch), budget), watch)
    }

    #[test]
    fn a_fragmented_message_is_in_progress_until_its_last_fragment_whatever_comes_between() {
        let (mut w, watch) = watched(Budget::unlimited());
        w.observe(&frame(false, 1, b"hel")).expect("ok");
        let started = watch.started().expect("a message began");
        w.observe(&frame(true, 0xA, b"")).expect("a pong between fragments");
        assert_eq!(watch.started(), Some(started), "a pong does not end or restart the message");
        w.observe(&frame(false, 0, b"lo")).expect("ok");
        assert!(watch.started().is_some());
        w.observe(&frame(true, 0, b"!")).expect("ok");
        assert_eq!(watch.started(), None, "the last fragment ends it");
        w.observe(&frame(true, 0x9, b"ping")).expect("ok");
        assert_eq!(watch.started(), None, "control frames alone start nothing");
    }

    #[test]
    fn a_frame_split_anywhere_is_followed_byte_by_byte() {
        let (mut w, watch) = watched(Budget::unlimited());
        let big = frame(true, 2, &vec![7u8; 70_000]);
        for byte in &big[..big.len() - 1] {
            w.observe(std::slice::from_ref(byte)).expect("ok");
            assert!(watch.started().is_some());
        }
        w.observe(&big[big.len() - 1..]).expect("ok");
        assert_eq!(watch.started(), None);
        w.observe(&frame(true, 1, b"x")).expect("ok");
        assert_eq!(watch.started(), None, "a one-frame message that arrived whole is done");
    }

    #[test]
    fn a_message_that_outgrows_the_budget_fails_the_read_and_a_finished_one_gives_its_bytes_back() {
        let budget = Budget::new(crate::budget::MIN_BUDGET);
        let (mut w, _) = watched(Arc::clone(&budget));
        w.observe(&frame(true, 1, &vec![b'a'; 1000])).expect("fits");
        assert_eq!(budget.used(), 0, "a whole message is the library's, not charged here");
        let mut header = vec![0x01u8, 0x80 | 127];
        header.extend_from_slice(&((crate::budget::MIN_BUDGET as u64) + 1).to_be_bytes());
        header.extend_from_slice(&[0, 0, 0, 0]);
        assert!(w.observe(&header).is_err(), "a frame announcing more than the budget is refused before its payload");
    }
}
