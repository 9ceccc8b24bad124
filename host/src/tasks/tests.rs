//! The task store: limits, owners, time to live, the status machine and the wire per design.

use super::*;
use crate::input::InputMethod;

fn ask(key: &str) -> InputRequest {
    let params = json!({"message": "Sure?", "requestedSchema": {"type": "object", "properties": {}}});
    InputRequest { key: key.into(), method: InputMethod::ElicitForm, params: params.as_object().cloned().expect("object") }
}

fn caller() -> TaskOwner {
    TaskOwner::Caller(String::new())
}

#[test]
fn unfinished_tasks_are_capped_per_plugin_and_held_tasks_in_total() {
    let store = TaskStore::default();
    let first: Vec<_> = (0..MAX_UNFINISHED_PER_PLUGIN).map(|_| store.create("a", caller(), TaskDesign::Extension, None).expect("room")).collect();
    assert_eq!(store.create("a", caller(), TaskDesign::Extension, None).unwrap_err(), TaskError::PluginFull("a".into()));
    assert!(store.create("b", caller(), TaskDesign::Extension, None).is_ok(), "another plugin is not crowded out");
    first[0].finish(Ok(json!({"content": []})));
    assert!(store.create("a", caller(), TaskDesign::Extension, None).is_ok(), "a finished task frees its plugin's slot");
    for i in 0.. {
        if let Err(error) = store.create(&format!("p{i}"), caller(), TaskDesign::Extension, None) {
            assert_eq!(error, TaskError::Full);
            break;
        }
    }
    assert_eq!(store.len(), MAX_TASKS);
}

#[test]
fn a_task_is_seen_only_by_its_owner_and_ids_are_unguessable() {
    let store = TaskStore::default();
    let mine = store.create("p", TaskOwner::Session(1), TaskDesign::Experimental, None).expect("room");
    let theirs = store.create("p", TaskOwner::Session(2), TaskDesign::Experimental, None).expect("room");
    assert_eq!(mine.id.len(), 32);
    assert_ne!(mine.id, theirs.id);
    assert!(store.get(&mine.id, &TaskOwner::Session(1)).is_some());
    assert!(store.get(&mine.id, &TaskOwner::Session(2)).is_none());
    assert_eq!(store.list(&TaskOwner::Session(2)).len(), 1);
    store.drop_owner(&TaskOwner::Session(1));
    assert!(mine.stop.is_cancelled(), "the session's tasks stop with it");
    assert_eq!(mine.status(), TaskStatus::Cancelled);
    assert!(store.get(&theirs.id, &TaskOwner::Session(2)).is_some());
}

#[test]
fn the_time_to_live_is_clamped_and_an_expired_task_is_freed_and_stopped() {
    let store = TaskStore::default();
    let long = store.create("p", caller(), TaskDesign::Extension, Some(Duration::from_secs(86_400))).expect("room");
    assert_eq!(long.ttl(), MAX_TTL);
    assert_eq!(long.to_wire(false)["ttlMs"], 3_600_000);
    let short = store.create("p", caller(), TaskDesign::Extension, Some(Duration::ZERO)).expect("room");
    assert_eq!(short.ttl(), MIN_TTL);
    let expired = Arc::new(Task { expires: Instant::now(), ..clone_task(&short) });
    store.tasks.lock().unwrap().insert(expired.id.clone(), Arc::clone(&expired));
    assert!(store.get(&expired.id, &caller()).is_none());
    assert!(expired.stop.is_cancelled());
    assert!(store.get(&long.id, &caller()).is_some());
}

fn clone_task(task: &Task) -> Task {
    Task {
        id: format!("{}-copy", task.id),
        plugin: task.plugin.clone(),
        owner: task.owner.clone(),
        design: task.design,
        created: task.created,
        ttl: task.ttl,
        expires: task.expires,
        stop: CancellationToken::new(),
        state: Mutex::new(TaskState {
            status: TaskStatus::Working,
            message: None,
            updated: task.created,
            outcome: None,
            outstanding: Vec::new(),
            answered: Vec::new(),
        }),
        changed: watch::channel(0).0,
    }
}

#[tokio::test]
async fn input_is_taken_key_by_key_and_terminal_states_never_change() {
    let store = TaskStore::default();
    let task = store.create("p", caller(), TaskDesign::Extension, None).expect("room");
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

    let legacy = store.create("p", TaskOwner::Session(1), TaskDesign::Experimental, None).expect("room");
    legacy.finish(Ok(json!({"content": [], "isError": true})));
    assert_eq!(legacy.status(), TaskStatus::Failed, "a tool error fails an experimental task");
    let wire = legacy.to_wire(false);
    assert!(wire["ttl"].is_u64() && wire["pollInterval"].is_u64() && wire.get("ttlMs").is_none(), "{wire}");
    assert!(wire["createdAt"].as_str().unwrap().ends_with('Z'), "{wire}");
}
