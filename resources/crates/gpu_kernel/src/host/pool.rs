//! The executor's worker threads: started once and parked between launches, not started and
//! joined for every launch (`std::thread::scope` cost 60–150 µs a launch here, most of a small
//! kernel's time). The launching thread works too and wakes its helpers only when it finds the
//! launch worth sharing (`Wake::wake`, called by the executor once it has timed its first
//! workgroups): handing a launch to a parked thread costs more than a small launch's work (saxpy
//! at n = 4096, 16 workgroups: 11–14 µs a launch with the helper woken, about 8 µs with it
//! never scheduled). A helper idle for `IDLE` exits (a process that loads many kernel libraries,
//! each with its own copy of this crate, keeps no threads for the ones it no longer runs).
//!
//! Back-to-back launches (the timing protocol's, a host loop's) may find their helpers awake: a
//! helper that has finished its part spins for `SPIN` on the launch counter (`PUBLISHED`) before
//! it parks, and the launching thread spins as long for its helpers' last workgroups before it
//! sleeps on `DONE` (saxpy at 2^20 on the loaded 2-core VM: 0.27 -> 0.25 ms a launch, the same
//! CPU time; docs/cpu-sim.md, "Seventh pass"). Spinning yields the core every 64 polls: a woken
//! helper was found on the launching thread's own core, the two taking turns on it.
//!
//! Non-generic: compiled once in gpu_kernel, never for a kernel's closure.

use std::any::Any;
use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const IDLE: Duration = Duration::from_secs(10);
/// How long a helper, and the launching thread waiting for its helpers, spin before they sleep:
/// longer than the launching side's gap between two launches (a ctypes call and the first
/// workgroup, tens of µs), short enough that a process launching now and then wastes little.
const SPIN: Duration = Duration::from_micros(200);

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
    /// Helper threads alive (parked or working), and those parked on `WAKE`.
    alive: usize,
    sleeping: usize,
    panic: Option<Box<dyn Any + Send>>,
}

static STATE: Mutex<State> = Mutex::new(State {
    seq: 0,
    task: None,
    want: 0,
    taken: 0,
    finished: 0,
    alive: 0,
    sleeping: 0,
    panic: None,
});
/// `State::seq` of the launch open to helpers now, 0 when none: what spinning threads watch
/// without the lock (written under it).
static PUBLISHED: AtomicU64 = AtomicU64::new(0);
/// Helpers running a launch's work now (written under the lock): what the launching thread
/// watches while it spins for them.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
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
            // 8 MiB, a main thread's usual stack (std's default for others is 2 MiB): a `#[lanes]`
            // body keeps each local that lives across a barrier for all 1024 possible lanes on
            // the worker's stack (`lanes::LaneVar`); untouched pages cost nothing.
            if std::thread::Builder::new().name("gpu_kernel".into()).stack_size(8 << 20).spawn(helper).is_err() {
                s.want = s.alive;
                break;
            }
            s.alive += 1;
        }
        PUBLISHED.store(s.seq, Ordering::Release);
        if s.sleeping > 0 {
            WAKE.notify_all();
        }
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
        PUBLISHED.store(0, Ordering::Release);
        if s.finished < s.taken {
            // Their last chunks take microseconds; a futex sleep and wake-up longer.
            drop(s);
            spin_until(|| RUNNING.load(Ordering::Acquire) == 0);
            s = lock();
        }
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
                RUNNING.fetch_add(1, Ordering::AcqRel);
                drop(s);
                let outcome = catch_unwind(AssertUnwindSafe(|| unsafe { (*task.0)(None) }));
                s = lock();
                if let Err(payload) = outcome {
                    s.panic.get_or_insert(payload);
                }
                s.finished += 1;
                RUNNING.fetch_sub(1, Ordering::AcqRel);
                if s.finished == s.taken {
                    DONE.notify_all();
                }
                // The next launch comes soon when launches follow each other: watch for it
                // awake rather than from a futex sleep.
                drop(s);
                spin_until(|| {
                    let p = PUBLISHED.load(Ordering::Acquire);
                    p != 0 && p != seen
                });
                s = lock();
                continue;
            }
        }
        s.sleeping += 1;
        let (guard, wait) = WAKE.wait_timeout(s, IDLE).unwrap_or_else(|e| e.into_inner());
        s = guard;
        s.sleeping -= 1;
        if wait.timed_out() && (s.task.is_none() || s.seq == seen) {
            s.alive -= 1;
            return;
        }
    }
}

/// Spin until `ready` or for `SPIN`, whichever is first. Every 64 polls it reads the clock and
/// yields: on a machine with more runnable threads than cores, the thread it waits for may be
/// queued behind it on its own core.
fn spin_until(ready: impl Fn() -> bool) {
    let start = Instant::now();
    loop {
        for _ in 0..64 {
            if ready() {
                return;
            }
            std::hint::spin_loop();
        }
        if start.elapsed() >= SPIN {
            return;
        }
        std::thread::yield_now();
    }
}
