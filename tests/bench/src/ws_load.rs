//! The WebSocket load client: a lean one, on a thread bound to the client core, so that calls per
//! second with many requests in flight measure the server, not the client (the harness's own
//! `tokio-tungstenite` client was the limit of the native baseline: 97k calls/s against 117–187k
//! with this one, which uses a fifth of its core there). Blocking reads and writes on one socket;
//! each read takes every reply that arrived, and the requests that refill the window go out
//! together in one write, as the stdio figure's client does. The frames are masked as RFC 6455
//! requires of a client.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};

use crate::stdio::{INITIALIZE, INITIALIZED, echo_call};

/// The masking key of every frame (any key is valid; the server unmasks each frame with it).
const MASK: [u8; 4] = [0x37, 0xfa, 0x21, 0x3d];

/// One pipelined run.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoadRun {
    pub calls_per_s: f64,
    /// The client thread's CPU over the run, in CPUs (1.0: its core was never idle).
    pub client_cpu: f64,
}

/// Appends `text` as one masked text frame.
fn push_frame(out: &mut Vec<u8>, text: &str) {
    let payload = text.as_bytes();
    out.push(0x81);
    match payload.len() {
        len @ 0..=125 => out.push(0x80 | len as u8),
        len @ 126..=0xffff => {
            out.push(0x80 | 126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        len => {
            out.push(0x80 | 127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
    out.extend_from_slice(&MASK);
    out.extend(payload.iter().enumerate().map(|(i, byte)| byte ^ MASK[i % 4]));
}

/// The server's frames, read from one socket.
struct Frames {
    stream: TcpStream,
    buffer: Vec<u8>,
    start: usize,
}

impl Frames {
    /// Every complete text frame now in the buffer (reading once when there is none), each
    /// checked by `check`; pings, pongs and other control frames are skipped.
    fn take(&mut self, check: &mut impl FnMut(&[u8]) -> Result<()>) -> Result<usize> {
        loop {
            let mut texts = 0;
            while let Some((opcode, payload, next)) = frame_at(&self.buffer[self.start..])? {
                match opcode {
                    0x1 => {
                        check(payload)?;
                        texts += 1;
                    }
                    0x8 => bail!("the server closed the WebSocket"),
                    _ => {}
                }
                self.start += next;
            }
            self.buffer.drain(..self.start);
            self.start = 0;
            if texts > 0 {
                return Ok(texts);
            }
            let filled = self.buffer.len();
            self.buffer.resize(filled + 64 * 1024, 0);
            let read = self.stream.read(&mut self.buffer[filled..]).context("read from the WebSocket")?;
            self.buffer.truncate(filled + read);
            ensure!(read > 0, "the server closed the connection");
        }
    }
}

/// The frame at the start of `bytes` (an unmasked server frame): its opcode, its payload and
/// its whole length; `None` until it has arrived whole.
fn frame_at(bytes: &[u8]) -> Result<Option<(u8, &[u8], usize)>> {
    if bytes.len() < 2 {
        return Ok(None);
    }
    ensure!(bytes[0] & 0x80 != 0, "a fragmented message (the server sends each message whole)");
    ensure!(bytes[1] & 0x80 == 0, "a masked frame from the server");
    let (len, header) = match bytes[1] & 0x7f {
        126 if bytes.len() >= 4 => (u16::from_be_bytes([bytes[2], bytes[3]]) as usize, 4),
        127 if bytes.len() >= 10 => (u64::from_be_bytes(bytes[2..10].try_into().expect("eight bytes")) as usize, 10),
        126 | 127 => return Ok(None),
        len => (len as usize, 2),
    };
    if bytes.len() < header + len {
        return Ok(None);
    }
    Ok(Some((bytes[0] & 0x0f, &bytes[header..header + len], header + len)))
}

fn is_result(payload: &[u8]) -> Result<()> {
    ensure!(payload.windows(8).any(|w| w == b"\"result\""), "a call failed: {}", String::from_utf8_lossy(payload));
    Ok(())
}

/// Opens `/ws` with the `mcp` subprotocol and initializes.
fn connect(addr: SocketAddr) -> Result<Frames> {
    let mut stream = TcpStream::connect_timeout(&addr, crate::process::WAIT).context("connect")?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(crate::process::WAIT))?;
    stream.set_write_timeout(Some(crate::process::WAIT))?;
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n\r\n"
    );
    stream.write_all(request.as_bytes())?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        ensure!(head.len() < 8192, "the upgrade answer has no end");
        ensure!(stream.read(&mut byte)? == 1, "the server closed the connection during the upgrade");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head);
    ensure!(head.starts_with("HTTP/1.1 101"), "the upgrade was refused: {head}");
    ensure!(head.to_ascii_lowercase().contains("sec-websocket-protocol: mcp"), "the server did not choose `mcp`: {head}");
    let mut frames = Frames { stream, buffer: Vec::with_capacity(64 * 1024), start: 0 };
    let mut out = Vec::new();
    push_frame(&mut out, INITIALIZE);
    frames.stream.write_all(&out)?;
    frames.take(&mut is_result)?;
    out.clear();
    push_frame(&mut out, INITIALIZED);
    frames.stream.write_all(&out)?;
    Ok(frames)
}

/// `calls` `text_echo` calls with `depth` kept in flight, after `warm_up` of them, from the
/// calling thread (bound to its core by the caller).
pub fn pipelined(addr: SocketAddr, depth: usize, warm_up: usize, calls: usize) -> Result<LoadRun> {
    let mut frames = connect(addr)?;
    let mut batch = Vec::with_capacity(depth * 160);
    let mut next_id = 1;
    let mut run = |count: usize, frames: &mut Frames| -> Result<(usize, Duration)> {
        let started = Instant::now();
        let (mut sent, mut received) = (0, 0);
        while received < count {
            batch.clear();
            while sent < count && sent - received < depth {
                next_id += 1;
                push_frame(&mut batch, &echo_call(next_id));
                sent += 1;
            }
            if !batch.is_empty() {
                frames.stream.write_all(&batch).context("write to the WebSocket")?;
            }
            received += frames.take(&mut is_result)?;
        }
        Ok((received, started.elapsed()))
    };
    run(warm_up, &mut frames)?;
    let cpu_before = crate::measure::thread_cpu_ns();
    let (received, took) = run(calls, &mut frames)?;
    let client_cpu = (crate::measure::thread_cpu_ns() - cpu_before) as f64 / 1e9 / took.as_secs_f64();
    let mut close = Vec::new();
    close.extend_from_slice(&[0x88, 0x80]);
    close.extend_from_slice(&MASK);
    let _ = frames.stream.write_all(&close);
    Ok(LoadRun { calls_per_s: received as f64 / took.as_secs_f64(), client_cpu })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_is_masked_and_read_back_whole_only_once_it_has_arrived() {
        let mut out = Vec::new();
        push_frame(&mut out, &"x".repeat(200));
        assert_eq!(&out[..4], &[0x81, 0x80 | 126, 0, 200]);
        assert_eq!(out[8] ^ MASK[0], b'x');
        // A server frame (unmasked) of 200 bytes, whole and cut short.
        let mut frame = vec![0x81, 126, 0, 200];
        frame.extend(std::iter::repeat_n(b'y', 200));
        let (opcode, payload, next) = frame_at(&frame).expect("valid").expect("whole");
        assert_eq!((opcode, payload.len(), next), (1, 200, 204));
        assert!(frame_at(&frame[..100]).expect("valid").is_none());
        assert!(frame_at(&frame[..3]).expect("valid").is_none());
    }
}
