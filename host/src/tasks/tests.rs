//! The task store: limits, quotas and eviction, owners, time to live, the status machine and the
//! wire per design.

use super::*;
use crate::input::InputMethod;

fn ask(key: &str) -> InputRequest {
    let params = json!({"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}});
    InputRequest { key: key.into(), method: InputMethod::ElicitForm, params: params.as_object().cloned().expect("object") }
}

fn caller() -> TaskOwner {
    TaskOwner::Caller(String::new())
}

/// The client at `n`'s address.
fn client(n: usize) -> QuotaKey {
    QuotaKey::Client(Arc::from(format!("10.0.0.{n}")))
}

/// A task of a plugin of its own (so the per-plugin limit stays out of the way) for `quota`.
fn create(store: &TaskStore, quota: QuotaKey) -> Result<Arc<Task>, TaskError> {
    static PLUGINS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let plugin = format!("p{}", PLUGINS.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    store.create(&plugin, caller(), quota, TaskDesign::Extension, None)
}

fn done(task: &Task) {
    assert!(task.finish(Ok(json!({"content": []}))));
}

#[test]
fn unfinished_tasks_are_capped_per_plugin_and_held_tasks_in_total() {
    let store = TaskStore::default();
    let first: Vec<_> = (0..MAX_UNFINISHED_PER_PLUGIN).map(|i| store.create("a", caller(), client(i), TaskDesign::Extension, None).expect("room")).collect();
    assert_eq!(store.create("a", caller(), client(99), TaskDesign::Extension, None).unwrap_err(), TaskError::PluginFull("a".into()));
    assert!(store.create("b", caller(), client(99), TaskDesign::Extension, None).is_ok(), "another plugin is not crowded out");
    done(&first[0]);
    assert!(store.create("a", caller(), client(99), TaskDesign::Extension, None).is_ok(), "a finished task frees its plugin's slot");
    // Running tasks of many clients fill the store; only then is a task refused for want of room.
    for i in 0.. {
        if let Err(error) = create(&store, client(100 + i % 200)) {
            assert_eq!(error, TaskError::Full);
            break;
        }
    }
    assert_eq!(store.len(), MAX_TASKS, "only the finished task was evicted on the way");
    assert_eq!(store.get(&first[0].id, &caller()).unwrap_err(), Missing::Evicted);
}

#[test]
fn a_client_at_its_quota_gives_up_its_oldest_finished_task_and_is_refused_only_when_all_run() {
    let store = TaskStore::default();
    let mine: Vec<_> = (0..MAX_TASKS_PER_CLIENT).map(|_| create(&store, client(1)).expect("within the quota")).collect();
    assert_eq!(create(&store, client(1)).unwrap_err(), TaskError::ClientFull);
    assert!(TaskError::ClientFull.to_string().contains(&format!("{MAX_TASKS_PER_CLIENT} tasks running")));
    assert!(create(&store, client(2)).is_ok(), "another client is not held back by this one's quota");

    // Finished later, evicted later: the order of finishing counts, not of creation.
    done(&mine[5]);
    done(&mine[2]);
    create(&store, client(1)).expect("its oldest finished task makes room");
    assert_eq!(store.get(&mine[5].id, &caller()).unwrap_err(), Missing::Evicted);
    assert!(store.get(&mine[2].id, &caller()).is_ok(), "one task is evicted per task created");
    create(&store, client(1)).expect("room again");
    assert_eq!(store.get(&mine[2].id, &caller()).unwrap_err(), Missing::Evicted);
    assert_eq!(create(&store, client(1)).unwrap_err(), TaskError::ClientFull, "running tasks are never evicted");
    let kept = mine.iter().enumerate().filter(|(i, _)| ![2, 5].contains(i));
    assert!(kept.into_iter().all(|(_, t)| store.get(&t.id, &caller()).is_ok()));
}

#[test]
fn a_full_store_evicts_the_oldest_finished_task_of_the_client_holding_most() {
    let store = TaskStore::default();
    // Client 1 finished some tasks first, client 2 holds the most and finished all of its own,
    // clients 3 and 4 hold as many but every one still runs.
    let light: Vec<_> = (0..MAX_TASKS_PER_CLIENT - 4).map(|_| create(&store, client(1)).expect("room")).collect();
    light.iter().take(10).for_each(|t| done(t));
    let heavy: Vec<_> = (0..MAX_TASKS_PER_CLIENT).map(|_| create(&store, client(2)).expect("room")).collect();
    heavy.iter().for_each(|t| done(t));
    for quota in [client(3), client(4)] {
        (0..MAX_TASKS_PER_CLIENT).for_each(|_| drop(create(&store, quota.clone()).expect("room")));
    }
    (0..4).for_each(|_| drop(create(&store, client(5)).expect("room")));
    assert_eq!(store.len(), MAX_TASKS);

    let newcomer = create(&store, client(6)).expect("a finished task makes room for a new client");
    assert_eq!(store.len(), MAX_TASKS);
    assert_eq!(store.get(&heavy[0].id, &caller()).unwrap_err(), Missing::Evicted, "the heaviest client's oldest finished task goes");
    assert!(store.get(&light[0].id, &caller()).is_ok(), "an older finished task of a lighter client stays");
    assert!(store.get(&newcomer.id, &caller()).is_ok());
    // Every finished task can go this way; then the store is full of running tasks.
    let mut created = 1;
    while create(&store, client(6 + created)).is_ok() {
        created += 1;
    }
    assert_eq!(created, 10 + MAX_TASKS_PER_CLIENT, "one new task per finished one");
    assert_eq!(create(&store, client(99)).unwrap_err(), TaskError::Full);
}

#[test]
fn an_evicted_task_is_told_to_its_owner_only_and_the_last_evictions_are_remembered() {
    let store = TaskStore::default();
    let owner = TaskOwner::Session(7);
    let quota = QuotaKey::Session(7);
    let mut evicted = Vec::new();
    for _ in 0..MAX_TASKS_PER_CLIENT + MAX_EVICTED_REMEMBERED + 1 {
        let task = store.create("p", owner.clone(), quota.clone(), TaskDesign::Experimental, None).expect("room");
        done(&task);
        evicted.push(task.id.clone());
    }
    evicted.truncate(MAX_EVICTED_REMEMBERED + 1);
    assert_eq!(store.len(), MAX_TASKS_PER_CLIENT);
    assert_eq!(store.get(&evicted[0], &owner).unwrap_err(), Missing::Unknown, "the oldest eviction is forgotten");
    assert!(evicted[1..].iter().all(|id| store.get(id, &owner).unwrap_err() == Missing::Evicted));
    assert_eq!(store.get(&evicted[1], &TaskOwner::Session(8)).unwrap_err(), Missing::Unknown, "another owner learns nothing");
    store.drop_owner(&owner);
    assert_eq!(store.get(&evicted[1], &owner).unwrap_err(), Missing::Unknown);
}

#[test]
fn a_task_is_seen_only_by_its_owner_and_ids_are_unguessable() {
    let store = TaskStore::default();
    let mine = store.create("p", TaskOwner::Session(1), QuotaKey::Session(1), TaskDesign::Experimental, None).expect("room");
    let theirs = store.create("p", TaskOwner::Session(2), QuotaKey::Session(2), TaskDesign::Experimental, None).expect("room");
    // The replica's id, a dot, then 128 random bits and a seal (`replica::ids`).
    assert_eq!(mine.id.split_once('.').map(|(_, sealed)| sealed.len()), Some(43), "{}", mine.id);
    assert_ne!(mine.id, theirs.id);
    assert!(store.get(&mine.id, &TaskOwner::Session(1)).is_ok());
    assert_eq!(store.get(&mine.id, &TaskOwner::Session(2)).unwrap_err(), Missing::Unknown);
    assert_eq!(store.list(&TaskOwner::Session(2)).len(), 1);
    store.drop_owner(&TaskOwner::Session(1));
    assert!(mine.stop.is_cancelled(), "the session's tasks stop with it");
    assert_eq!(mine.status(), TaskStatus::Cancelled);
    assert!(store.get(&theirs.id, &TaskOwner::Session(2)).is_ok());
}

#[test]
fn the_time_to_live_is_clamped_and_an_expired_task_is_freed_and_stopped() {
    let store = TaskStore::default();
    let long = store.create("p", caller(), client(1), TaskDesign::Extension, Some(Duration::from_secs(86_400))).expect("room");
    assert_eq!(long.ttl(), MAX_TTL);
    assert_eq!(long.to_wire(false)["ttlMs"], 3_600_000);
    let short = store.create("p", caller(), client(1), TaskDesign::Extension, Some(Duration::ZERO)).expect("room");
    assert_eq!(short.ttl(), MIN_TTL);
    let expired = Arc::new(Task { expires: Instant::now(), ..clone_task(&short) });
    store.held().tasks.insert(expired.id.clone(), Arc::clone(&expired));
    assert_eq!(store.get(&expired.id, &caller()).unwrap_err(), Missing::Unknown, "an expired task is unknown, not evicted");
    assert!(expired.stop.is_cancelled());
    assert!(store.get(&long.id, &caller()).is_ok());
}

fn clone_task(task: &Task) -> Task {
    Task {
        id: format!("{}-copy", task.id),
        plugin: task.plugin.clone(),
        owner: task.owner.clone(),
        quota: task.quota.clone(),
        design: task.design,
        created: task.created,
        ttl: task.ttl,
        expires: task.expires,
        stop: CancellationToken::new(),
        state: Mutex::new(TaskState {
            status: TaskStatus::Working,
            message: None,
            updated: task.created,
            changed_at: 0,
            outcome: None,
            outstanding: Vec::new(),
            answered: Vec::new(),
            charge: task.budget.force(0),
        }),
        changed: watch::channel(0).0,
        budget: Arc::clone(&task.budget),
    }
}

#[tokio::test]
async fn input_is_taken_key_by_key_and_terminal_states_never_change() {
    let store = TaskStore::default();
    let task = store.create("p", caller(), client(1), TaskDesign::Extension, None).expect("room");
    assert!(task.park(vec![ask("name"), ask("confirm")], "waiting"));
    assert_eq!(task.to_wire(true)["inputRequests"].as_object().map(Map::len), Some(2));
    assert_eq!(task.answer(json!({"name": {"action": "accept"}, "stray": {}}).as_object().unwrap()), 1);
    let wire = task.to_wire(true);
    assert_eq!(wire["status"], "input_required");
    assert!(wire["inputRequests"]["confirm"].is_object() && wire["inputRequests"].get("name").is_none(), "{wire}");
    assert_eq!(task.answer(json!({"confirm": {"action": "accept"}}).as_object().unwrap()), 0);
    let answers = tokio::time::timeout(Duration::from_secs(5), task.answers()).await.expect("in time").expect("answers");
    assert_eq!(answers.iter().map(|a| a.key.as_str()).collect::<Vec<_>>(), ["name", "confirm"]);
    assert!(task.resume());

    assert!(task.finish(Ok(json!({"content": [], "isError": true}))));
    assert_eq!(task.status(), TaskStatus::Completed, "a tool error completes an extension task");
    assert!(!task.cancel("too late"));
    assert!(!task.park(vec![ask("again")], "no"));
    assert_eq!(task.status(), TaskStatus::Completed);
    assert_eq!(task.to_wire(true)["result"]["isError"], true);

    let legacy = store.create("p", TaskOwner::Session(1), QuotaKey::Session(1), TaskDesign::Experimental, None).expect("room");
    legacy.finish(Ok(json!({"content": [], "isError": true})));
    assert_eq!(legacy.status(), TaskStatus::Failed, "a tool error fails an experimental task");
    let wire = legacy.to_wire(false);
    assert!(wire["ttl"].is_u64() && wire["pollInterval"].is_u64() && wire.get("ttlMs").is_none(), "{wire}");
    assert!(wire["createdAt"].as_str().unwrap().ends_with('Z'), "{wire}");
}

#[test]
fn what_tasks_hold_is_charged_and_finished_results_go_first_when_the_budget_runs_low() {
    let budget = Budget::new(crate::budget::MIN_BUDGET);
    let store = TaskStore::with_budget(Arc::clone(&budget));
    let big = |n: usize| json!({"content": [{"type": "text", "text": "r".repeat(n)}]});
    // Questions and answers are charged while the task waits on them.
    let asking = create(&store, client(9)).expect("room");
    assert!(asking.park(vec![ask("sure")], "confirm"));
    let parked = budget.used();
    assert!(parked > 0 && asking.charged() == parked);
    let mut answer = Map::new();
    answer.insert("sure".into(), json!({"action": "accept", "content": {"note": "a".repeat(100_000)}}));
    assert_eq!(asking.answer(&answer), 0);
    assert!(budget.used() > 100_000, "the answer is charged until the task takes it: {}", budget.used());
    assert!(asking.cancel("done"));
    drop(asking);

    // Finished results: 4 MiB each from one heavy client, and one small one from another.
    let heavy: Vec<_> = (0..11)
        .map(|_| {
            let task = create(&store, client(1)).expect("room");
            assert!(task.finish(Ok(big(4 << 20))));
            task.id.clone()
        })
        .collect();
    let light = create(&store, client(2)).expect("room");
    assert!(light.finish(Ok(big(1000))));
    let before = budget.used();
    assert!(before >= 44 << 20 && !budget.is_low(SHED_BELOW), "{before}");
    let one_more = create(&store, client(1)).expect("room");
    assert!(one_more.finish(Ok(big(4 << 20))));
    assert!(budget.is_low(SHED_BELOW), "48 of 64 MiB held");
    // The next task, whoever creates it, first lets the heavy client's oldest results go.
    let _next = create(&store, client(3)).expect("room");
    assert!(!budget.is_low(SHED_BELOW), "{} bytes still held", budget.used());
    assert_eq!(store.get(&heavy[0], &caller()).unwrap_err(), Missing::Evicted, "the heavy client's oldest result went first");
    assert!(store.get(&heavy[10], &caller()).is_ok(), "only as many as were needed");
    assert!(store.get(&light.id, &caller()).is_ok(), "the light client keeps its result");
    // Everything goes back when the tasks go.
    drop((light, one_more, _next));
    drop(store);
    assert_eq!(budget.used(), 0);
}

#[test]
fn a_store_gives_the_times_to_live_of_its_own_bounds() {
    let bounds = TtlBounds { min: Duration::from_secs(5), default: Duration::from_secs(10), max: Duration::from_secs(20) };
    let store = TaskStore::with_limits(Budget::unlimited(), bounds);
    let ttl = |asked: Option<Duration>| store.create("p", caller(), client(1), TaskDesign::Extension, asked).expect("room").ttl();
    assert_eq!(ttl(None), Duration::from_secs(10));
    assert_eq!(ttl(Some(Duration::from_secs(1))), Duration::from_secs(5));
    assert_eq!(ttl(Some(Duration::from_secs(3600))), Duration::from_secs(20));
}
