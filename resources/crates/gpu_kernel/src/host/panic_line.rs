//! A kernel's panic as one line on stderr before the process aborts (the profiles build with
//! `panic = "abort"`, so nothing unwinds back to the runtime): the workbench's cpu runtime finds
//! the line in its dead worker's output (`workbench/run/runtimes/cpu_launch.py`, `kernel_panic`)
//! and reports the message and the kernel's file:line. The hook it replaces runs afterwards, so
//! the usual message and backtrace still follow (and `cargo test` reads as before).

use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::Once;

/// What starts the line; the rest is JSON: `{"file", "line", "column", "message"}`.
const MARK: &str = "gpu_kernel panic: ";

/// Install the hook once per process (every launch calls it: one atomic load after the first).
pub fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            // One write of one line: stderr is unbuffered, so two panicking workers' lines do not
            // interleave within a line.
            let _ = std::io::stderr().write_all(line(info).as_bytes());
            previous(info);
        }));
    });
}

fn line(info: &std::panic::PanicHookInfo) -> String {
    let payload = info.payload();
    let message = match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(text), _) => text.to_string(),
        (_, Some(text)) => text.clone(),
        _ => "(a panic without a message)".to_string(),
    };
    let mut out = String::from(MARK);
    match info.location() {
        Some(at) => {
            let _ = write!(
                out,
                "{{\"file\":\"{}\",\"line\":{},\"column\":{},",
                json(at.file()),
                at.line(),
                at.column()
            );
        }
        None => out.push('{'),
    }
    let _ = writeln!(out, "\"message\":\"{}\"}}", json(&message));
    out
}

fn json(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}
