//! The executor's worker threads: started once and parked between launches, not started and
//! joined for every launch (`std::thread::scope` cost 60–150 µs a launch here, most of a small
//! kernel's time). The launching thread works too, so a launch on `n` workers wakes `n - 1`
//! helpers. A helper idle for `IDLE` exits (a process that loads many kernel libraries, each with
//! its own copy of this crate, keeps no threads for the ones it no longer runs).
//!
//! Non-generic: compiled once in gpu_kernel, never for a kernel's closure.

use std::any::Any;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

const IDLE: Duration = Duration::from_secs(10);

/// The launch's work, shared by the launching thread and the helpers (it lives on the launching
/// thread's stack: `run` returns only when no helper still runs it).
#[derive(Clone, Copy)]
struct Task(*const (dyn Fn() + Sync + 'static));
unsafe impl Send for Task {}

struct State {
    /// Launch number: a helper takes part in each launch at most once.
    seq: u64,
    task: Option<Task>,
    /// Helpers that may take part in this launch, and those that did, and have finished.
    want: usize,
    taken: usize,
    finished: usize,
    /// Helper threads alive (parked or working).
    alive: usize,
    panic: Option<Box<dyn Any + Send>>,
}

static STATE: Mutex<State> =
    Mutex::new(State { seq: 0, task: None, want: 0, taken: 0, finished: 0, alive: 0, panic: None });
/// Helpers wait here for a launch.
static WAKE: Condvar = Condvar::new();
/// The launching thread waits here for its helpers (and a second launching thread for the first).
static DONE: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Run `task` on this thread and on up to `helpers` pool threads at once; return when every one
/// that started it has finished. A panic in any of them is raised here, after all have stopped.
pub(crate) fn run(helpers: usize, task: &(dyn Fn() + Sync)) {
    if helpers == 0 {
        task();
        return;
    }
    // Only the address travels; `run` outlives every use (it waits for `finished == taken`).
    let erased: &(dyn Fn() + Sync + 'static) = unsafe { core::mem::transmute(task) };
    {
        let mut s = lock();
        while s.task.is_some() {
            // Another thread's launch (kernels launched from two threads): one at a time.
            s = DONE.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.seq += 1;
        s.task = Some(Task(erased));
        (s.want, s.taken, s.finished) = (helpers, 0, 0);
        while s.alive < helpers {
            if std::thread::Builder::new().name("gpu_kernel".into()).spawn(helper).is_err() {
                s.want = s.alive;
                break;
            }
            s.alive += 1;
        }
        WAKE.notify_all();
    }
    let mine = catch_unwind(AssertUnwindSafe(task));
    let mut s = lock();
    // Helpers that have not woken yet stay out: the work is done.
    s.want = s.taken;
    while s.finished < s.taken {
        s = DONE.wait(s).unwrap_or_else(|e| e.into_inner());
    }
    s.task = None;
    let theirs = s.panic.take();
    DONE.notify_all();
    drop(s);
    if let Err(payload) = mine {
        resume_unwind(payload);
    }
    if let Some(payload) = theirs {
        resume_unwind(payload);
    }
}

fn helper() {
    let mut seen = 0u64;
    let mut s = lock();
    loop {
        if let Some(task) = s.task {
            if s.seq != seen && s.taken < s.want {
                seen = s.seq;
                s.taken += 1;
                drop(s);
                let outcome = catch_unwind(AssertUnwindSafe(|| unsafe { (*task.0)() }));
                s = lock();
                if let Err(payload) = outcome {
                    s.panic.get_or_insert(payload);
                }
                s.finished += 1;
                if s.finished == s.taken {
                    DONE.notify_all();
                }
                continue;
            }
        }
        let (guard, wait) = WAKE.wait_timeout(s, IDLE).unwrap_or_else(|e| e.into_inner());
        s = guard;
        if wait.timed_out() && (s.task.is_none() || s.seq == seen) {
            s.alive -= 1;
            return;
        }
    }
}
