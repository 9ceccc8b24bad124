//! The loopback servers the network attacks aim at: a granted one, a decoy that must never be
//! reached (it counts every connection and datagram), redirects into and out of the grant, and
//! servers that never answer, answer endlessly, or drip one byte at a time.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The body the granted server answers with.
pub const GRANTED_BODY: &str = "GRANTED-BODY";
/// The body the decoy answers with: an attack's result must never contain it.
pub const DECOY_BODY: &str = "DECOY-BODY";

/// What a server does with each connection.
#[derive(Debug, Clone)]
enum Behaviour {
    /// Reads the request head, writes this reply and closes.
    Reply(String),
    /// Reads the request head and then holds the connection without a byte.
    Silent,
    /// Sends a 200 head, then body bytes as fast as the reader takes them, forever.
    Endless,
    /// Sends a 200 head, then one body byte every 100 ms, forever.
    Drip,
}

/// Every server of one test, started on 127.0.0.1 with ports chosen by the system.
#[derive(Debug)]
pub struct Servers {
    pub granted: u16,
    pub decoy: u16,
    pub redirect_out: u16,
    pub redirect_in: u16,
    pub silent: u16,
    pub endless: u16,
    pub drip: u16,
    /// A UDP socket that counts the datagrams it is sent.
    pub udp: u16,
    decoy_connections: Arc<AtomicUsize>,
    /// Non-blocking, never read: a datagram sent to it stays queued for `udp_datagram_arrived`.
    udp_socket: std::net::UdpSocket,
}

impl Servers {
    /// Starts every server on the current tokio runtime.
    pub async fn start() -> Servers {
        let ok = |body: &str| format!("HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
        let redirect = |to: String| format!("HTTP/1.1 302 Found\r\nlocation: {to}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        let (granted, _) = serve(Behaviour::Reply(ok(GRANTED_BODY))).await;
        let (decoy, decoy_connections) = serve(Behaviour::Reply(ok(DECOY_BODY))).await;
        let (redirect_out, _) = serve(Behaviour::Reply(redirect(format!("http://127.0.0.1:{}/", decoy.port())))).await;
        let (redirect_in, _) = serve(Behaviour::Reply(redirect(format!("http://127.0.0.1:{}/landing", granted.port())))).await;
        let (silent, _) = serve(Behaviour::Silent).await;
        let (endless, _) = serve(Behaviour::Endless).await;
        let (drip, _) = serve(Behaviour::Drip).await;
        let udp_socket = std::net::UdpSocket::bind("127.0.0.1:0").expect("bind the UDP decoy");
        udp_socket.set_nonblocking(true).expect("non-blocking UDP decoy");
        Servers {
            granted: granted.port(),
            decoy: decoy.port(),
            redirect_out: redirect_out.port(),
            redirect_in: redirect_in.port(),
            silent: silent.port(),
            endless: endless.port(),
            drip: drip.port(),
            udp: udp_socket.local_addr().expect("UDP decoy address").port(),
            decoy_connections,
            udp_socket,
        }
    }

    /// Connections the decoy has accepted so far.
    pub fn decoy_connections(&self) -> usize {
        self.decoy_connections.load(Ordering::SeqCst)
    }

    /// Whether a datagram is waiting at the UDP decoy (it is never read, so any one sent stays;
    /// loopback delivers a datagram before `send` returns).
    pub fn udp_datagram_arrived(&self) -> bool {
        let mut buf = [0u8; 64];
        self.udp_socket.peek_from(&mut buf).is_ok()
    }
}

async fn serve(behaviour: Behaviour) -> (SocketAddr, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind loopback");
    let addr = listener.local_addr().expect("local address");
    let connections = Arc::new(AtomicUsize::new(0));
    let counted = connections.clone();
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            tokio::spawn(answer(socket, behaviour.clone()));
        }
    });
    (addr, connections)
}

/// Reads until the end of a request head (or EOF).
async fn read_head(socket: &mut TcpStream) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match socket.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
}

async fn answer(mut socket: TcpStream, behaviour: Behaviour) {
    read_head(&mut socket).await;
    let streaming_head = b"HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\nconnection: close\r\n\r\n";
    match behaviour {
        Behaviour::Reply(reply) => {
            let _ = socket.write_all(reply.as_bytes()).await;
        }
        Behaviour::Silent => {
            // Holds the connection until the client gives up.
            let mut buf = [0u8; 1024];
            while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
        }
        Behaviour::Endless => {
            let chunk = vec![b'e'; 64 * 1024];
            if socket.write_all(streaming_head).await.is_ok() {
                while socket.write_all(&chunk).await.is_ok() {}
            }
        }
        Behaviour::Drip => {
            if socket.write_all(streaming_head).await.is_ok() {
                let mut every = tokio::time::interval(Duration::from_millis(100));
                loop {
                    every.tick().await;
                    if socket.write_all(b"d").await.is_err() {
                        break;
                    }
                }
            }
        }
    }
}
