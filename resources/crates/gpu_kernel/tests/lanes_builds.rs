//! `#[lanes]` in a user's crate, built with cargo (each case a kernel crate of its own): what it
//! refuses (a body whose copy would compute something other than the body on fibers, or would
//! not compile for a reason the attribute can name: the error must be the attribute's, at the
//! line of the offending code), and that what it writes draws no warning.

use std::path::PathBuf;
use std::process::Command;

/// `cargo check` of a crate whose lib.rs is `source` (with `use gpu_kernel::prelude::*;` in
/// front): whether it compiled, and the compiler's messages, short form.
fn check(case: &str, source: &str) -> (bool, String) {
    cargo(case, &format!("use gpu_kernel::prelude::*;\n{source}"), &["check"])
}

/// `cargo <command>` in the crate of `source` (see `check`); `--` and the arguments after it go
/// to the tool.
fn cargo(case: &str, source: &str, command: &[&str]) -> (bool, String) {
    let root = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lanes_refusals");
    let dir = root.join(case);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    let manifest = format!(
        "[package]\nname = \"{case}\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n\
         gpu_kernel = {{ path = {:?} }}\n\n[lints.rust]\nunexpected_cfgs = {{ level = \"allow\", check-cfg = \
         ['cfg(target_arch, values(\"spirv\"))'] }}\n",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).unwrap();
    std::fs::write(dir.join("src/lib.rs"), source).unwrap();
    let out = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args(command.iter().take_while(|a| **a != "--"))
        .args(["--offline", "--quiet", "--message-format", "short"])
        .args(command.iter().skip_while(|a| **a != "--"))
        .env("CARGO_TARGET_DIR", root.join("target"))
        .current_dir(&dir)
        .output()
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// `source` does not compile, and the first error is `#[lanes]`'s `message` at the line of
/// `source` holding `at`.
#[track_caller]
fn refused(case: &str, source: &str, at: &str, message: &str) {
    let (ok, messages) = check(case, source);
    assert!(!ok, "compiled:\n{source}");
    let line = 1 + 1 + source.lines().position(|l| l.contains(at)).expect("`at` is in the source");
    let first = messages.lines().find(|l| l.contains("error")).unwrap_or("");
    assert!(first.starts_with(&format!("src/lib.rs:{line}:")), "expected at line {line}:\n{messages}");
    assert!(first.contains(&format!("#[lanes]: {message}")), "expected `{message}`:\n{messages}");
}

/// A `let` of a pattern the copy cannot keep (`let [count, _]`) shadows `count` of the loop
/// around it, which the run also changes: putting `count` back after the run would store the
/// shadowing value (the copy gave 200 where fibers give 103).
#[test]
fn a_pattern_shadowing_a_loops_local_is_refused() {
    refused(
        "pattern_shadow",
        r#"
#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>) {
    let mut count = 0u32;
    let mut go = 3u32;
    while go > 0 {
        count += 1;
        go -= 1;
        ctx.barrier();
        let [count, _] = [100u32, 0];
        y[ctx.global_id_x()] = count;
    }
    y[ctx.global_id_x()] += count;
}
"#,
        "let [count, _]",
        "`count` is shadowed here",
    );
}

/// A statement macro given by itself a name that is no local bound before it (nor a parameter of
/// a primitive type), read after the next barrier: the macro may bind it (these do), and the copy
/// has no binding of it to keep per lane (`tests/lanes_macros.rs` has the names it keeps). Refused
/// at the macro, not with rustc's "cannot find value" at the read.
#[test]
fn a_macro_given_a_new_name_read_after_a_barrier_is_refused() {
    refused(
        "macro_binding",
        r#"
macro_rules! rebind {
    ($name:ident, $value:expr) => {
        let $name = $value;
    };
}

#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>) {
    let t = ctx.local_id_x();
    ctx.barrier();
    rebind!(v, 500u32 + t as u32);
    ctx.barrier();
    y[ctx.global_id_x()] = v;
}
"#,
        "rebind!(v, 500u32 + t as u32)",
        "the macro `rebind!` is given `v` by itself",
    );
    refused(
        "macro_binding_stmt",
        r#"
macro_rules! stmt {
    ($s:stmt) => {
        $s
    };
}

#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>) {
    ctx.barrier();
    stmt!(let v = 500u32);
    ctx.barrier();
    y[ctx.global_id_x()] = v;
}
"#,
        "stmt!(let v = 500u32)",
        "the macro `stmt!` is given `v` by itself",
    );
}

/// A statement macro in the block of a `while` with a barrier, given a `mut` local of the body:
/// if it changes it, the run puts it back for the next round and after the loop; if it binds a
/// new one (this one could: `bind!(acc <- ..)`), that one ends with the block and must not be put
/// back. The copy cannot tell which: refused at the name (it put back the macro's binding).
#[test]
fn a_macro_given_a_mut_local_of_a_block_around_it_is_refused() {
    refused(
        "macro_outer_mut",
        r#"
macro_rules! bind {
    ($n:ident <- $v:expr) => {
        let $n = $v;
    };
}

#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>) {
    let mut acc = 1u32;
    let mut k = 0u32;
    while k < 2 {
        bind!(acc <- 100u32);
        ctx.barrier();
        y[ctx.global_id_x()] = acc;
        ctx.barrier();
        k += 1;
    }
    y[ctx.global_id_x()] += acc;
}
"#,
        "bind!(acc <- 100u32)",
        "the macro `bind!` is given `acc`, a `mut` local of a block around this one",
    );
}

/// A `mut` inside a parameter's pattern: the copy binds `mut` parameters per lane by name.
#[test]
fn a_mut_inside_a_parameter_pattern_is_refused() {
    refused(
        "mut_in_pattern",
        r#"
#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>, (mut a, b): (u32, u32)) {
    a += b;
    ctx.barrier();
    y[ctx.global_id_x()] = a;
}
"#,
        "(mut a, b)",
        "a `mut` inside a parameter's pattern is not supported",
    );
}

/// A memory handle parameter assigned: one value for the workgroup in the copy.
#[test]
fn a_handle_parameter_assigned_is_refused() {
    refused(
        "handle_assigned",
        r#"
#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>, z: Out<u32>) {
    if ctx.local_id_x() == 0 {
        y = z;
    }
    ctx.barrier();
    y[ctx.global_id_x()] = 1;
}
"#,
        "y = z;",
        "the parameter `y` is assigned in the body",
    );
}

/// The copy of a body with kept locals, loops and branches with barriers, `return`, `mut`
/// parameters and items, in a crate that denies warnings, missing docs and clippy's pedantic and
/// nursery lints: no finding (the body as written is clean; anything is the copy's).
#[test]
fn the_copy_draws_no_warning() {
    let (ok, messages) = cargo(
        "lint_clean",
        r#"//! A kernel crate.
#![deny(warnings, missing_docs, clippy::pedantic, clippy::nursery)]
use gpu_kernel::prelude::*;

/// A kernel body.
#[lanes]
pub fn k(ctx: Ctx, input: In<u32>, mut out: Out<u32>, mut tile: Shared<u32, 64>, mut bias: u32) {
    #![allow(clippy::needless_pass_by_value)]
    const TOP: u32 = 3;
    let lane = ctx.local_id_x();
    bias += 1;
    let mut acc = input[lane] + bias;
    let (one, mut two) = (1u32, 2u32);
    tile.set(lane, acc);
    ctx.barrier();
    let mut round = 0;
    while round < TOP {
        acc += tile.get((lane + 1) % 64) + one;
        ctx.barrier();
        tile.set(lane, acc);
        two += 1;
        ctx.barrier();
        round += 1;
    }
    if bias > 1 {
        ctx.barrier();
    }
    let mut offset = ctx.subgroup_size() / 2;
    while offset > 0 {
        acc += ctx.subgroup_shuffle_down(acc, u32::try_from(offset).unwrap_or(0));
        offset /= 2;
    }
    let first: u32 = ctx.subgroup_shuffle_down(acc, 1);
    if lane == 63 {
        return;
    }
    out[lane] = acc + two + bias + first;
}
"#,
        &["clippy", "--", "-D", "warnings"],
    );
    assert!(ok, "{messages}");
}

/// `if let` around a barrier: the lanes vote on a bool (the copy wrote `{ let Some(v) = .. }` as
/// the vote: rustc's "expected expression" at the generated code).
#[test]
fn an_if_let_around_a_barrier_is_refused() {
    refused(
        "if_let",
        r#"
#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>, o: Option<u32>) {
    if let Some(v) = o {
        ctx.barrier();
        y[ctx.global_id_x()] = v;
    }
}
"#,
        "if let Some(v)",
        "a `let` in the condition of a `while` or `if` with a barrier is not supported",
    );
}

/// A local across a barrier that is not `Copy`: `Carried`'s error, at the local (it was at the
/// `#[lanes]` line: the lane storage's code had the attribute's span).
#[test]
fn a_local_that_is_not_copy_is_refused_at_the_local() {
    let source = r#"use gpu_kernel::prelude::*;
pub struct Sum {
    pub v: u32,
}
#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>) {
    let t = ctx.local_id_x();
    let sum = Sum { v: t as u32 };
    ctx.barrier();
    y.set(t, sum.v);
}
"#;
    let (ok, messages) = cargo("not_copy", source, &["check"]);
    assert!(!ok, "compiled");
    let first = messages.lines().find(|l| l.contains("error")).unwrap_or("");
    assert!(first.starts_with("src/lib.rs:8:9: error[E0277]: `Sum` lives across a barrier in a #[lanes] body"), "{messages}");
}

/// A `continue` of a `while` with a barrier in it: the copy's runs are loops over the lanes (a
/// labeled `break` of the run's own block or loop is fine: tests/lanes.rs, `blocks`).
#[test]
fn a_continue_of_a_loop_with_a_barrier_is_refused() {
    refused(
        "continue",
        r#"
#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>) {
    let mut i = 0u32;
    while i < 4 {
        i += 1;
        if i == 2 { continue; }
        ctx.barrier();
    }
    y[ctx.global_id_x()] = i;
}
"#,
        "continue;",
        "`break` / `continue` out of a loop with a barrier in it is not supported",
    );
}

/// A 10 KiB local across a barrier: kept for 1024 lanes on the worker's stack it overflowed it
/// (SIGSEGV at run time). Refused when the kernel is built (a check does not monomorphise: the
/// error comes with `cargo build`), the note naming the local's line.
#[test]
fn a_local_too_large_to_keep_per_lane_is_refused_at_build() {
    let source = r#"use gpu_kernel::prelude::*;
#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>) {
    let t = ctx.local_id_x();
    let mut big = [0u32; 2560];
    big[t] = 1;
    ctx.barrier();
    y[t] = big[t];
}
/// An entry, so that the copy is built.
pub fn entry(kernel: gpu_kernel::host::Kernel, y: Out<u32>) {
    kernel.run_lanes(move |ctx| k(ctx, y), move |wg| k_lanes(wg, y));
}
"#;
    let (ok, messages) = cargo("too_large", source, &["build"]);
    assert!(!ok, "built");
    assert!(messages.contains("#[lanes]: a local of more than 128 bytes lives across a barrier"), "{messages}");
    assert!(messages.contains("src/lib.rs:5:"), "the local's line:\n{messages}");
}

/// A local the same in every lane (a uniform one: made of a parameter, and changed only by a
/// statement every lane runs with a uniform value) is kept once for the workgroup
/// (`host::Uniform`), not per lane: 10 KiB of it builds, where a per-lane one is refused (above).
/// Changed through an index (`big[t] = 1`: a lane's own element), it is per lane again.
#[test]
fn a_uniform_local_is_kept_once() {
    let source = |change: &str| {
        format!(
            r#"use gpu_kernel::prelude::*;
#[lanes]
pub fn k(ctx: Ctx, mut y: Out<u32>, n: u32) {{
    let t = ctx.local_id_x();
    let mut big = [n; 2560];
    {change}
    ctx.barrier();
    let all = big;
    y[t] = all[t % 2560];
}}
/// An entry, so that the copy is built.
pub fn entry(kernel: gpu_kernel::host::Kernel, y: Out<u32>) {{
    kernel.run_lanes(move |ctx| k(ctx, y, 1), move |wg| k_lanes(wg, y, 1));
}}
"#
        )
    };
    let (ok, messages) = cargo("uniform_large", &source("big = [n + 1; 2560];"), &["build"]);
    assert!(ok, "{messages}");
    let (ok, messages) = cargo("uniform_large_lane", &source("big[t] = 1;"), &["build"]);
    assert!(!ok && messages.contains("#[lanes]: a local of more than 128 bytes lives across a barrier"), "{messages}");
}

/// A subgroup shuffle anywhere but as a statement of its own (`let x = ctx.subgroup_shuffle_down(v,
/// d);`, `x = ..;`, `x op= ..;`) where a barrier could be: the copy splits that statement in two
/// around the exchange (every lane's operand put before any lane reads), which it cannot do
/// inside an expression, a `for`, a condition, a closure or another shuffle's operand.
#[test]
fn a_shuffle_the_copy_cannot_split_is_refused_at_it() {
    let message = "a subgroup shuffle is supported as a statement of its own";
    let body = |statement: &str| {
        format!(
            "#[lanes]\npub fn k(ctx: Ctx, mut y: Out<u32>) {{\n    let t = ctx.local_id_x() as u32;\n    let mut v = t;\n    \
             {statement}\n    ctx.barrier();\n    y[ctx.global_id_x()] = v;\n}}\n"
        )
    };
    let cases = [
        ("shuffle_in_expression", "v += 1 + ctx.subgroup_shuffle_down(t, 1); // AT"),
        ("shuffle_in_for", "for _ in 0..2 {\n        v = ctx.subgroup_shuffle_down(v, 1); // AT\n    }"),
        ("shuffle_in_condition", "while ctx.subgroup_shuffle_down(v, 1) > 0 { // AT\n        v /= 2;\n    }"),
        ("shuffle_in_closure", "let f = |a: u32| ctx.subgroup_shuffle_down(a, 1); // AT\n    v = f(v);"),
        ("shuffle_of_shuffle", "v = ctx.subgroup_shuffle_down(ctx.subgroup_shuffle_down(v, 1), 2); // AT"),
    ];
    for (case, statement) in cases {
        refused(case, &body(statement), "// AT", message);
    }
}

/// More places a shuffle cannot be split at, each refused at it (adversarial review): a `loop`,
/// a `match` arm, an `unsafe` block, a macro's arguments (`assert!`), a tuple's element, an
/// expression statement (its value dropped), an attributed `let`, a turbofish; and a `break` /
/// `continue` in a `while` with a shuffle (it would leave the loop over the lanes), a `let` in
/// the condition of an `if` around one.
#[test]
fn more_shuffles_the_copy_cannot_split_are_refused_at_them() {
    let shapes = "a subgroup shuffle is supported as a statement of its own";
    let escape = "`break` / `continue` out of a loop with a barrier in it is not supported";
    let body = |statement: &str| {
        format!(
            "#[lanes]\npub fn k(ctx: Ctx, mut y: Out<u32>) {{\n    let t = ctx.local_id_x() as u32;\n    let mut v = t;\n    \
             {statement}\n    ctx.barrier();\n    y[ctx.global_id_x()] = v;\n}}\n"
        )
    };
    let cases = [
        ("shuffle_in_loop", "loop {\n        v = ctx.subgroup_shuffle_down(v, 1); // AT\n        break;\n    }", shapes),
        ("shuffle_in_match", "match t {\n        0 => v = ctx.subgroup_shuffle_down(v, 1), // AT\n        _ => {}\n    }", shapes),
        ("shuffle_in_unsafe", "unsafe {\n        v = ctx.subgroup_shuffle_down(v, 1); // AT\n    }", shapes),
        ("shuffle_in_assert", "assert!(ctx.subgroup_shuffle_down(v, 1) < 1000); // AT", shapes),
        ("shuffle_in_tuple", "let (a, b) = (ctx.subgroup_shuffle_down(v, 1), 2); // AT\n    v += a + b;", shapes),
        ("shuffle_dropped", "ctx.subgroup_shuffle_down(v, 1); // AT", shapes),
        ("shuffle_attributed", "#[allow(unused)]\n    let w = ctx.subgroup_shuffle_down(v, 1); // AT", shapes),
        ("shuffle_turbofish", "v = ctx.subgroup_shuffle_down::<u32>(v, 1); // AT", shapes),
        (
            "shuffle_break",
            "while v < 100 {\n        v += ctx.subgroup_shuffle_down(v, 1);\n        if v > 50 {\n            break; // AT\n        }\n    }",
            escape,
        ),
        (
            "shuffle_continue",
            "while v < 100 {\n        v += 1;\n        if v % 2 == 0 {\n            continue; // AT\n        }\n        v += ctx.subgroup_shuffle_down(v, 1);\n    }",
            escape,
        ),
        (
            "shuffle_if_let",
            "if let Some(w) = Some(v) { // AT\n        v = ctx.subgroup_shuffle_down(w, 1);\n    }",
            "a `let` in the condition of a `while` or `if` with a barrier is not supported",
        ),
    ];
    for (case, statement, message) in cases {
        refused(case, &body(statement), "// AT", message);
    }
}
