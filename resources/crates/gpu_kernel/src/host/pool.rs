//! The executor's worker threads: started once and parked between launches, not started and
//! joined for every launch (`std::thread::scope` cost 60–150 µs a launch here, most of a small
//! kernel's time). The launching thread works too and wakes its helpers only when it finds the
//! launch worth sharing (`Wake::wake`, called by the executor once it has timed its first
//! workgroups): handing a launch to a parked thread costs more than a small launch's work (saxpy
//! at n = 4096, 16 workgroups: 11–14 µs a launch with the helper woken, about 8 µs with it
//! never scheduled). A helper idle for `IDLE` exits (a process that loads many kernel libraries,
//! each with its own copy of this crate, keeps no threads for the ones it no longer runs).
//!
//! Non-generic: compiled once in gpu_kernel, never for a kernel's closure.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

const IDLE: Duration = Duration::from_secs(10);

/// A launch's work as the pool runs it: the launching thread's call gets `Some(wake)` where it
/// has helpers to wake; a helper's call, and one with no helpers, `None`.
pub(crate) type Work<'a> = dyn Fn(Option<&Wake>) + Sync + 'a;

/// The launch's work, shared by the launching thread and the helpers (it lives on the launching
/// thread's stack: `run` returns only when no helper still runs it).
#[derive(Clone, Copy)]
struct Task(*const Work<'static>);
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
/// The launching thread waits here for its helpers.
static DONE: Condvar = Condvar::new();

fn lock() -> MutexGuard<'static, State> {
    STATE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The launching thread's handle on its helpers: none runs the launch until `wake`.
pub(crate) struct Wake {
    helpers: usize,
    task: Task,
    /// Whether this launch was handed to the pool (its helpers must be waited for).
    published: Cell<bool>,
}

impl Wake {
    /// Wake up to `helpers` pool threads to share the launch (at most once). False when it
    /// cannot now: none wanted, or another thread's launch holds the pool (kernels launched from
    /// two threads share it one at a time; this one may ask again later, or finish alone).
    pub(crate) fn wake(&self) -> bool {
        if self.published.get() {
            return false;
        }
        let mut s = lock();
        if s.task.is_some() {
            return false;
        }
        s.seq += 1;
        s.task = Some(self.task);
        (s.want, s.taken, s.finished) = (self.helpers, 0, 0);
        while s.alive < self.helpers {
            if std::thread::Builder::new().name("gpu_kernel".into()).spawn(helper).is_err() {
                s.want = s.alive;
                break;
            }
            s.alive += 1;
        }
        WAKE.notify_all();
        self.published.set(true);
        true
    }
}

/// Run `task` on this thread, which may wake up to `helpers` pool threads to run it too
/// (`Wake::wake`); return when every one that started it has finished. A panic in any of them is
/// raised here, after all have stopped.
pub(crate) fn run(helpers: usize, task: &Work) {
    if helpers == 0 {
        task(None);
        return;
    }
    // Only the address travels; `run` outlives every use (it waits for `finished == taken`).
    let erased: &Work<'static> = unsafe { core::mem::transmute(task) };
    let wake = Wake { helpers, task: Task(erased), published: Cell::new(false) };
    let mine = catch_unwind(AssertUnwindSafe(|| task(Some(&wake))));
    let mut theirs = None;
    if wake.published.get() {
        let mut s = lock();
        // Helpers that have not woken yet stay out: the work is done.
        s.want = s.taken;
        while s.finished < s.taken {
            s = DONE.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.task = None;
        theirs = s.panic.take();
    }
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
                let outcome = catch_unwind(AssertUnwindSafe(|| unsafe { (*task.0)(None) }));
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
