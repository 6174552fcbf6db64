//! Kernel unit tests on the host: launch a kernel body over a grid a test chooses, on buffers the
//! test makes, with GPU semantics (every invocation its own execution context, barriers, one
//! shared array per workgroup, real atomics) and cpu-sim's checks on. A race, an out-of-bounds
//! index, a barrier divergence or a read of unwritten workgroup memory fails the test with the
//! Rust lines of the accesses, as `workbench run --backend cpu-sim` prints them.
//!
//! ```ignore
//! #[test]
//! fn saxpy_tail() {
//!     let n = 1000; // not a multiple of the workgroup size: the last workgroup's tail is idle
//!     let x: Vec<f32> = (0..n).map(|i| i as f32).collect();
//!     let mut y = vec![1.0f32; n];
//!     let grid = gpu_kernel::testing::Grid::new([4, 1, 1], [256, 1, 1]);
//!     let (xb, yb) = (grid.input(&x), grid.output(&mut y));
//!     grid.run(|ctx| saxpy_body(ctx, 256, 1, n as u32, 2.0, xb, yb));
//!     assert_eq!(y[999], 2.0 * 999.0 + 1.0);
//! }
//! ```
//!
//! The checks exist only in a build with the crate's `sim` feature; a project turns it on for its
//! tests alone (its library, which the `cpu` backend times, stays unchecked):
//!
//! ```toml
//! [dev-dependencies]
//! gpu_kernel = { path = "gpu_kernel", features = ["sim"] }
//! ```
//!
//! Built without it, [`Grid::run`] fails the test and says so. The handles a grid gives are for
//! the body of that grid's launch only (as an entry's are for its `Kernel::run`).
//!
//! The launch goes through the executor's public entry points (`Kernel::new`, `input`, `output`,
//! `run`) with a launch record made here, so a test runs exactly what the `cpu-sim` backend runs.
//! docs/kernel-tests.md says what is modelled and what is not.

use core::cell::Cell;
use core::panic::Location;
use std::fmt::Write;

use crate::host::{Ctx, In, Kernel, Launch, Out};
use crate::Element;

/// The most buffers one test launch takes.
pub const MAX_BUFFERS: usize = 64;
/// Room for the findings' JSON report (at most 64 findings are kept in full).
const REPORT_BYTES: usize = 1 << 20;

/// One launch of a kernel body in a test: `new(grid, threads)`, then a handle per buffer
/// (`input`, `output`), then [`Grid::run`] (or [`Grid::check`] to look at the findings).
pub struct Grid {
    record: *mut Launch,
    lens: *mut u64,
    report: *mut u8,
    kernel: Option<Kernel<'static>>,
    next: Cell<usize>,
}

impl Grid {
    /// `grid` workgroups in x, y, z of `threads` invocations each (at most 1024 per workgroup,
    /// as on GPUs). The workgroups run on one thread per core, as on the `cpu-sim` backend.
    pub fn new(grid: [u32; 3], threads: [u32; 3]) -> Grid {
        Grid::with_workers(grid, threads, 0)
    }

    /// As [`Grid::new`] on `workers` threads (0: one per core; 1: workgroups in order, one at a
    /// time).
    pub fn with_workers(grid: [u32; 3], threads: [u32; 3], workers: u32) -> Grid {
        let lens = Box::into_raw(Box::new([0u64; MAX_BUFFERS])) as *mut u64;
        let report = Box::into_raw(vec![0u8; REPORT_BYTES].into_boxed_slice()) as *mut u8;
        let record = Box::into_raw(Box::new(Launch {
            grid,
            threads,
            lens,
            nbufs: MAX_BUFFERS as u32,
            checks: 1,
            workers,
            report,
            report_cap: REPORT_BYTES as u64,
            report_len: 0,
            trace: 0,
            trace_group: [0; 3],
            trace_local: [0; 3],
            writers: 0, // a test asks no element's writer (`workbench run --writers` does)
            writer_last: core::ptr::null(),
            writer_count: core::ptr::null(),
        }));
        let kernel = unsafe { Kernel::new(record) };
        Grid { record, lens, report, kernel: Some(kernel), next: Cell::new(0) }
    }

    fn slot(&self, len: usize) -> usize {
        let k = self.next.get();
        assert!(k < MAX_BUFFERS, "gpu_kernel::testing: at most {MAX_BUFFERS} buffers in one launch");
        self.next.set(k + 1);
        unsafe { *self.lens.add(k) = len as u64 };
        k
    }

    /// A read-only buffer of the launch: the body's `In` handle on `data`.
    pub fn input<'a, T: Element>(&self, data: &'a [T]) -> In<'a, T> {
        let k = self.slot(data.len());
        unsafe { self.kernel().input(k, data.as_ptr()) }
    }

    /// A buffer the body writes (and may read): its `Out` handle on `data`.
    pub fn output<'a, T: Element>(&self, data: &'a mut [T]) -> Out<'a, T> {
        let k = self.slot(data.len());
        unsafe { self.kernel().output(k, data.as_mut_ptr()) }
    }

    fn kernel(&self) -> &Kernel<'static> {
        self.kernel.as_ref().expect("a grid launches once")
    }

    /// Run `body` once per invocation of the grid, with GPU semantics and cpu-sim's checks; any
    /// finding fails the test (a panic naming each finding at its Rust lines).
    #[track_caller]
    pub fn run<F: Fn(Ctx) + Sync>(self, body: F) {
        let at = Location::caller();
        let findings = self.check(body);
        if !findings.is_empty() {
            panic!("{}", findings.failure(at));
        }
    }

    /// Run `body` as [`Grid::run`] does and give the findings instead of failing (a test that
    /// expects a race asserts on them).
    #[track_caller]
    pub fn check<F: Fn(Ctx) + Sync>(mut self, body: F) -> Findings {
        if !cfg!(feature = "sim") {
            panic!(
                "gpu_kernel::testing runs kernels with cpu-sim's checks, which this build lacks: add \
                 `gpu_kernel = {{ path = \"gpu_kernel\", features = [\"sim\"] }}` under [dev-dependencies] \
                 in the project's Cargo.toml (docs/kernel-tests.md)"
            );
        }
        let kernel = self.kernel.take().expect("a grid launches once");
        kernel.run(body);
        let len = unsafe { (*self.record).report_len } as usize;
        let text = unsafe { core::slice::from_raw_parts(self.report, len) };
        Findings::parse(core::str::from_utf8(text).unwrap_or(""))
    }
}

impl Grid {
    /// Run `lanes`, the host copy of a `#[lanes]` body (`NAME_lanes`), once per workgroup of the
    /// grid with cpu-sim's checks, as the `cpu-sim` backend runs it; any finding fails the test.
    /// A test runs the body on fibers ([`Grid::run`]) on another grid and compares the outputs.
    #[track_caller]
    pub fn run_lanes<L: Fn(&crate::host::Lanes) + Sync>(self, lanes: L) {
        let at = Location::caller();
        let findings = self.check_lanes_at(lanes, at);
        if !findings.is_empty() {
            panic!("{}", findings.failure(at));
        }
    }

    /// [`Grid::run_lanes`], giving the findings instead of failing.
    #[track_caller]
    pub fn check_lanes<L: Fn(&crate::host::Lanes) + Sync>(self, lanes: L) -> Findings {
        self.check_lanes_at(lanes, Location::caller())
    }

    fn check_lanes_at<L: Fn(&crate::host::Lanes) + Sync>(mut self, lanes: L, at: &'static Location<'static>) -> Findings {
        if !cfg!(feature = "sim") {
            panic!("gpu_kernel::testing runs kernels with cpu-sim's checks, which this build lacks (docs/kernel-tests.md)");
        }
        let kernel = self.kernel.take().expect("a grid launches once");
        kernel.lanes_only(lanes, at);
        let len = unsafe { (*self.record).report_len } as usize;
        let text = unsafe { core::slice::from_raw_parts(self.report, len) };
        Findings::parse(core::str::from_utf8(text).unwrap_or(""))
    }
}

impl Drop for Grid {
    fn drop(&mut self) {
        // The kernel holds the record: it goes first.
        self.kernel = None;
        unsafe {
            drop(Box::from_raw(self.record));
            drop(Box::from_raw(self.lens as *mut [u64; MAX_BUFFERS]));
            drop(Box::from_raw(core::ptr::slice_from_raw_parts_mut(self.report, REPORT_BYTES)));
        }
    }
}

/// What cpu-sim found in one launch: each finding as `workbench run` prints it.
#[derive(Debug, Clone, Default)]
pub struct Findings {
    /// One per finding: its kind (`shared-race`, `global-race`, `out-of-bounds`,
    /// `barrier-divergence`, `uninitialized-read`), its `file:line:column` and its sentence.
    pub items: Vec<Finding>,
    /// Distinct findings past the 64 kept in full.
    pub dropped: u64,
}

/// One finding (see [`Findings`]).
#[derive(Debug, Clone)]
pub struct Finding {
    pub kind: String,
    /// Where it is reported: the last access's line (a divergence: the first barrier's).
    pub file: String,
    pub line: u64,
    pub column: u64,
    pub message: String,
}

impl core::fmt::Display for Finding {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "{}:{}:{}: cpu-sim: error[{}]: {}", self.file, self.line, self.column, self.kind, self.message)
    }
}

impl Findings {
    pub fn is_empty(&self) -> bool {
        self.items.is_empty() && self.dropped == 0
    }

    /// The kinds found, in the report's order (`["shared-race"]`).
    pub fn kinds(&self) -> Vec<&str> {
        self.items.iter().map(|f| f.kind.as_str()).collect()
    }

    fn failure(&self, at: &Location) -> String {
        let mut text = format!(
            "cpu-sim found {} problem{} in the kernel launched at {}:{}:{}:",
            self.items.len(),
            if self.items.len() == 1 { "" } else { "s" },
            at.file(),
            at.line(),
            at.column()
        );
        for finding in &self.items {
            let _ = write!(text, "\n{finding}");
        }
        if self.dropped > 0 {
            let _ = write!(text, "\n(+{} more)", self.dropped);
        }
        text
    }

    /// The report's JSON (`host::report`), read with the small parser below.
    fn parse(text: &str) -> Findings {
        let mut out = Findings::default();
        let Some(report) = Json::parse(text) else { return out };
        out.dropped = report.get("dropped").and_then(Json::num).unwrap_or(0.0) as u64;
        for finding in report.get("findings").map(Json::items).unwrap_or_default() {
            out.items.push(describe(finding));
        }
        out
    }
}

// ------------------------------------------------------------------ the findings' sentences
// The same words as workbench/run/sim_findings.py's `describe`, so a test's failure reads as a
// cpu-sim run's diagnostics do.

fn kind_words(kind: &str) -> &str {
    match kind {
        "shared-race" => "data race on workgroup memory",
        "global-race" => "data race on a global buffer",
        "out-of-bounds" => "out-of-bounds index",
        "barrier-divergence" => "barrier divergence",
        "uninitialized-read" => "read of workgroup memory no invocation wrote",
        other => other,
    }
}

fn place(p: &Json) -> String {
    let num = |key| p.get(key).and_then(Json::num).unwrap_or(0.0) as u64;
    format!("{}:{}:{}", p.get("file").and_then(Json::text).unwrap_or("?"), num("line"), num("column"))
}

fn who(access: &Json) -> String {
    let triple = |key| {
        let v: Vec<String> = access.get(key).map(Json::items).unwrap_or_default().iter().map(|n| format!("{}", n.num().unwrap_or(0.0) as u64)).collect();
        format!("({})", v.join(", "))
    };
    format!("workgroup {} local id {}", triple("group"), triple("local"))
}

fn describe(finding: &Json) -> Finding {
    let kind = finding.get("kind").and_then(Json::text).unwrap_or("").to_string();
    let accesses = finding.get("accesses").map(Json::items).unwrap_or_default();
    let mut parts = Vec::new();
    for access in &accesses {
        match access.get("access").and_then(Json::text).unwrap_or("") {
            "barrier" => parts.push(format!("{} waits at the barrier at {}", who(access), place(access))),
            "return" => parts.push(format!("{} returned without reaching it", who(access))),
            what => parts.push(format!("{what} by {} at {}", who(access), place(access))),
        }
    }
    let element = match finding.get("array").and_then(Json::text) {
        Some("buffer") => Some(format!("buffer {}", finding.get("buffer").and_then(Json::num).unwrap_or(0.0) as u64)),
        Some("shared") => Some(format!(
            "shared array {} (declared at {})",
            finding.get("slot").and_then(Json::num).unwrap_or(0.0) as u64,
            finding.get("declared").map(place).unwrap_or_default()
        )),
        _ => None,
    }
    .map(|mut name| {
        if let Some(i) = finding.get("index").and_then(Json::num) {
            let _ = write!(name, "[{}]", i as u64);
            if let Some(n) = finding.get("length").and_then(Json::num) {
                let _ = write!(name, " (length {})", n as u64);
            }
        }
        name
    });
    let mut message = format!("{}: ", kind_words(&kind));
    if let Some(element) = element {
        let _ = write!(message, "{element}: ");
    }
    message.push_str(&parts.join("; "));
    if kind == "shared-race" {
        message.push_str(" (no barrier between them)");
    }
    let count = finding.get("count").and_then(Json::num).unwrap_or(1.0) as u64;
    if count > 1 {
        let _ = write!(message, " [{count} times]");
    }
    let at = if kind == "barrier-divergence" { accesses.first() } else { accesses.last() };
    let num = |key| at.and_then(|a| a.get(key)).and_then(Json::num).unwrap_or(0.0) as u64;
    Finding {
        file: at.and_then(|a| a.get("file")).and_then(Json::text).unwrap_or("?").to_string(),
        line: num("line"),
        column: num("column"),
        kind,
        message,
    }
}

// ------------------------------------------------------------------ a small JSON reader
// The report is JSON text meant for the workbench's Python side; the crate has no dependencies,
// so the few shapes it holds are read here.

#[derive(Debug, Clone)]
#[allow(dead_code)] // a boolean's value is never read: the report's are only in traces
enum Json {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Arr(Vec<Json>),
    Obj(Vec<(String, Json)>),
}

impl Json {
    fn parse(text: &str) -> Option<Json> {
        let mut reader = Reader { s: text.as_bytes(), i: 0 };
        let value = reader.value()?;
        Some(value)
    }
    fn get(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Obj(fields) => fields.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn items(&self) -> Vec<&Json> {
        match self {
            Json::Arr(items) => items.iter().collect(),
            _ => Vec::new(),
        }
    }
    fn num(&self) -> Option<f64> {
        match self {
            Json::Num(n) => Some(*n),
            _ => None,
        }
    }
    fn text(&self) -> Option<&str> {
        match self {
            Json::Str(s) => Some(s),
            _ => None,
        }
    }
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn skip(&mut self) {
        while self.i < self.s.len() && self.s[self.i].is_ascii_whitespace() {
            self.i += 1;
        }
    }
    fn eat(&mut self, c: u8) -> bool {
        self.skip();
        if self.s.get(self.i) == Some(&c) {
            self.i += 1;
            true
        } else {
            false
        }
    }
    fn value(&mut self) -> Option<Json> {
        self.skip();
        match *self.s.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut fields = Vec::new();
                if self.eat(b'}') {
                    return Some(Json::Obj(fields));
                }
                loop {
                    self.skip();
                    let Json::Str(key) = self.string()? else { return None };
                    if !self.eat(b':') {
                        return None;
                    }
                    fields.push((key, self.value()?));
                    if self.eat(b'}') {
                        return Some(Json::Obj(fields));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                if self.eat(b']') {
                    return Some(Json::Arr(items));
                }
                loop {
                    items.push(self.value()?);
                    if self.eat(b']') {
                        return Some(Json::Arr(items));
                    }
                    if !self.eat(b',') {
                        return None;
                    }
                }
            }
            b'"' => self.string(),
            b't' => self.word("true", Json::Bool(true)),
            b'f' => self.word("false", Json::Bool(false)),
            b'n' => self.word("null", Json::Null),
            _ => {
                let start = self.i;
                while self.i < self.s.len() && matches!(self.s[self.i], b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9') {
                    self.i += 1;
                }
                core::str::from_utf8(&self.s[start..self.i]).ok()?.parse().ok().map(Json::Num)
            }
        }
    }
    fn word(&mut self, word: &str, value: Json) -> Option<Json> {
        if self.s[self.i..].starts_with(word.as_bytes()) {
            self.i += word.len();
            Some(value)
        } else {
            None
        }
    }
    fn string(&mut self) -> Option<Json> {
        if self.s.get(self.i) != Some(&b'"') {
            return None;
        }
        self.i += 1;
        let mut out = Vec::new();
        while let Some(&c) = self.s.get(self.i) {
            self.i += 1;
            match c {
                b'"' => return Some(Json::Str(String::from_utf8_lossy(&out).into_owned())),
                b'\\' => {
                    // The report escapes only quotes and backslashes.
                    out.push(*self.s.get(self.i)?);
                    self.i += 1;
                }
                c => out.push(c),
            }
        }
        None
    }
}

#[cfg(all(test, feature = "sim"))]
mod tests {
    use super::*;

    /// Every invocation adds to a workgroup sum in shared memory, reads it after a barrier, and
    /// writes its element: no finding.
    #[test]
    fn barrier_and_shared_memory_are_checked_clean() {
        let n = 1000; // not a multiple of 256: the last workgroup's tail is idle
        let x: Vec<u32> = (0..n as u32).collect();
        let mut y = vec![0u32; n];
        let grid = Grid::new([4, 1, 1], [256, 1, 1]);
        let (xb, yb) = (grid.input(&x), grid.output(&mut y));
        grid.run(|ctx| {
            let mut yb = yb; // a handle is Copy: each invocation its own, as an entry passes them
            let mut sum = ctx.shared::<u32, 1>();
            if ctx.local_id_x() == 0 {
                sum.set(0, 0);
            }
            ctx.barrier();
            let i = ctx.global_id_x();
            if i < n {
                sum.atomic_add(0, xb[i]);
            }
            ctx.barrier();
            if i < n {
                yb[i] = sum.get(0);
            }
        });
        let first: u32 = (0..256).sum();
        assert_eq!(y[0], first);
        let last: u32 = (768..1000).sum();
        assert_eq!(y[999], last);
    }

    #[test]
    fn a_race_on_shared_memory_is_found_at_its_line() {
        let mut y = vec![0u32; 64];
        let grid = Grid::new([1, 1, 1], [64, 1, 1]);
        let yb = grid.output(&mut y);
        let findings = grid.check(|ctx| {
            let mut yb = yb;
            let mut s = ctx.shared::<u32, 64>();
            s.set(ctx.local_id_x(), 1);
            // No barrier: the neighbour's element may not be written yet.
            yb[ctx.local_id_x()] = s.get((ctx.local_id_x() + 1) % 64);
        });
        // Invocation 0 runs first: it reads element 1 before invocation 1 wrote it (an unwritten
        // read), and the write and the read race.
        assert!(findings.kinds().contains(&"shared-race"), "{findings:?}");
        let finding = findings.items.iter().find(|f| f.kind == "shared-race").unwrap();
        assert!(finding.file.ends_with("testing.rs"), "{finding}");
        assert!(finding.message.contains("no barrier between them"), "{finding}");
    }

    #[test]
    fn out_of_bounds_and_divergence_fail_the_test() {
        let x = vec![1.0f32; 10];
        let mut y = vec![0.0f32; 10];
        let grid = Grid::new([1, 1, 1], [16, 1, 1]);
        let (xb, yb) = (grid.input(&x), grid.output(&mut y));
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            grid.run(|ctx| {
                let mut yb = yb;
                let i = ctx.local_id_x();
                yb[i] = xb[i]; // no `i < n` guard
                if i % 2 == 0 {
                    ctx.barrier(); // half the workgroup
                }
            })
        }));
        let message = *failed.expect_err("findings fail the test").downcast::<String>().unwrap();
        assert!(message.contains("error[out-of-bounds]"), "{message}");
        assert!(message.contains("error[barrier-divergence]"), "{message}");
        assert!(message.contains("src/host/testing.rs:"), "{message}");
    }

    /// Workgroups long enough that the launching thread wakes the pool's helper (pool.rs): each
    /// still runs exactly once, whichever thread runs it, and a panic in any reaches the caller;
    /// launches right after each other (the helper still spinning for the next one, not parked)
    /// each run every workgroup once too. (Which threads take part depends on timing: not
    /// asserted.)
    #[test]
    fn shared_launches_run_every_workgroup_once_and_raise_a_panic() {
        let groups = 16;
        let mut counts = vec![0u32; groups];
        let grid = Grid::with_workers([groups as u32, 1, 1], [64, 1, 1], 2);
        let cb = grid.output(&mut counts);
        grid.run(|ctx| {
            let mut cb = cb;
            if ctx.local_id_x() == 0 {
                std::thread::sleep(std::time::Duration::from_micros(300));
            }
            cb.atomic_add(ctx.group_id_x(), 1);
        });
        assert_eq!(counts, vec![64; groups]);

        let mut y = vec![0u32; groups];
        let grid = Grid::with_workers([groups as u32, 1, 1], [64, 1, 1], 2);
        let yb = grid.output(&mut y);
        let failed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            grid.run(|ctx| {
                let _ = yb;
                if ctx.local_id_x() == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(300));
                    if ctx.group_id_x() == groups - 1 {
                        panic!("workgroup {} gives up", ctx.group_id_x());
                    }
                }
            })
        }));
        let payload = failed.expect_err("the panic reaches the caller");
        let message = payload.downcast_ref::<String>().cloned().unwrap_or_default();
        assert_eq!(message, format!("workgroup {} gives up", groups - 1));

        for launch in 0..40u32 {
            let mut counts = vec![0u32; groups];
            let grid = Grid::with_workers([groups as u32, 1, 1], [64, 1, 1], 2);
            let cb = grid.output(&mut counts);
            grid.run(|ctx| {
                let mut cb = cb;
                if ctx.local_id_x() == 0 && launch % 2 == 0 {
                    std::thread::sleep(std::time::Duration::from_micros(100));
                }
                cb.atomic_add(ctx.group_id_x(), 1);
            });
            assert_eq!(counts, vec![64; groups], "launch {launch}");
        }
    }

    /// A worker's fibers live on from workgroup to workgroup of a launch (each parked where its
    /// invocation returned, then running the same invocation of the next workgroup with
    /// barriers): every workgroup's invocations see their own workgroup's ids and shared array,
    /// in workgroups after one whose first barrier was reached by another invocation than 0
    /// (a divergent one: there that invocation runs on the worker's stack, not its fiber).
    #[test]
    fn fibers_run_each_later_workgroup_with_its_own_ids_and_memory() {
        let (groups, threads) = (9usize, 50usize); // one worker runs them all, one after the other
        let mut y = vec![0u32; groups * threads];
        let grid = Grid::with_workers([groups as u32, 1, 1], [threads as u32, 1, 1], 1);
        let yb = grid.output(&mut y);
        let findings = grid.check(|ctx| {
            let mut yb = yb;
            let mut s = ctx.shared::<u32, 64>();
            let (t, g) = (ctx.local_id_x(), ctx.group_id_x());
            if g % 3 == 1 && t < 5 {
                return; // diverges: invocation 5 reaches the barrier first
            }
            s.set(t, (g * 1000 + t) as u32);
            ctx.barrier();
            let right = s.get((t + 1) % threads); // the neighbour's, written before the barrier
            ctx.barrier();
            s.set(t, right + 1);
            ctx.barrier();
            yb[g * threads + t] = s.get((t + threads - 1) % threads);
        });
        let expected = ["barrier-divergence", "uninitialized-read"]; // the divergent workgroups'
        assert!(findings.kinds().iter().all(|k| expected.contains(k)), "{findings:?}");
        for g in (0..groups).filter(|g| g % 3 != 1) {
            let row: Vec<u32> = (0..threads).map(|t| (g * 1000 + t) as u32 + 1).collect();
            assert_eq!(y[g * threads..(g + 1) * threads], row[..], "workgroup {g}");
        }
    }

    /// Shuffles one after the other, and after a barrier, in workgroups that end inside a subgroup
    /// (100 invocations): each gives the value of the lane `delta` above (its own past the
    /// subgroup's or the workgroup's end), never a value of an earlier shuffle.
    #[test]
    fn shuffles_in_a_row_each_give_their_own_values() {
        let (groups, threads) = (3usize, 100usize);
        let mut y = vec![0u32; groups * threads];
        let grid = Grid::with_workers([groups as u32, 1, 1], [threads as u32, 1, 1], 1);
        let yb = grid.output(&mut y);
        grid.run(|ctx| {
            let mut yb = yb;
            let (t, g) = (ctx.local_id_x(), ctx.group_id_x());
            let a = ctx.subgroup_shuffle_down((g * 1000 + t) as u32, 1);
            let b = ctx.subgroup_shuffle_down(a * 2, 2);
            ctx.barrier();
            let c = ctx.subgroup_shuffle_down(b + 7, 4);
            yb[g * threads + t] = c;
        });
        let down = |values: &[u32], delta: usize| -> Vec<u32> {
            let at = |t: usize| if t % 32 + delta < 32 && t + delta < threads { t + delta } else { t };
            (0..threads).map(|t| values[at(t)]).collect()
        };
        for g in 0..groups {
            let v: Vec<u32> = (0..threads).map(|t| (g * 1000 + t) as u32).collect();
            let a = down(&v, 1);
            let b = down(&a.iter().map(|x| x * 2).collect::<Vec<_>>(), 2);
            let c = down(&b.iter().map(|x| x + 7).collect::<Vec<_>>(), 4);
            assert_eq!(y[g * threads..(g + 1) * threads], c[..], "workgroup {g}");
        }
    }

    #[test]
    fn json_reader_reads_the_report_shapes() {
        let j = Json::parse(r#"{"a":[1,-2.5e0,"x\"y"],"b":{"c":true,"d":null}}"#).unwrap();
        assert_eq!(j.get("a").unwrap().items()[1].num(), Some(-2.5));
        assert_eq!(j.get("a").unwrap().items()[2].text(), Some("x\"y"));
        assert!(matches!(j.get("b").unwrap().get("c"), Some(Json::Bool(true))));
    }
}
