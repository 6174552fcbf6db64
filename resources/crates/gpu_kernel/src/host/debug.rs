//! What a debugging session reads of a cpu-sim launch (`sim` feature):
//!
//! - **Writers** (`Launch::writers`): for each element of each `Out` buffer, the invocation and the
//!   source location of its last write (plain or atomic) and how many writes by an invocation other
//!   than the previous writer it took, into arrays the runtime owns (`Launch::writer_last`,
//!   `Launch::writer_count`). Asked for per launch; a launch without it pays one null test per
//!   write.
//! - **The current invocation** (`gpu_kernel_debug_current`): the workgroup and local id running on
//!   the thread that last switched invocations, for a debugger's conditional breakpoint
//!   (`workbench debug` runs the executor on one worker thread).
//! - **The workgroup's states** (`gpu_kernel_debug_states`): each invocation of the running
//!   workgroup ready, waiting at a barrier (its line) or returned, kept at each switch.

use core::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// The invocation running now: workgroup x, y, z, local x, y, z (linear ids, as `Ctx` gives them),
/// written where the executor switches invocations in a sim build. A debugger reads it by name
/// (`gpu_kernel_debug_current[3] == 17`); with one worker thread it is exact.
#[unsafe(no_mangle)]
#[used]
pub static mut gpu_kernel_debug_current: [u32; 6] = [0; 6];

/// The most invocations of one workgroup (`exec::run_grid` refuses more).
pub const MAX_INVOCATIONS: usize = 1024;

/// The running workgroup's invocations, for a debugger (read at a stop, never called): the
/// invocation count, the barriers opened so far (the workgroup's epoch), the invocation running,
/// then per invocation its state (0 ready: not at a barrier; 1 waiting at a barrier; 2 returned)
/// and the barrier's line (waiting). Kept by `now_running` at each switch.
#[unsafe(no_mangle)]
#[used]
pub static mut gpu_kernel_debug_states: [u32; 3 + 2 * MAX_INVOCATIONS] = [0; 3 + 2 * MAX_INVOCATIONS];

#[cfg(feature = "debug")]
std::thread_local! {
    /// What the table last showed on this thread: the workgroup (its `Group`'s address and linear
    /// id), its epoch, the invocation running. Per thread, not one for the process: two workers
    /// (or two tests' launches) sharing it read the other's invocation between the bounds check and
    /// its use (`debug_state(28)` of a workgroup of 8: a panic in a fiber, which cannot unwind, so
    /// the test process aborted with no result line, about one `cargo test --features debug --lib`
    /// in 25 on a loaded machine). `workbench debug` runs one worker: the table is its.
    static SHOWN: core::cell::Cell<(usize, u64, u32, usize)> = const { core::cell::Cell::new((0, u64::MAX, 0, 0)) };
}

#[cfg(feature = "debug")]
/// Invocation `t` of `group` runs now (one store of six words: cheap beside a fiber switch), and
/// the states table follows: the invocation that ran until now has changed state (it waits at a
/// barrier, or returned), or, in a new workgroup or once a barrier opened, all of them have.
#[inline(always)]
pub(crate) fn now_running(group: &super::exec::Group, t: usize) {
    let g = group.coords.get();
    let l = group.local_coords(t);
    unsafe { *core::ptr::addr_of_mut!(gpu_kernel_debug_current) = [g[0], g[1], g[2], l[0], l[1], l[2]] };
    let table = unsafe { &mut *core::ptr::addr_of_mut!(gpu_kernel_debug_states) };
    let threads = group.threads().min(MAX_INVOCATIONS);
    let (at, linear, epoch) = (group as *const _ as usize, group.linear.get(), group.epoch.get());
    let mut show = |u: usize| {
        let (state, line) = group.debug_state(u);
        table[3 + 2 * u] = state;
        table[4 + 2 * u] = line;
    };
    let shown = SHOWN.get();
    if (shown.0, shown.1, shown.2) != (at, linear, epoch) {
        (0..threads).for_each(&mut show);
    } else if shown.3 < threads {
        show(shown.3);
    }
    if t < threads {
        show(t);
    }
    table[..3].copy_from_slice(&[threads as u32, epoch, t as u32]);
    SHOWN.set((at, linear, epoch, t));
}

/// One buffer's writer arrays (the runtime's memory, zeroed by it before the launch).
#[derive(Clone, Copy)]
pub struct Writers {
    /// Per element: `(workgroup linear + 1) << 32 | local linear << 16 | location id` (0: never
    /// written); location ids are those of the report's `locations`.
    last: *mut u64,
    /// Per element: writes by an invocation other than the one before (1 for one writer; an
    /// element another invocation wrote in between counts again).
    count: *mut u32,
}

impl Writers {
    pub const NONE: Writers = Writers { last: core::ptr::null_mut(), count: core::ptr::null_mut() };

    /// Buffer `buffer`'s arrays from the launch record's tables (none when the record asks for no
    /// writers, or has no arrays for this buffer: an input).
    pub(crate) fn of(launch: &super::Launch, buffer: usize) -> Writers {
        if launch.writers == 0 || launch.writer_last.is_null() || launch.writer_count.is_null() {
            return Writers::NONE;
        }
        let (last, count) = unsafe { (*launch.writer_last.add(buffer), *launch.writer_count.add(buffer)) };
        if last.is_null() || count.is_null() {
            return Writers::NONE;
        }
        Writers { last, count }
    }

    #[inline(always)]
    pub fn is_on(&self) -> bool {
        !self.last.is_null()
    }

    /// Invocation (`group` linear, `local` linear) wrote element `i` at location id `loc`.
    #[inline(always)]
    pub fn wrote(&self, i: usize, group: u64, local: usize, loc: u16) {
        let word = ((group + 1) << 32) | ((local as u64 & 0xFFFF) << 16) | loc as u64;
        let last = unsafe { AtomicU64::from_ptr(self.last.add(i)) };
        let before = last.swap(word, Ordering::Relaxed);
        if before >> 16 != word >> 16 {
            unsafe { AtomicU32::from_ptr(self.count.add(i)) }.fetch_add(1, Ordering::Relaxed);
        }
    }
}

unsafe impl Send for Writers {}
unsafe impl Sync for Writers {}

#[cfg(all(test, feature = "debug"))]
mod tests {
    use crate::testing::Grid;

    /// Two threads launching workgroups of different sizes at once, each switching fibers at its
    /// barriers (`now_running` at every switch). With one table-state for the process, a thread
    /// read the other's running invocation (28) after checking it against the other's size, then
    /// indexed its own workgroup of 8 with it: a panic inside a fiber, which aborts the process.
    #[test]
    fn two_threads_switching_fibers_at_once_keep_their_own_states() {
        let launch = |threads: u32, rounds: usize| {
            move || {
                for _ in 0..rounds {
                    let n = 4 * threads as usize;
                    let mut y = vec![0u32; n];
                    let grid = Grid::with_workers([4, 1, 1], [threads, 1, 1], 1);
                    let yb = grid.output(&mut y);
                    grid.run(|ctx| {
                        let mut s = ctx.shared::<u32, 64>();
                        let t = ctx.local_id_x();
                        s.set(t, t as u32);
                        ctx.barrier();
                        let v = s.get((t + 1) % ctx.group_size_x());
                        ctx.barrier();
                        let mut yb = yb;
                        yb[ctx.global_id_x()] = v;
                    });
                    let expect: Vec<u32> = (0..n).map(|i| ((i % threads as usize + 1) % threads as usize) as u32).collect();
                    assert_eq!(y, expect);
                }
            }
        };
        let a = std::thread::spawn(launch(8, 20000));
        let b = std::thread::spawn(launch(64, 2500));
        a.join().unwrap();
        b.join().unwrap();
    }
}
