//! The findings as JSON text in the launch's report buffer (the cpu runtime parses it).

use core::panic::Location;
use std::fmt::Write;

use super::sim::{Access, Array, Checks};
use super::Traced;

fn escaped(text: &str) -> String {
    text.chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if (c as u32) < 0x20 => vec!['?'],
            c => vec![c],
        })
        .collect()
}

/// A traced value as JSON: a number (floats that are not finite as a string), or a boolean.
fn value(out: &mut String, value: &Traced) {
    match *value {
        Traced::F32(v) if v.is_finite() => { let _ = write!(out, "\"type\":\"f32\",\"value\":{v:?}"); }
        Traced::F32(v) => { let _ = write!(out, "\"type\":\"f32\",\"value\":\"{v}\""); }
        Traced::F64(v) if v.is_finite() => { let _ = write!(out, "\"type\":\"f64\",\"value\":{v:?}"); }
        Traced::F64(v) => { let _ = write!(out, "\"type\":\"f64\",\"value\":\"{v}\""); }
        Traced::Int(v, t) => { let _ = write!(out, "\"type\":\"{t}\",\"value\":{v}"); }
        Traced::Uint(v, t) => { let _ = write!(out, "\"type\":\"{t}\",\"value\":{v}"); }
        Traced::Bool(v) => { let _ = write!(out, "\"type\":\"bool\",\"value\":{v}"); }
    }
}

fn location(out: &mut String, at: &Location) {
    let file: String = at
        .file()
        .chars()
        .flat_map(|c| match c {
            '"' => vec!['\\', '"'],
            '\\' => vec!['\\', '\\'],
            c if (c as u32) < 0x20 => vec!['?'],
            c => vec![c],
        })
        .collect();
    let _ = write!(out, "\"file\":\"{file}\",\"line\":{},\"column\":{}", at.line(), at.column());
}

fn access(out: &mut String, a: &Access) {
    let _ = write!(
        out,
        "{{\"group\":[{},{},{}],\"local\":[{},{},{}],\"access\":\"{}\",",
        a.group[0], a.group[1], a.group[2], a.local[0], a.local[1], a.local[2], a.what
    );
    location(out, a.at);
    out.push('}');
}

/// Write `{"findings": [...], "dropped": N}` into `out` — with a traced invocation also
/// `"trace": [...], "trace_dropped": N` — leaving out whole findings and records that do not fit
/// (counted); returns the bytes written. Findings take at most half the room when tracing.
pub fn write(checks: &Checks, out: &mut [u8]) -> usize {
    let room = if checks.is_tracing() { out.len() / 2 } else { out.len() };
    let mut text = findings(checks, room);
    if checks.is_tracing() {
        let mut dropped = checks.trace_dropped.load(std::sync::atomic::Ordering::Relaxed);
        text.push_str(",\"trace\":[");
        let mut any = false;
        for record in checks.traces.lock().unwrap().iter() {
            let mut one = format!("{{\"name\":\"{}\",", escaped(record.name));
            value(&mut one, &record.value);
            let _ = write!(one, ",\"epoch\":{},", record.epoch);
            location(&mut one, record.at);
            one.push('}');
            if text.len() + one.len() + 60 > out.len() {
                dropped += 1;
                continue;
            }
            if any {
                text.push(',');
            }
            text.push_str(&one);
            any = true;
        }
        let _ = write!(text, "],\"trace_dropped\":{dropped}");
    }
    if checks.writers {
        // The writer arrays' location ids: id k + 1 is entry k (debug::Writers).
        text.push_str(",\"locations\":[");
        for (k, at) in super::sim::locations().iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            text.push('{');
            location(&mut text, at);
            text.push('}');
        }
        text.push(']');
    }
    text.push('}');
    if text.len() > out.len() {
        return 0;
    }
    out[..text.len()].copy_from_slice(text.as_bytes());
    text.len()
}

/// `{"findings": [...], "dropped": N` (not closed), within `room` bytes.
fn findings(checks: &Checks, room: usize) -> String {
    let out_len = room;
    let mut dropped = checks.dropped.load(std::sync::atomic::Ordering::Relaxed);
    let mut text = String::from("{\"findings\":[");
    let mut any = false;
    checks.findings(|findings| {
        for f in findings {
            let mut one = String::new();
            let _ = write!(one, "{{\"kind\":\"{}\",", f.kind);
            match f.array {
                Array::Buffer(b) => {
                    let _ = write!(one, "\"array\":\"buffer\",\"buffer\":{b},");
                }
                Array::Shared(slot, decl) => {
                    let _ = write!(one, "\"array\":\"shared\",\"slot\":{slot},\"declared\":{{");
                    location(&mut one, decl.0);
                    one.push_str("},");
                }
                Array::None => {}
            }
            if let Some(i) = f.index {
                let _ = write!(one, "\"index\":{i},");
            }
            if let Some(n) = f.length {
                let _ = write!(one, "\"length\":{n},");
            }
            let _ = write!(one, "\"count\":{},\"accesses\":[", f.count);
            access(&mut one, &f.first);
            if let Some(second) = &f.second {
                one.push(',');
                access(&mut one, second);
            }
            one.push_str("]}");
            // Room for this finding, a comma and the closing part with a 20-digit count.
            if text.len() + one.len() + 40 > out_len {
                dropped += 1;
                continue;
            }
            if any {
                text.push(',');
            }
            text.push_str(&one);
            any = true;
        }
    });
    let _ = write!(text, "],\"dropped\":{dropped}");
    text
}
