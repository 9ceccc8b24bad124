//! Checks made again once a file has settled. A fact about a file read while its change time
//! was still newer than `SETTLED` is not recorded (the file could be racily clean), so the next
//! start would read the whole file again: right after a compile, that is every plugin file and
//! every artifact. One background thread waits until each such file has settled, reads it
//! again, and so records the fact; the next start reads only the records.

use std::sync::OnceLock;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::time::{Duration, SystemTime};

/// Checks waiting at once; more are dropped (their files are read again by the next start).
const QUEUE: usize = 4096;
/// Beyond `SETTLED`, for clocks that tick coarsely.
const MARGIN: Duration = Duration::from_millis(50);
/// A file that settles later than this from now was stamped in the future (a clock set back, a
/// skewed network file system): it is not waited for, so it never holds up the others.
const FURTHEST: Duration = Duration::from_secs(10);

type Work = Box<dyn FnOnce() + Send>;

static JOBS: OnceLock<Option<SyncSender<(SystemTime, Work)>>> = OnceLock::new();

/// Runs `work` on the background thread once `settles_at` (plus a margin) has passed. Best
/// effort: with the queue full, or no thread, nothing runs and the next start reads the file.
pub(super) fn once_settled(settles_at: SystemTime, work: impl FnOnce() + Send + 'static) {
    if settles_at.duration_since(SystemTime::now()).is_ok_and(|wait| wait > FURTHEST) {
        return;
    }
    let jobs = JOBS.get_or_init(|| {
        let (sender, receiver) = sync_channel(QUEUE);
        match std::thread::Builder::new().name("paddock-settled".to_owned()).spawn(move || run(receiver)) {
            Ok(_) => Some(sender),
            Err(err) => {
                tracing::debug!(error = %err, "cannot start the thread that records settled files; later starts read them again");
                None
            }
        }
    });
    if let Some(jobs) = jobs {
        let _ = jobs.try_send((settles_at + MARGIN, Box::new(work)));
    }
}

fn run(jobs: Receiver<(SystemTime, Work)>) {
    // Files settle in the order they were written, which is the order they are queued in.
    while let Ok((due, work)) = jobs.recv() {
        if let Ok(wait) = due.duration_since(SystemTime::now()) {
            std::thread::sleep(wait);
        }
        work();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;

    #[test]
    fn a_file_stamped_in_the_future_is_not_waited_for_and_holds_up_nothing() {
        let far_ran = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&far_ran);
        once_settled(SystemTime::now() + Duration::from_secs(3600), move || flag.store(true, Ordering::Release));
        let (done, finished) = std::sync::mpsc::channel();
        once_settled(SystemTime::now(), move || {
            let _ = done.send(());
        });
        finished.recv_timeout(Duration::from_secs(10)).expect("a check already due runs at once");
        assert!(!far_ran.load(Ordering::Acquire), "the far one was dropped, not run early");
    }
}
