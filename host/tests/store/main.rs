//! The shared store against a real `redis-server` (Debian package `redis-server`, started here
//! on a free loopback port, without persistence): the task scripts' checks (owner, status,
//! runner, the claim that hands a round to exactly one replica), cluster-wide rate limits
//! charged all or nothing, single-use approvals, the feed, and a store stopped and started
//! again.

use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use paddock::store::{Answered, Bucket, Cancelled, Charged, Created, FeedEvent, MAX_STORED_PER_OWNER, Store, StoreError};

const MATERIAL: &[u8] = b"the shared key material of a test cluster";

/// `redis-server` on `PATH` (or the Debian package's); missing is a failure under `CI=true`.
fn redis_server() -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH")
        .and_then(|path| std::env::split_paths(&path).chain([std::path::PathBuf::from("/usr/bin")]).map(|d| d.join("redis-server")).find(|p| p.is_file()));
    assert!(
        found.is_some() || std::env::var_os("CI").is_none(),
        "redis-server must be installed in CI (scripts/test installs the Debian package `redis-server`)"
    );
    found
}

/// Starts `redis-server` without persistence, with `args`; `None` when it is missing (outside CI).
fn spawn_redis(args: &[&str]) -> Option<std::process::Child> {
    let binary = redis_server()?;
    let child = std::process::Command::new(binary)
        .args(["--save", "", "--appendonly", "no"])
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start redis-server");
    Some(child)
}

/// A `redis-server` on a loopback port, killed when dropped.
struct Redis {
    child: Option<std::process::Child>,
    port: u16,
}

impl Redis {
    fn start() -> Option<Redis> {
        let port = std::net::TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).expect("a port");
        Redis::on(port)
    }

    fn on(port: u16) -> Option<Redis> {
        let child = spawn_redis(&["--port", &port.to_string(), "--bind", "127.0.0.1", "--maxmemory", "64mb"])?;
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(std::time::Instant::now() < deadline, "redis-server did not listen in time");
            std::thread::sleep(Duration::from_millis(20));
        }
        Some(Redis { child: Some(child), port })
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn next(rx: &mut tokio::sync::mpsc::UnboundedReceiver<FeedEvent>) -> FeedEvent {
    tokio::time::timeout(Duration::from_secs(20), rx.recv()).await.expect("an event in time").expect("the feed")
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
}

async fn task_of(store: &Store, id: &str, owner: &str, runner: &str) {
    let fields = [("owner", owner.to_owned()), ("plugin", "p".to_owned()), ("status", "working".to_owned()), ("runner", runner.to_owned())];
    assert_eq!(store.create_task(id, owner, now_ms() + 60_000, &fields).await.expect("create"), Created::Yes);
}

fn fields(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
}

#[tokio::test]
async fn a_task_is_seen_answered_and_cancelled_only_by_its_owner_and_a_finished_one_never_changes() {
    let Some(redis) = Redis::start() else { return };
    let store = Store::open(&redis.url(), MATERIAL, false).await.expect("open");
    task_of(&store, "r0.t1", "alice", "r0").await;
    assert_eq!(
        store.create_task("r0.t1", "alice", now_ms() + 60_000, &[("owner", "alice".to_owned())]).await.expect("create"),
        Created::Exists,
        "an id is created once"
    );
    assert_eq!(store.task("r0.t1").await.expect("get").and_then(|t| t.get("owner").map(str::to_owned)).as_deref(), Some("alice"));
    assert!(store.task("r0.nope").await.expect("get").is_none());

    // Only the runner writes.
    assert!(!store.write_task("r0.t1", "r1", false, &fields(&[("message", "x")])).await.expect("write"));
    // It parks: questions, a continuation, a deadline, no runner.
    let park = fields(&[
        ("status", "input_required"),
        ("runner", ""),
        ("request:a", "{\"method\":\"elicitation/create\"}"),
        ("request:b", "{}"),
        ("continuation", "sealed"),
    ]);
    let mut park = park;
    park.push(("deadline".to_owned(), (now_ms() + 60_000).to_string()));
    assert!(store.write_task("r0.t1", "r0", true, &park).await.expect("park"));
    let parked = store.task("r0.t1").await.expect("get").expect("a task");
    assert_eq!(parked.requests().count(), 2);

    // Another owner's answers and cancellation are an unknown task's.
    assert_eq!(store.answer_task("r0.t1", "mallory", "r2", now_ms(), "t", &fields(&[("a", "1")])).await.expect("answer"), Answered::Unknown);
    assert_eq!(store.cancel_task("r0.t1", "mallory", "no", "t").await.expect("cancel"), Cancelled::Unknown);
    // Half the answers: still waiting; the rest through another replica claims it for that one,
    // with the answers as the client sent them (an empty array stays an array).
    assert_eq!(store.answer_task("r0.t1", "alice", "r1", now_ms(), "t", &fields(&[("a", "[]"), ("zzz", "ignored")])).await.expect("answer"), Answered::Waiting);
    match store.answer_task("r0.t1", "alice", "r2", now_ms(), "t", &fields(&[("b", "{\"n\":12345678901234567890}")])).await.expect("answer") {
        Answered::Claimed { continuation, mut answers } => {
            assert_eq!(continuation, "sealed");
            answers.sort();
            assert_eq!(answers, fields(&[("a", "[]"), ("b", "{\"n\":12345678901234567890}")]));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(store.answer_task("r0.t1", "alice", "r1", now_ms(), "t", &fields(&[("b", "1")])).await.expect("answer"), Answered::NotWaiting, "claimed once");
    // The old runner is out; the claimer writes.
    assert!(!store.write_task("r0.t1", "r0", false, &fields(&[("message", "stale")])).await.expect("write"));
    assert!(store.write_task("r0.t1", "r2", true, &fields(&[("status", "completed"), ("outcome", "{}")])).await.expect("finish"));
    // Over: nothing changes it again.
    assert!(!store.write_task("r0.t1", "r2", false, &fields(&[("status", "working")])).await.expect("write"));
    assert_eq!(store.cancel_task("r0.t1", "alice", "late", "t").await.expect("cancel"), Cancelled::AlreadyOver);
    assert_eq!(store.task("r0.t1").await.expect("get").and_then(|t| t.get("status").map(str::to_owned)).as_deref(), Some("completed"));
}

#[tokio::test]
async fn answers_after_the_deadline_are_late_and_tasks_are_listed_per_owner() {
    let Some(redis) = Redis::start() else { return };
    let store = Store::open(&redis.url(), MATERIAL, false).await.expect("open");
    task_of(&store, "r0.late", "alice", "r0").await;
    let park = fields(&[("status", "input_required"), ("runner", ""), ("request:a", "{}"), ("deadline", "1")]);
    assert!(store.write_task("r0.late", "r0", true, &park).await.expect("park"));
    assert_eq!(store.answer_task("r0.late", "alice", "r1", now_ms(), "t", &fields(&[("a", "1")])).await.expect("answer"), Answered::Late);
    task_of(&store, "r0.other", "bob", "r0").await;
    task_of(&store, "r1.second", "alice", "r1").await;
    let mut listed: Vec<String> = store.tasks_of("alice", 100).await.expect("list").into_iter().map(|(id, _)| id).collect();
    listed.sort();
    assert_eq!(listed, ["r0.late", "r1.second"]);
    // Another cluster (another key) sharing the server sees none of it.
    let stranger = Store::open(&redis.url(), b"another cluster's key material......", false).await.expect("open");
    assert!(stranger.task("r0.late").await.expect("get").is_none());
    assert!(stranger.tasks_of("alice", 100).await.expect("list").is_empty());
}

#[tokio::test]
async fn a_use_charges_every_bucket_or_none_and_an_approval_is_spent_once() {
    let Some(redis) = Redis::start() else { return };
    let store = Store::open(&redis.url(), MATERIAL, false).await.expect("open");
    let wide = Bucket { key: "principal alice".to_owned(), interval: Duration::from_secs(60), burst: 3 };
    let narrow = Bucket { key: "tool alice slow".to_owned(), interval: Duration::from_secs(60), burst: 1 };
    assert_eq!(store.charge(&[narrow.clone(), wide.clone()]).await.expect("charge"), Charged::Admitted);
    match store.charge(&[narrow.clone(), wide.clone()]).await.expect("charge") {
        Charged::Refused { index: 0, retry_after } => {
            assert!(retry_after > Duration::from_secs(50) && retry_after <= Duration::from_secs(60), "{retry_after:?}")
        }
        other => panic!("{other:?}"),
    }
    // The refusal spent nothing of the wide bucket: two more uses of it remain.
    assert_eq!(store.charge(std::slice::from_ref(&wide)).await.expect("charge"), Charged::Admitted);
    assert_eq!(store.charge(std::slice::from_ref(&wide)).await.expect("charge"), Charged::Admitted);
    assert!(matches!(store.charge(std::slice::from_ref(&wide)).await.expect("charge"), Charged::Refused { index: 0, .. }));
    // Another replica (another connection) shares the buckets.
    let other = Store::open(&redis.url(), MATERIAL, false).await.expect("open");
    assert!(matches!(other.charge(&[wide]).await.expect("charge"), Charged::Refused { .. }));

    let until = now_ms() + 60_000;
    assert!(store.spend(&[7; 16], until).await.expect("spend"));
    assert!(!other.spend(&[7; 16], until).await.expect("spend"), "spent once, cluster-wide");
    assert!(other.spend(&[8; 16], until).await.expect("spend"));
}

#[tokio::test]
async fn the_feed_reaches_every_replica_and_a_cut_off_one_is_told_to_resync_when_the_store_is_back() {
    let Some(mut redis) = Redis::start() else { return };
    let port = redis.port;
    let store = Arc::new(Store::open(&redis.url(), MATERIAL, false).await.expect("open"));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let follower = Arc::new(Store::open(&redis.url(), MATERIAL, false).await.expect("open"));
    let _following = follower.follow(move |event| {
        let _ = tx.send(event);
    });
    // Published until heard: the subscription may not be in place yet.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        store.publish("hello").await.expect("publish");
        if let Ok(Some(event)) = tokio::time::timeout(Duration::from_millis(100), rx.recv()).await {
            assert_eq!(event, FeedEvent::Change("hello".to_owned()));
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the follower never heard the feed");
    }
    // A cancellation reaches it on its own channel.
    task_of(&store, "r0.c", "alice", "r0").await;
    assert_eq!(store.cancel_task("r0.c", "alice", "bye", "t").await.expect("cancel"), Cancelled::Now);
    assert_eq!(next(&mut rx).await, FeedEvent::Cancel("r0.c".to_owned()));

    // The store stops: calls fail at once, naming it; then it comes back on the same port.
    redis.stop();
    let started = std::time::Instant::now();
    match store.task("r0.c").await {
        Err(StoreError::Unavailable(shown, _) | StoreError::Timeout(shown, _)) => assert!(shown.contains(&port.to_string()), "{shown}"),
        other => panic!("{other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert!(!store.is_ok());
    let _redis = Redis::on(port).expect("redis again");
    assert_eq!(next(&mut rx).await, FeedEvent::Resync, "the follower may have missed messages");
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while store.ping().await.is_err() {
        assert!(tokio::time::Instant::now() < deadline, "the store was not used again");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(store.is_ok());
}

#[tokio::test]
async fn a_store_on_a_unix_socket_is_used_as_one_on_tcp() {
    let dir = tempfile::tempdir().expect("dir");
    let socket = dir.path().join("redis.sock");
    let Some(mut child) = spawn_redis(&["--port", "0", "--unixsocket", &socket.display().to_string(), "--unixsocketperm", "700"]) else { return };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(std::time::Instant::now() < deadline, "redis-server made no socket in time");
        std::thread::sleep(Duration::from_millis(20));
    }
    let store = Store::open(&format!("unix://{}", socket.display()), MATERIAL, false).await.expect("open over the socket");
    task_of(&store, "r0.u", "alice", "r0").await;
    assert!(store.task("r0.u").await.expect("get").is_some());
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn an_owner_holds_a_bounded_number_of_tasks_in_the_store_and_a_finished_one_makes_room() {
    let Some(redis) = Redis::start() else { return };
    let store = Store::open(&redis.url(), MATERIAL, false).await.expect("open");
    for n in 0..MAX_STORED_PER_OWNER {
        task_of(&store, &format!("r0.many{n}"), "mallory", "r0").await;
    }
    let more = [("owner", "mallory".to_owned()), ("status", "working".to_owned()), ("runner", "r0".to_owned())];
    assert_eq!(store.create_task("r0.one-more", "mallory", now_ms() + 60_000, &more).await.expect("create"), Created::Full, "every one unfinished");
    // Another owner is not held to mallory's bound.
    task_of(&store, "r0.alice", "alice", "r0").await;
    // One finishes: it makes room, and is the one given up.
    assert!(store.write_task("r0.many7", "r0", true, &fields(&[("status", "completed")])).await.expect("finish"));
    assert_eq!(store.create_task("r0.one-more", "mallory", now_ms() + 60_000, &more).await.expect("create"), Created::Yes);
    assert!(store.task("r0.many7").await.expect("get").is_none(), "the finished one was given up");
    assert_eq!(store.tasks_of("mallory", 2 * MAX_STORED_PER_OWNER).await.expect("list").len(), MAX_STORED_PER_OWNER);
}

#[tokio::test]
async fn a_store_that_never_answers_is_an_error_within_the_deadline_never_a_wait() {
    // A "store" that takes connections and never says a word.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let port = listener.local_addr().expect("addr").port();
    let held = tokio::spawn(async move {
        let mut sockets = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            sockets.push(socket);
        }
    });
    let url = format!("redis://127.0.0.1:{port}");
    let started = std::time::Instant::now();
    match Store::open(&url, MATERIAL, false).await {
        Err(StoreError::Timeout(shown, _) | StoreError::Unavailable(shown, _)) => assert!(shown.contains(&port.to_string()), "{shown}"),
        other => panic!("{other:?}"),
    }
    let store = Store::open(&url, MATERIAL, true).await.expect("optional");
    let call = std::time::Instant::now();
    assert!(store.task("r0.x").await.is_err());
    assert!(store.charge(&[Bucket { key: "k".to_owned(), interval: Duration::from_secs(1), burst: 1 }]).await.is_err());
    assert!(call.elapsed() < paddock::store::STORE_TIMEOUT * 3, "each call ends by its deadline: {:?}", call.elapsed());
    assert!(started.elapsed() < Duration::from_secs(20), "{:?}", started.elapsed());
    held.abort();
}
