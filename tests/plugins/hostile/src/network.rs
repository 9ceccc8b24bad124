//! Network and ambient-authority attacks: outgoing HTTP (any URL, redirects followed by hand,
//! many requests at once, oversized headers), raw `wasi:sockets` TCP and UDP (connect, bind,
//! listen, send), name lookups, and what the plugin can learn of its environment, arguments,
//! working directory and stdin.

use wasip2::http::outgoing_handler::{self, FutureIncomingResponse};
use wasip2::http::types::{Fields, IncomingResponse, OutgoingRequest, Scheme};
use wasip2::io::streams::StreamError;
use wasip2::sockets::instance_network::instance_network;
use wasip2::sockets::ip_name_lookup::resolve_addresses;
use wasip2::sockets::network::{ErrorCode as SocketError, IpAddressFamily, IpSocketAddress, Ipv4SocketAddress};
use wasip2::sockets::tcp_create_socket::create_tcp_socket;
use wasip2::sockets::udp::OutgoingDatagram;
use wasip2::sockets::udp_create_socket::create_udp_socket;

use crate::{Args, Outcome, Refused};

impl From<StreamError> for Refused {
    fn from(error: StreamError) -> Refused {
        match error {
            StreamError::Closed => Refused("stream closed".to_owned()),
            StreamError::LastOperationFailed(e) => Refused(e.to_debug_string()),
        }
    }
}

/// Everything ambient the plugin can see: its environment, arguments, working directory, and
/// what reading stdin gives.
pub(crate) fn ambient() -> Outcome {
    let env: serde_json::Map<String, serde_json::Value> = wasip2::cli::environment::get_environment().into_iter().map(|(k, v)| (k, v.into())).collect();
    let stdin = match wasip2::cli::stdin::get_stdin().blocking_read(4096) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(StreamError::Closed) => String::new(),
        Err(StreamError::LastOperationFailed(e)) => format!("stdin failed: {}", e.to_debug_string()),
    };
    let seen = serde_json::json!({
        "env": env,
        "args": wasip2::cli::environment::get_arguments(),
        "cwd": wasip2::cli::environment::initial_cwd(),
        "stdin": stdin,
    });
    Ok(seen.to_string())
}

/// Starts a GET of `url` (`http[s]://authority/path`) with one optional `name: value` header.
fn start(url: &str, header: Option<&str>) -> Result<FutureIncomingResponse, Refused> {
    let (scheme, rest) = if let Some(rest) = url.strip_prefix("http://") {
        (Scheme::Http, rest)
    } else if let Some(rest) = url.strip_prefix("https://") {
        (Scheme::Https, rest)
    } else {
        return Err(Refused(format!("unsupported url {url}")));
    };
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| (&rest[..i], &rest[i..]));
    let fields = Fields::new();
    if let Some((name, value)) = header.and_then(|h| h.split_once(':')) {
        fields.append(name.trim(), value.trim().as_bytes()).map_err(|e| Refused(format!("header: {e:?}")))?;
    }
    let request = OutgoingRequest::new(fields);
    request.set_scheme(Some(&scheme)).map_err(|()| Refused("scheme refused".to_owned()))?;
    request.set_authority(Some(authority)).map_err(|()| Refused(format!("authority `{authority}` refused")))?;
    request.set_path_with_query(Some(path)).map_err(|()| Refused("path refused".to_owned()))?;
    outgoing_handler::handle(request, None).map_err(|e| Refused(format!("{e:?}")))
}

/// Waits for the response of a started request.
fn response(pending: &FutureIncomingResponse) -> Result<IncomingResponse, Refused> {
    pending.subscribe().block();
    match pending.get() {
        Some(Ok(Ok(response))) => Ok(response),
        Some(Ok(Err(e))) => Err(Refused(format!("{e:?}"))),
        Some(Err(())) => Err(Refused("response taken twice".to_owned())),
        None => Err(Refused("no response".to_owned())),
    }
}

/// The body of a response as text, or (with `discard`) only how many bytes it had.
fn body(response: IncomingResponse, discard: bool) -> Result<String, Refused> {
    let body = response.consume().map_err(|()| Refused("no body".to_owned()))?;
    let stream = body.stream().map_err(|()| Refused("no body stream".to_owned()))?;
    let mut bytes = Vec::new();
    let mut count = 0usize;
    loop {
        match stream.blocking_read(64 * 1024) {
            Ok(chunk) => {
                count += chunk.len();
                if !discard {
                    bytes.extend(chunk);
                }
            }
            Err(StreamError::Closed) => break,
            Err(e) => return Err(Refused(format!("body after {count} bytes: {}", Refused::from(e).0))),
        }
    }
    Ok(if discard { format!("{count} bytes") } else { String::from_utf8_lossy(&bytes).into_owned() })
}

/// `location` made absolute against `base` (absolute URLs and absolute paths).
fn resolve(base: &str, location: &str) -> String {
    if location.contains("://") {
        return location.to_owned();
    }
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let authority_end = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
    format!("{}{location}", &base[..authority_end])
}

/// GETs `url`, following up to `redirects` redirects, each as a new request; answers
/// `<status> <body>` (with `discard`, the body's size).
pub(crate) fn http_get(args: &Args) -> Outcome {
    let mut url = args.str("url").to_owned();
    for _ in 0..=args.int("redirects") {
        let response = response(&start(&url, None)?)?;
        let status = response.status();
        let location = response.headers().get("location").into_iter().next();
        if let (300..=399, Some(location)) = (status, location) {
            url = resolve(&url, &String::from_utf8_lossy(&location));
            continue;
        }
        return Ok(format!("{status} {}", body(response, args.flag("discard"))?));
    }
    Err(Refused("too many redirects".to_owned()))
}

/// Opens `count` GETs of `url` at once, then waits for all; reports how many were answered.
pub(crate) fn http_parallel(args: &Args) -> Outcome {
    let mut open = Vec::new();
    let mut refused = Vec::new();
    for _ in 0..args.int("count") {
        match start(args.str("url"), None) {
            Ok(pending) => open.push(pending),
            Err(Refused(why)) => refused.push(why),
        }
    }
    for pending in &open {
        match response(pending) {
            Ok(_) => {}
            Err(Refused(why)) => refused.push(why),
        }
    }
    let answered = args.int("count") as usize - refused.len();
    if refused.is_empty() {
        Ok(format!("{answered} answered"))
    } else {
        Err(Refused(format!("{answered} answered, {} refused: {}", refused.len(), refused[0])))
    }
}

/// Appends `count` values of `bytes` bytes each to one header set.
pub(crate) fn header_bomb(args: &Args) -> Outcome {
    let fields = Fields::new();
    let value = vec![b'v'; args.int("bytes") as usize];
    for i in 0..args.int("count") {
        fields.append("x-bomb", &value).map_err(|e| Refused(format!("value {i}: {e:?}")))?;
    }
    Ok(format!("{} values of {} bytes held", args.int("count"), value.len()))
}

fn loopback(port: u64) -> IpSocketAddress {
    IpSocketAddress::Ipv4(Ipv4SocketAddress { port: port as u16, address: (127, 0, 0, 1) })
}

fn socket_step(step: &str) -> impl Fn(SocketError) -> Refused + '_ {
    move |code| Refused(format!("{step}: {}", code.name()))
}

/// Connects a raw TCP socket to 127.0.0.1:`port`, sends a line and reads the answer.
pub(crate) fn tcp_connect(args: &Args) -> Outcome {
    let socket = create_tcp_socket(IpAddressFamily::Ipv4).map_err(socket_step("create-tcp-socket"))?;
    socket.start_connect(&instance_network(), loopback(args.int("port"))).map_err(socket_step("start-connect"))?;
    let (input, output) = loop {
        match socket.finish_connect() {
            Err(SocketError::WouldBlock) => socket.subscribe().block(),
            other => break other.map_err(socket_step("finish-connect"))?,
        }
    };
    output.blocking_write_and_flush(b"GET / HTTP/1.0\r\n\r\n")?;
    let reply = input.blocking_read(4096)?;
    Ok(format!("connected: {}", String::from_utf8_lossy(&reply)))
}

/// Binds a raw TCP socket to 127.0.0.1:`port` and listens on it.
pub(crate) fn tcp_listen(args: &Args) -> Outcome {
    let socket = create_tcp_socket(IpAddressFamily::Ipv4).map_err(socket_step("create-tcp-socket"))?;
    socket.start_bind(&instance_network(), loopback(args.int("port"))).map_err(socket_step("start-bind"))?;
    loop {
        match socket.finish_bind() {
            Err(SocketError::WouldBlock) => socket.subscribe().block(),
            other => break other.map_err(socket_step("finish-bind"))?,
        }
    }
    socket.start_listen().map_err(socket_step("start-listen"))?;
    loop {
        match socket.finish_listen() {
            Err(SocketError::WouldBlock) => socket.subscribe().block(),
            other => break other.map_err(socket_step("finish-listen"))?,
        }
    }
    Ok("listening".to_owned())
}

fn bound_udp(port: u64) -> Result<wasip2::sockets::udp::UdpSocket, Refused> {
    let socket = create_udp_socket(IpAddressFamily::Ipv4).map_err(socket_step("create-udp-socket"))?;
    socket.start_bind(&instance_network(), loopback(port)).map_err(socket_step("start-bind"))?;
    loop {
        match socket.finish_bind() {
            Err(SocketError::WouldBlock) => socket.subscribe().block(),
            other => break other.map_err(socket_step("finish-bind"))?,
        }
    }
    Ok(socket)
}

/// Binds a raw UDP socket to 127.0.0.1:`port`.
pub(crate) fn udp_bind(args: &Args) -> Outcome {
    bound_udp(args.int("port"))?;
    Ok("bound".to_owned())
}

/// Sends one datagram from a raw UDP socket to 127.0.0.1:`port`.
pub(crate) fn udp_send(args: &Args) -> Outcome {
    let socket = bound_udp(0)?;
    let (_incoming, outgoing) = socket.stream(Some(loopback(args.int("port")))).map_err(socket_step("stream"))?;
    outgoing.subscribe().block();
    outgoing.check_send().map_err(socket_step("check-send"))?;
    let sent = outgoing.send(&[OutgoingDatagram { data: b"datagram from a plugin".to_vec(), remote_address: None }]).map_err(socket_step("send"))?;
    Ok(format!("sent {sent} datagram(s)"))
}

/// Resolves `name` through `wasi:sockets/ip-name-lookup`.
pub(crate) fn dns_lookup(args: &Args) -> Outcome {
    let stream = resolve_addresses(&instance_network(), args.str("name")).map_err(socket_step("resolve-addresses"))?;
    let mut addresses = Vec::new();
    loop {
        match stream.resolve_next_address() {
            Ok(Some(address)) => addresses.push(format!("{address:?}")),
            Ok(None) => return Ok(addresses.join(", ")),
            Err(SocketError::WouldBlock) => stream.subscribe().block(),
            Err(code) => return Err(socket_step("resolve-next-address")(code)),
        }
    }
}
