//! `#[gpu_kernel::lanes]`: a kernel body's host copy, split at its barriers into loops over the
//! workgroup's invocations.
//!
//! On the host every invocation of a workgroup otherwise runs on a fiber of its own, and each
//! barrier is one switch per invocation: for a kernel doing a few loads and an add between
//! barriers (a scan, a reduction tree, a stencil's tile) the switches are most of its time. This
//! attribute keeps the body as written (every GPU target, and cpu-sim's fibers in `workbench
//! debug`) and adds `NAME_lanes`, where the statements between two barriers are one loop over
//! the invocations ("lanes"), the way OpenCL-on-CPU compilers (pocl's work-group functions) run
//! kernels: no switch, no stack per invocation, and a loop the compiler can optimise across
//! invocations. Locals that live across a barrier are kept per lane (`host::LaneVar`).
//!
//! Uniform locals: a kept local whose value the attribute can prove the same for every
//! invocation of the workgroup (a scan's `offset`, a stencil's block origin) is kept once
//! (`host::Uniform`): a run reads it as a plain value, not from each lane's slot. A `while` or
//! `if` around a barrier whose condition reads only uniform values is evaluated once, with no
//! loop over the lanes and no vote; a run whose every statement is a uniform `let` or assignment
//! (a loop's `stride /= 2`) runs once, not per lane; a barrier-free `while` whose condition is
//! uniform (histogram's counting loop, warp_reduce's loads into a per-lane sum) runs as a loop
//! over its iterations with the lanes inside (`uniform_while` has the rule); a subgroup shuffle
//! whose delta is uniform goes through its stash without a source lane per lane (`put_uniform`,
//! `settle`, `get_uniform`). A wrong "uniform" would be a silent wrong
//! result, so the rule is narrow:
//! - a `let` (a name or a tuple of names) is uniform when it stands at the top level of its run
//!   (not in a nested block, branch, loop or closure of it: every lane that has not returned runs
//!   it), has no attribute, comes after no statement of the run holding a `return`, and its value
//!   is a uniform expression;
//! - a uniform expression names only uniform locals, parameters of a primitive type (`u32`,
//!   `usize`, `f32`, ...; a memory handle's reads may differ per lane, other types may hide
//!   interior mutability), items (`const`s, paths, types), literals and `ctx`'s per-workgroup
//!   values (`group_id_*`, `group_size_*`, `num_groups_*`, `group_linear`, `subgroup_size`); it calls no
//!   function, closure or macro, and of methods only the pure numeric ones (`min`, `div_ceil`,
//!   `wrapping_add`, ...: `PURE_METHODS`); it assigns nothing and holds no `unsafe`, `return`,
//!   `break`, `let`, `match`, loop, `?` or label;
//! - a `mut` local is uniform only if every assignment to a local of its name anywhere in the
//!   body is such a top-level `name = uniform;` / `name op= uniform;` statement, and nothing else
//!   can change it: no `&mut name`, `ref mut` (none anywhere: then no `mut` local is uniform),
//!   index, field, method other than the pure ones, call, destructuring assignment, or macro
//!   naming it. This is decided by name, for every local of that name (shadowing makes it more
//!   conservative, never less), and to a fixed point: the body is lowered assuming every
//!   candidate uniform, then again without those found assigned per lane, until no more drop;
//! - a name a macro's arguments mention is per lane for the rest of its run (a macro may bind it:
//!   `my_let!(x = ..)`), and a `let` of a pattern the attribute does not keep binds per-lane names.
//!
//! Statement macros: a statement that is one macro call (`bind!(v <- t);`, `m! { .. }`; not one of
//! the standard library's that bind nothing, `NON_BINDING_MACROS`: `assert!`, `debug_assert!`,
//! `println!`, ...) may bind any name its tokens hold, at any depth of its brackets, in a form no
//! look at the tokens can tell from a read (`v <- t` is, token for token, `v < -t`). So it is taken
//! as a `let` of each of those names that is a local bound before it (in its run, or kept from an
//! earlier one) or a parameter of a primitive type: per lane from there on (neither uniform nor
//! lane-pure), and kept, where a later run reads it, from whatever binding of that name is in scope
//! at the end of its run: the macro's if it bound one, else the one before (changed or not). A
//! lane-pure local whose form read the binding before is kept per lane (its slot is not the one
//! kept), as after a `let`. Refused at the macro: a name given by itself (the shapes of
//! `macro_binding`) that no such binding has and that a later run reads (a new name the macro may
//! bind: the copy has nothing to keep); a `mut` local of a block around the macro's (in a loop's
//! block: a change is put back after the run, a new binding must not be; the copy cannot tell
//! which). Not seen: a procedural macro's `let` of a name it was not given (with the call site's
//! hygiene): the runs after read the binding before it, with no error (a `macro_rules!` cannot
//! bind such a name: its own `let`s are hygienic).
//!
//! Each lane of a run still computes a uniform `let` (it is one statement among per-lane ones)
//! and sets the one slot to the same value; a uniform `mut` local the run puts back is read from
//! its value before the run (a lane's put back is not the next lane's start). A uniform
//! condition or run is evaluated only while some lane has not returned (`Lanes::live`: the vote
//! of no lane is `false`, and nothing a uniform condition reads was set), with `ctx` the first
//! live lane's (`Lanes::uniform_ctx`). A uniform local is not subject to `MAX_CARRIED_BYTES`
//! (it is kept once).
//!
//! Lane-pure locals: a kept local that is not `mut` and whose value is computed from the lane's
//! ids alone (`let t = ctx.local_id_x();`, `let i = tile * TILE + 2 * t;`, `let r = if t < N { t }
//! else { N - 1 };`, each name of `let (x, y) = (ctx.local_id_x(), ctx.local_id_y());`) is not
//! kept at all: each later loop that reads it computes it again from its own lane, first in the
//! loop (`closed_form`). A `LaneVar` load per lane hid from LLVM that `t` is the loop's counter;
//! now it sees it (bounds checks it can drop, a loop it can shorten). Computed again, the value
//! must be the same, so the rule is narrow (`closed_form`, `lane_pure`):
//! - the `let` is one of the run's own statements (as a uniform one), of one name or a tuple of
//!   names each with its own value, with no attribute, and not `mut`;
//! - its value is what a uniform expression may be (above) plus `ctx`'s lane ids (`local_id_*`,
//!   `global_id_*`), naming only immutable locals: uniform ones (read from their slot, kept for
//!   it; one the run shadows after the `let` refuses it), other lane-pure ones (written out in
//!   full), and primitive parameters; no memory read (a shared element may change after a
//!   barrier), no per-lane or `mut` local, no item or parameter of a name any block of the body
//!   declares an item of (another block's would be the one seen where the value is computed
//!   again: `const n` in an inner block hides the parameter `n` there), no block but
//!   an `if`'s or `else`'s, at most `MAX_CLOSED_TOKENS` tokens written out, and no
//!   `DEAR_METHODS` (`sqrt`, `pow`: dearer than the load);
//! - each loop binds all of its lane-pure locals in one `let (a, b) = (..)` before anything else
//!   (a value naming a parameter that another lane-pure local shadows still sees the parameter),
//!   through a `LaneType<T>` that the `let`'s own run binds to the local's type (a literal's type
//!   stays the one the local's uses gave it: `1 << t` a `u64` where a later use wants one); one
//!   that the loop's run names inside a loop of its own goes through `LaneType::opaque` (seen as
//!   the lane loop's counter in an inner loop, LLVM's strength reduction made histogram's
//!   counting loop dearer than with the local loaded).
//!
//! A run that is one `if t < bound { .. }` (no `else`; `t` the lane's x id, `ctx.local_id_x()` or
//! a lane-pure local of just that; `bound` uniform, with no `&&`, `||`, comparison or range in it)
//! loops over x only below the bound (`lane_bound`, `Lanes::x_below`): the lanes past it do
//! nothing in that run. A reduction's tree step then loops over `stride` lanes, not all.
//!
//! Each loop over a row of lanes (but one to a `lane_bound`, which may run a few lanes) is
//! followed by `__wg.row_end()` (`host::Lanes::row_end`): a
//! path marked cold in the plain host build, so that LLVM expects the loop to run long and the
//! cpu build's range check elimination takes a kernel's `if i < n` and its bounds checks out of
//! the loop's middle iterations (histogram's counting loop: one branch an element, not three).
//!
//! What it takes (anything else is a compile error at the statement, naming it; without the
//! attribute the body runs on fibers as before):
//! - a function whose first `Ctx` parameter is the invocation's, returning nothing;
//! - `ctx.barrier();` as a statement of the body, or of the block of a `while` or `if` whose
//!   condition is the same for every invocation of the workgroup (a GPU requires that much of a
//!   barrier; a lane that disagrees is a barrier divergence: cpu-sim reports it, cpu stops;
//!   so is one around a barrier no lane reaches, which fibers let pass), with no `let` in it;
//! - `ctx` used only as `ctx.method(..)` (a barrier in a function the body calls would be
//!   invisible here), no `ctx.shared()` (shared arrays are parameters), and of the subgroup
//!   operations only `subgroup_size`, `subgroup_invocation_id` and `subgroup_shuffle_down` (any
//!   other `subgroup_*` is refused by name), the shuffle only in the shapes below;
//! - locals that live across a barrier bound by `let name` or `let (a, b)`, of `Copy` types of
//!   at most 128 bytes where not uniform (`host::MAX_CARRIED_BYTES`: each is kept for 1024
//!   lanes), and
//!   not shadowed in a loop's or branch's block while that block's run of statements changes
//!   them; a statement macro given such a local of a block around its own (`mut`), or given by
//!   itself a new name read after the next barrier, is refused (see statement macros, above);
//! - parameters the same for every invocation, except `mut` ones other than the memory handles
//!   (`In`, `Out`, `Shared`), which are each invocation's own (`Copy`, kept per lane as locals);
//! - `return;` anywhere (one inside a macro's expansion cannot be seen: the run stops, naming
//!   the body), but `break` / `continue` only inside loops without barriers (or to a label of
//!   the run's own).
//!
//! Subgroup shuffles: on the host a `ctx.subgroup_shuffle_down(v, d)` is an exchange through the
//! workgroup with a barrier between every invocation's write and its read (`exec.rs`; every
//! invocation of the workgroup must reach it), so here it is a barrier too, and the statement
//! holding it is split around it (`split_shuffle`): every lane evaluates `v` and `d` and puts
//! them in the shuffle's `host::Stash` in the run before, the barrier (at the shuffle's name:
//! the fibers' barrier of it, so the same epoch and the same divergence reports), and each lane
//! takes its source lane's value in the run after: the lane `d` above in its subgroup of 32
//! consecutive linear ids, its own where that lane is past the subgroup's or the workgroup's end
//! (fibers' values exactly, f32 bits included). Where `d` is a uniform expression (the rule
//! above, as the put's statement sees its names), the lanes put only `v` (`put_uniform`), the
//! stash moves each subgroup's values down by `d` once after the barrier (`settle`), and each
//! lane reads its own slot (`get_uniform`): consecutive slots, a loop LLVM vectorises, where
//! each lane's source lane was a gather. A lane that returned before it is a divergence
//! at it, as at a barrier (cpu-sim reports it; the lanes stop, none reads a value not put). The
//! statement is one of `let PATTERN[: TYPE] = ctx.subgroup_shuffle_down(v, d);`, `name =
//! ctx.subgroup_shuffle_down(v, d);` or `name op= ctx.subgroup_shuffle_down(v, d);` (on fibers
//! too `v` and `d` are evaluated first and the rest only binds or assigns), with no attribute and
//! no shuffle or barrier in `v` or `d`, standing where a barrier may (the body, the block of a
//! `while` or `if` whose condition is voted or uniform: warp_reduce's `while offset > 0` with
//! `offset` from `subgroup_size() / 2`, halved each round, is uniform). Anywhere else (inside an
//! expression, a `for`, a condition, a closure, another shuffle's operand) it is refused at the
//! shuffle.
//!
//! The crate has no dependencies (the workbench builds offline: no syn, no quote); it reads the
//! token trees itself and keeps the body's own tokens, so every span (a panic's line, cpu-sim's
//! `#[track_caller]` locations, a compiler error) still points at the kernel's source.

use proc_macro::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree as Tt};
use std::collections::{BTreeMap, BTreeSet};

#[proc_macro_attribute]
pub fn lanes(attr: TokenStream, item: TokenStream) -> TokenStream {
    let mut out = item.clone();
    let result = if attr.is_empty() {
        transform(item)
    } else {
        Err(Error(Span::call_site(), "#[lanes] takes no arguments".into()))
    };
    match result {
        Ok(lanes) => out.extend(lanes),
        Err(Error(span, message)) => out.extend(compile_error(span, &message)),
    }
    out
}

struct Error(Span, String);
type Result<T> = core::result::Result<T, Error>;

fn fail<T>(span: Span, message: &str) -> Result<T> {
    Err(Error(span, format!("#[lanes]: {message}")))
}

// ---------------------------------------------------------------------------- token helpers

fn ts(code: &str) -> TokenStream {
    code.parse().expect("the macro's own code parses")
}

fn is_ident(t: &Tt, name: &str) -> bool {
    matches!(t, Tt::Ident(i) if i.to_string() == name)
}

fn is_punct(t: &Tt, c: char) -> bool {
    matches!(t, Tt::Punct(p) if p.as_char() == c)
}

fn is_brace(t: &Tt) -> bool {
    matches!(t, Tt::Group(g) if g.delimiter() == Delimiter::Brace)
}

fn stream(tokens: &[Tt]) -> TokenStream {
    tokens.iter().cloned().collect()
}

/// Every token of `s`, with `span` (generated code that stands for one of the kernel's tokens).
fn respan(s: TokenStream, span: Span) -> TokenStream {
    s.into_iter()
        .map(|t| match t {
            Tt::Group(g) => {
                let mut n = Group::new(g.delimiter(), respan(g.stream(), span));
                n.set_span(span);
                Tt::Group(n)
            }
            mut t => {
                t.set_span(span);
                t
            }
        })
        .collect()
}

fn compile_error(span: Span, message: &str) -> TokenStream {
    let lit = proc_macro::Literal::string(message);
    let mut s = ts("::core::compile_error!");
    s.extend([Tt::Group(Group::new(Delimiter::Parenthesis, Tt::Literal(lit).into()))]);
    s.extend([Tt::Punct(Punct::new(';', Spacing::Alone))]);
    respan(s, span)
}

/// Split `tokens` at commas outside `<...>` (a parameter list: `Shared<f32, BLOCK>`).
fn split_commas(tokens: &[Tt]) -> Vec<Vec<Tt>> {
    let (mut parts, mut cur, mut depth) = (Vec::new(), Vec::new(), 0i32);
    for (k, t) in tokens.iter().enumerate() {
        match t {
            Tt::Punct(p) if p.as_char() == '<' => depth += 1,
            Tt::Punct(p) if p.as_char() == '>' && !(k > 0 && is_punct(&tokens[k - 1], '-')) => depth -= 1,
            Tt::Punct(p) if p.as_char() == ',' && depth == 0 => {
                parts.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(t.clone());
    }
    if !cur.is_empty() {
        parts.push(cur);
    }
    parts
}

/// Every identifier in `tokens`, nested groups included.
fn idents(tokens: &[Tt], into: &mut BTreeSet<String>) {
    for t in tokens {
        match t {
            Tt::Ident(i) => {
                into.insert(i.to_string());
            }
            Tt::Group(g) => idents(&g.stream().into_iter().collect::<Vec<_>>(), into),
            Tt::Literal(l) => format_names(&l.to_string(), into),
            _ => {}
        }
    }
}

/// The names a string literal's format arguments capture (`"{total}"`, `"{x:>4}"`): a format
/// macro reads those locals as the code around it does.
fn format_names(literal: &str, into: &mut BTreeSet<String>) {
    if !(literal.starts_with('"') || literal.starts_with('r')) {
        return;
    }
    let b = literal.as_bytes();
    let mut k = 0;
    while k < b.len() {
        if b[k] == b'{' {
            if b.get(k + 1) == Some(&b'{') {
                k += 2;
                continue;
            }
            let start = k + 1;
            let mut end = start;
            while end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                end += 1;
            }
            let first_ok = b.get(start).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_');
            if first_ok && matches!(b.get(end), Some(b'}' | b':')) {
                into.insert(literal[start..end].to_string());
            }
            k = end;
            continue;
        }
        k += 1;
    }
}

// ---------------------------------------------------------------------------- the function

struct Param {
    tokens: Vec<Tt>,
}

fn transform(item: TokenStream) -> Result<TokenStream> {
    let toks: Vec<Tt> = item.into_iter().collect();
    let Some(fn_at) = toks.iter().position(|t| is_ident(t, "fn")) else {
        return fail(Span::call_site(), "goes on a kernel body function");
    };
    // Visibility and qualifiers before `fn`, attributes (`#[...]`) dropped: the copy has its own.
    let mut head = Vec::new();
    let mut k = 0;
    while k < fn_at {
        if is_punct(&toks[k], '#') {
            k += 2;
            continue;
        }
        if is_ident(&toks[k], "async") || is_ident(&toks[k], "const") {
            return fail(toks[k].span(), "a kernel body is a plain function");
        }
        head.push(toks[k].clone());
        k += 1;
    }
    let Some(Tt::Ident(name)) = toks.get(fn_at + 1) else {
        return fail(toks[fn_at].span(), "expected the function's name");
    };
    let mut k = fn_at + 2;
    let mut generics = Vec::new();
    if toks.get(k).is_some_and(|t| is_punct(t, '<')) {
        let mut depth = 0;
        loop {
            let Some(t) = toks.get(k) else {
                return fail(name.span(), "unbalanced generics");
            };
            if is_punct(t, '<') {
                depth += 1;
            } else if is_punct(t, '>') && !is_punct(&toks[k - 1], '-') {
                depth -= 1;
            }
            generics.push(t.clone());
            k += 1;
            if depth == 0 {
                break;
            }
        }
    }
    let Some(Tt::Group(params)) = toks.get(k) else {
        return fail(name.span(), "expected the parameter list");
    };
    let params_group = params.clone();
    k += 1;
    let Some(Tt::Group(body)) = toks.last() else {
        return fail(name.span(), "expected the function's body");
    };
    let between = &toks[k..toks.len() - 1];
    if let Some(p) = between.iter().position(|t| is_punct(t, '-')) {
        if between.get(p + 1).is_some_and(|t| is_punct(t, '>')) {
            return fail(between[p].span(), "a kernel body returns nothing");
        }
    }
    let where_clause = between.to_vec();

    // The parameters: the first `Ctx` one is the invocation's; the others are the same for
    // every invocation and stay parameters of the copy.
    let all: Vec<Tt> = params_group.stream().into_iter().collect();
    let mut ctx_name = None;
    let mut params = Vec::new();
    for p in split_commas(&all) {
        let Some(colon) = p.iter().position(|t| is_punct(t, ':')) else {
            return fail(params_group.span(), "expected `name: Type` parameters");
        };
        let is_ctx = matches!(p.get(colon + 1), Some(Tt::Ident(i)) if i.to_string() == "Ctx")
            || p[colon + 1..].windows(2).any(|w| is_punct(&w[0], ':') && is_ident(&w[1], "Ctx"));
        if is_ctx && ctx_name.is_none() {
            let Some(Tt::Ident(i)) = p[..colon].last() else {
                return fail(p[0].span(), "the `Ctx` parameter is a plain name");
            };
            ctx_name = Some(i.clone());
        } else {
            params.push(Param { tokens: p });
        }
    }
    let Some(ctx) = ctx_name else {
        return fail(params_group.span(), "the body takes no `Ctx` parameter");
    };

    // A `mut` parameter that is not a memory handle (whose changes go to memory every invocation
    // sees) is each invocation's own copy on fibers: the entry passes it to every call. Here it
    // is bound per lane, as `let mut name = name;` first in the body, so a change one invocation
    // makes (through a method, a field, an index, `&mut`) stays its own.
    let mut body_tokens: Vec<Tt> = Vec::new();
    for p in &mut params {
        let colon = p.tokens.iter().position(|t| is_punct(t, ':')).expect("split at a colon above");
        let mut names = BTreeSet::new();
        idents(&p.tokens[..colon], &mut names);
        if !names.contains("mut") || is_handle(&p.tokens[colon + 1..]) {
            continue;
        }
        let Some(Tt::Ident(i)) = p.tokens.get(1).filter(|_| colon == 2 && is_ident(&p.tokens[0], "mut")) else {
            return fail(
                p.tokens[0].span(),
                "a `mut` inside a parameter's pattern is not supported: take the parameter by name and bind its parts in the body",
            );
        };
        body_tokens.extend(respan(ts(&format!("let mut {i} = {i};")), i.span()));
        p.tokens.remove(0);
    }
    // The body's inner attributes (`#![allow(..)]`) go on the copy: inside it they would land in
    // the first loop over the lanes, where Rust takes none.
    let mut inner_attrs = TokenStream::new();
    let mut rest: Vec<Tt> = body.stream().into_iter().collect();
    while rest.len() >= 3 && is_punct(&rest[0], '#') && is_punct(&rest[1], '!') {
        inner_attrs.extend([rest[0].clone(), rest[2].clone()]);
        rest.drain(..3);
    }
    body_tokens.extend(rest);
    // A memory handle is one value for the whole workgroup here: one invocation assigning it
    // would change it for the others. (Only a `mut` one can be: others are not `mut`, or bound
    // per lane above; a local of its name in an inner block is not refused for them.)
    for p in params.iter().filter(|p| is_ident(&p.tokens[0], "mut")) {
        if let Some(Tt::Ident(i)) = p.tokens.iter().take_while(|t| !is_punct(t, ':')).last() {
            // Up to the body's own `let` of that name, if it has one (then it is a local).
            let name = i.to_string();
            let upto = body_tokens
                .windows(3)
                .position(|w| is_ident(&w[0], "let") && (is_ident(&w[1], &name) || (is_ident(&w[1], "mut") && is_ident(&w[2], &name))))
                .unwrap_or(body_tokens.len());
            if let Some(at) = assigned(&body_tokens[..upto], &name) {
                return fail(at, &format!("the parameter `{i}` is assigned in the body; bind it first (`let mut {i} = {i};`)"));
            }
        }
    }
    // The parameters that are plain values of a primitive type: the same for every invocation,
    // so uniform (`Lower::uniform_expr`). Any other parameter (a memory handle, whose reads may
    // differ per lane, or a type that could hide interior mutability) is not.
    let mut param_names = BTreeSet::new();
    let mut uniform_params = BTreeSet::new();
    let mut element_handles = BTreeSet::new();
    for p in &params {
        let colon = p.tokens.iter().position(|t| is_punct(t, ':')).expect("split at a colon above");
        let name = match &p.tokens[..colon] {
            [Tt::Ident(i)] => i.to_string(),
            [m, Tt::Ident(i)] if is_ident(m, "mut") => i.to_string(),
            _ => continue,
        };
        if matches!(&p.tokens[colon + 1..], [Tt::Ident(ty)] if PRIMITIVES.contains(&ty.to_string().as_str())) {
            uniform_params.insert(name.clone());
        }
        if is_handle(&p.tokens[colon + 1..]) && only_accessed(&body_tokens, &name) {
            element_handles.insert(name.clone());
        }
        param_names.insert(name);
    }
    let body_items = body_items(&body_tokens);
    // A body item named as a handle type is that item, not the handle (`known_copy`).
    if ["In", "Out", "Shared"].iter().any(|t| body_items.contains(*t)) {
        element_handles.clear();
    }
    let base = Lower {
        ctx: ctx.to_string(),
        next_id: 0,
        returns: has_return(&body_tokens),
        param_names,
        uniform_params,
        mut_uniform: mut_candidates(&body_tokens),
        dropped: false,
        body_items,
        element_handles,
        shuffle_deltas: BTreeMap::new(),
        uniform_shuffles: BTreeSet::new(),
    };
    base.check_ctx_uses(&body_tokens)?;
    // Which `mut` locals are uniform depends on every assignment to them, in any order (a loop's
    // last statement changes what its first reads): lowered with every candidate assumed
    // uniform, then again without those a pass found assigned something per lane, until a pass
    // drops none (the candidates only shrink). That pass's copy is the one kept.
    let mut candidates = base.mut_uniform.clone();
    let lowered = loop {
        let mut lower = Lower { mut_uniform: candidates.clone(), ..base.clone() };
        let mut scopes: Vec<Vec<Var>> = vec![Vec::new()];
        let lowered = lower.block(&body_tokens, &mut scopes)?;
        if !lower.dropped {
            break lowered;
        }
        candidates = lower.mut_uniform;
    };

    let mut out = ts(
        "#[cfg(not(any(target_arch = \"nvptx64\", target_arch = \"spirv\")))] \
         #[allow(unused_mut, unused_variables, unused_assignments, unused_labels, unreachable_code, \
                 unused_parens, non_snake_case, clippy::all, clippy::pedantic, clippy::nursery, clippy::restriction)] \
         #[doc(hidden)] \
         #[inline(always)]",
    );
    out.extend(inner_attrs);
    out.extend(stream(&head));
    out.extend(ts("fn"));
    out.extend([Tt::Ident(Ident::new(&format!("{name}_lanes"), name.span()))]);
    out.extend(stream(&generics));
    let mut sig = ts("__wg: &::gpu_kernel::host::Lanes<'_>");
    for p in &params {
        sig.extend(ts(","));
        sig.extend(stream(&p.tokens));
    }
    out.extend([Tt::Group(Group::new(Delimiter::Parenthesis, sig))]);
    out.extend(stream(&where_clause));
    // A `return` the copy could not see (in a macro's expansion) would return from it for every
    // lane after that one: the executor stops the run when the copy did not reach `end`.
    let mut copy = respan(ts("__wg.begin();"), name.span());
    copy.extend([Tt::Group(Group::new(Delimiter::Brace, lowered))]);
    copy.extend(ts("__wg.end();"));
    out.extend([Tt::Group(Group::new(Delimiter::Brace, copy))]);
    Ok(out)
}

/// Whether a `|` after `before` opens a closure's parameters (not an `or` of an operand).
fn closure_starts(before: &[Tt]) -> bool {
    match before.last() {
        None => true,
        Some(Tt::Ident(i)) => matches!(i.to_string().as_str(), "move" | "return" | "break" | "in" | "else"),
        Some(Tt::Punct(p)) => p.as_char() != '?',
        Some(Tt::Group(_) | Tt::Literal(_)) => false,
    }
}

/// Whether a parameter's type is one of the memory handles (`In`, `Out`, `Shared`, by the last
/// name of its path): one value for the workgroup, its element writes shared as on a GPU.
fn is_handle(ty: &[Tt]) -> bool {
    let end = ty.iter().position(|t| is_punct(t, '<')).unwrap_or(ty.len());
    matches!(ty[..end].last(), Some(Tt::Ident(i)) if matches!(i.to_string().as_str(), "In" | "Out" | "Shared"))
}

/// Whether `tokens` hold a `return` (the lanes then keep track of which have returned).
fn has_return(tokens: &[Tt]) -> bool {
    tokens.iter().any(|t| match t {
        Tt::Ident(i) => i.to_string() == "return",
        Tt::Group(g) => has_return(&g.stream().into_iter().collect::<Vec<_>>()),
        _ => false,
    })
}

// ---------------------------------------------------------------------------- statements

/// A local that lives across a barrier: its name, whether it is `mut`, and its lane storage.
#[derive(Clone)]
struct Var {
    name: String,
    mutable: bool,
    /// The same value in every lane: kept once (`__uni_ID`, a `host::Uniform`), not per lane.
    uniform: bool,
    id: usize,
    /// The name in its `let`: the lane storage's code has it, so that rustc's errors about the
    /// local (`Carried`: not `Copy`) point at it.
    span: Span,
    /// Lane-pure: computed again from the lane's ids in each loop that reads it (this closed
    /// form, `__rt_ID` its type), not kept (see `Lower::closed_form`).
    remat: Option<TokenStream>,
}

#[derive(Clone)]
struct Lower {
    ctx: String,
    next_id: usize,
    returns: bool,
    /// The body's parameters other than `ctx`, and those of a primitive type (uniform).
    param_names: BTreeSet<String>,
    uniform_params: BTreeSet<String>,
    /// Names of `mut` locals that may be uniform: every assignment to a local of that name seen
    /// so far is a uniform one (see `transform`, and the module doc).
    mut_uniform: BTreeSet<String>,
    /// This pass dropped a name from `mut_uniform`: its uniformity decisions assumed too much.
    dropped: bool,
    /// Every name an item or `use` of the body declares (`body_items`): a lane-pure local naming
    /// one is not computed again elsewhere, where another block's item of that name may be seen.
    body_items: BTreeSet<String>,
    /// The memory handle parameters (`In`, `Out`, `Shared`) the body only reads and writes
    /// through (`only_accessed`): `h.get(i)` and `h[i]` are their elements, `Copy` values
    /// (`known_copy`).
    element_handles: BTreeSet<String>,
    /// Each subgroup shuffle's `delta` as written, by its stash's id (`split_shuffle`), and the
    /// ids of those whose `delta` was uniform where its run put it (`segment`): their put and
    /// take are `put_uniform` / `get_uniform`.
    shuffle_deltas: BTreeMap<usize, Vec<Tt>>,
    uniform_shuffles: BTreeSet<usize>,
}

enum Stmt {
    /// Statements with no barrier in them.
    Plain(Vec<Tt>),
    /// `ctx.barrier();`: the span of `barrier`; or a shuffle's barrier, with its stash's id (a
    /// uniform one's stash is settled after it: `host::Stash::settle`).
    Barrier(Span, Option<usize>),
    /// `while cond { .. }` with a barrier in its block.
    While { cond: Vec<Tt>, body: Group, at: Span },
    /// `if cond { .. } else ..` with a barrier in a branch.
    If { cond: Vec<Tt>, then: Group, els: Option<Vec<Tt>>, at: Span },
}

/// The block's statements, each its tokens (a `;` ends one; so does the block of an `if`,
/// `while`, `for`, `loop`, `match` or `unsafe` that begins one, unless an operator follows, and
/// that of an item or of a macro called with braces; attributes go with the statement after).
fn split_statements(tokens: &[Tt]) -> Vec<Vec<Tt>> {
    let mut out = Vec::new();
    let mut k = 0;
    while k < tokens.len() {
        let start = k;
        k = attributes_end(tokens, k);
        if k >= tokens.len() {
            out.push(tokens[start..].to_vec());
            break;
        }
        if let Some(kind) = item_kind(&tokens[k..]) {
            // An item (`fn f() { .. }`, `struct S;`) or a macro called with braces (`m! { .. }`):
            // where a block ends it, no `;` follows (read to the next `;`, it took the statement
            // after it along, `let` and all).
            while k < tokens.len() && !(kind.ends_at_block && is_brace(&tokens[k])) && !is_punct(&tokens[k], ';') {
                k += 1;
            }
            let end = (k + 1).min(tokens.len());
            out.push(tokens[start..end].to_vec());
            k = end;
            continue;
        }
        let block_like = match &tokens[k] {
            Tt::Ident(i) => matches!(i.to_string().as_str(), "if" | "while" | "for" | "loop" | "match" | "unsafe"),
            Tt::Punct(p) => p.as_char() == '\'', // a label: 'a: loop { .. }
            Tt::Group(g) => g.delimiter() == Delimiter::Brace,
            _ => false,
        };
        if block_like {
            // To the first block; an `if` goes on through its `else if` / `else` blocks.
            let is_if = is_ident(&tokens[k], "if");
            while k < tokens.len() && !is_brace(&tokens[k]) {
                k += 1;
            }
            k += 1;
            while is_if && tokens.get(k).is_some_and(|t| is_ident(t, "else")) {
                k += 1;
                while k < tokens.len() && !is_brace(&tokens[k]) {
                    k += 1;
                }
                k += 1;
            }
            let k_end = k.min(tokens.len());
            match tokens.get(k_end) {
                None => {
                    out.push(tokens[start..k_end].to_vec());
                    k = k_end;
                    continue;
                }
                Some(t) if is_punct(t, ';') => {
                    out.push(tokens[start..=k_end].to_vec());
                    k = k_end + 1;
                    continue;
                }
                Some(Tt::Punct(p)) if p.as_char() != '.' && p.as_char() != '?' => {
                    out.push(tokens[start..k_end].to_vec());
                    k = k_end;
                    continue;
                }
                Some(Tt::Ident(i)) if i.to_string() != "as" => {
                    out.push(tokens[start..k_end].to_vec());
                    k = k_end;
                    continue;
                }
                Some(Tt::Group(_)) | Some(Tt::Literal(_)) => {
                    out.push(tokens[start..k_end].to_vec());
                    k = k_end;
                    continue;
                }
                _ => {} // `.method()` or `?` or `as`: an expression statement, to its `;`
            }
        }
        while k < tokens.len() && !is_punct(&tokens[k], ';') {
            k += 1;
        }
        let end = (k + 1).min(tokens.len());
        out.push(tokens[start..end].to_vec());
        k = end;
    }
    out
}

/// Whether a statement needs a `;` to have another after it: it has none, and is not one that
/// ends with its block (`if .. { .. }`, `loop { .. }`, `{ .. }`, an item, `m! { .. }`).
fn needs_semicolon(stmt: &[Tt]) -> bool {
    let s = &stmt[attributes_end(stmt, 0).min(stmt.len())..];
    let Some(last) = s.last() else { return false };
    if is_punct(last, ';') {
        return false;
    }
    let block_like = match &s[0] {
        Tt::Ident(i) => matches!(i.to_string().as_str(), "if" | "while" | "for" | "loop" | "match" | "unsafe"),
        Tt::Punct(p) => p.as_char() == '\'',
        Tt::Group(g) => g.delimiter() == Delimiter::Brace,
        Tt::Literal(_) => false,
    };
    !(is_brace(last) && (block_like || item_kind(s).is_some()))
}

/// Past the outer attributes (`#[..]`) and inner ones (`#![..]`) at `k`.
fn attributes_end(tokens: &[Tt], mut k: usize) -> usize {
    while tokens.get(k).is_some_and(|t| is_punct(t, '#')) {
        k += if tokens.get(k + 1).is_some_and(|t| is_punct(t, '!')) { 3 } else { 2 };
    }
    k
}

/// How a statement that begins with an item or a macro called with braces ends, and whether it
/// is an item (`None`: it is neither). `ends_at_block`: at its block or its `;`, whichever comes
/// first (`fn f() { .. }`, `struct S;`, `m! { .. }`); else at its `;` (`const X: T = { .. };`,
/// `use a::{b, c};`).
struct ItemKind {
    ends_at_block: bool,
    item: bool,
}

fn item_kind(tokens: &[Tt]) -> Option<ItemKind> {
    let word = |k: usize| match tokens.get(k) {
        Some(Tt::Ident(i)) => i.to_string(),
        _ => String::new(),
    };
    let item = |ends_at_block| Some(ItemKind { ends_at_block, item: true });
    let mut k = 0;
    if word(0) == "pub" {
        k = 1;
        if matches!(tokens.get(1), Some(Tt::Group(g)) if g.delimiter() == Delimiter::Parenthesis) {
            k = 2;
        }
    }
    // A function's qualifiers (`const unsafe fn`, `extern "C" fn`), or an `extern "C" { .. }`.
    loop {
        match word(k).as_str() {
            "const" | "async" | "unsafe" if matches!(word(k + 1).as_str(), "fn" | "unsafe" | "async" | "extern" | "impl" | "trait") => k += 1,
            "extern" if matches!(tokens.get(k + 1), Some(Tt::Literal(_))) => {
                if tokens.get(k + 2).is_some_and(is_brace) {
                    return item(true);
                }
                k += 2;
            }
            _ => break,
        }
    }
    match word(k).as_str() {
        "fn" | "struct" | "enum" | "impl" | "trait" | "mod" | "extern" => return item(true),
        "union" if matches!(tokens.get(k + 1), Some(Tt::Ident(_))) => return item(true),
        "use" | "static" | "type" => return item(false),
        "const" if matches!(tokens.get(k + 1), Some(Tt::Ident(_))) => return item(false),
        // Not an item to move: a `macro_rules!` sees the locals before it, and only the code after.
        "macro_rules" if k == 0 && tokens.get(1).is_some_and(|t| is_punct(t, '!')) => {
            return Some(ItemKind { ends_at_block: true, item: false });
        }
        "" => return None,
        _ if k > 0 => return None,
        _ => {}
    }
    // A path, `!`, a block.
    let mut k = 1;
    while tokens.get(k).is_some_and(|t| is_punct(t, ':')) && tokens.get(k + 1).is_some_and(|t| is_punct(t, ':')) {
        k += 3;
    }
    if tokens.get(k).is_some_and(|t| is_punct(t, '!')) && tokens.get(k + 1).is_some_and(is_brace) {
        return Some(ItemKind { ends_at_block: true, item: false });
    }
    None
}

impl Lower {
    /// Whether `tokens` hold a barrier, or a subgroup shuffle (a barrier among the lanes too: see
    /// `split_shuffle`).
    fn contains_barrier(&self, tokens: &[Tt]) -> bool {
        tokens.windows(3).any(|w| is_ident(&w[0], &self.ctx) && is_punct(&w[1], '.') && (is_ident(&w[2], "barrier") || is_ident(&w[2], SHUFFLE)))
            || tokens.iter().any(|t| match t {
                Tt::Group(g) => self.contains_barrier(&g.stream().into_iter().collect::<Vec<_>>()),
                _ => false,
            })
    }

    /// `ctx` only as `ctx.method(..)`, and no method the lanes cannot run.
    fn check_ctx_uses(&self, tokens: &[Tt]) -> Result<()> {
        for (k, t) in tokens.iter().enumerate() {
            if let Tt::Group(g) = t {
                self.check_ctx_uses(&g.stream().into_iter().collect::<Vec<_>>())?;
            }
            if !is_ident(t, &self.ctx) || (k > 0 && is_punct(&tokens[k - 1], '.')) {
                continue;
            }
            if !tokens.get(k + 1).is_some_and(|t| is_punct(t, '.')) {
                return fail(
                    t.span(),
                    "the invocation's `ctx` is passed on here: a barrier in another function is invisible to \
                     #[lanes] (call ctx's methods in the body itself, or remove #[lanes] to run on fibers)",
                );
            }
            if let Some(Tt::Ident(m)) = tokens.get(k + 2) {
                let m = m.to_string();
                if m.starts_with("subgroup_") && !SUBGROUP_METHODS.contains(&m.as_str()) {
                    return fail(
                        tokens[k + 2].span(),
                        &format!(
                            "the subgroup operation `{m}` is not supported (only {}; remove #[lanes] to run on fibers)",
                            SUBGROUP_METHODS.join(", ")
                        ),
                    );
                }
                if m == "shared" {
                    return fail(tokens[k + 2].span(), "shared arrays are parameters of the body, not `ctx.shared()`");
                }
            }
        }
        Ok(())
    }

    fn classify(&self, stmt: Vec<Tt>) -> Result<Stmt> {
        if !self.contains_barrier(&stmt) {
            return Ok(Stmt::Plain(stmt));
        }
        let core: &[Tt] = if stmt.last().is_some_and(|t| is_punct(t, ';')) { &stmt[..stmt.len() - 1] } else { &stmt };
        if core.len() == 4
            && is_ident(&core[0], &self.ctx)
            && is_punct(&core[1], '.')
            && is_ident(&core[2], "barrier")
            && matches!(&core[3], Tt::Group(g) if g.delimiter() == Delimiter::Parenthesis && g.stream().is_empty())
        {
            return Ok(Stmt::Barrier(core[2].span(), None));
        }
        let first = core[0].clone();
        let block_at = core.iter().position(is_brace);
        if is_ident(&first, "while") || is_ident(&first, "if") {
            // `while let` / `if let` (or a `let` chain): every lane gives a bool, not a binding.
            if let Some(l) = core[1..block_at.unwrap_or(core.len())].iter().find(|t| is_ident(t, "let")) {
                return fail(
                    l.span(),
                    "a `let` in the condition of a `while` or `if` with a barrier is not supported: \
                     compute a bool before it (or remove #[lanes] to run on fibers)",
                );
            }
        }
        if is_ident(&first, "while") {
            if let Some(b) = block_at {
                if b == core.len() - 1 {
                    let Tt::Group(body) = &core[b] else { unreachable!() };
                    return Ok(Stmt::While { cond: core[1..b].to_vec(), body: body.clone(), at: first.span() });
                }
            }
        }
        if is_ident(&first, "if") {
            if let Some(b) = block_at {
                let Tt::Group(then) = &core[b] else { unreachable!() };
                let rest = &core[b + 1..];
                let els = if rest.is_empty() {
                    Some(None)
                } else if is_ident(&rest[0], "else") && rest.len() == 2 && is_brace(&rest[1]) {
                    let Tt::Group(g) = &rest[1] else { unreachable!() };
                    Some(Some(g.stream().into_iter().collect()))
                } else if is_ident(&rest[0], "else") && rest.len() > 1 && is_ident(&rest[1], "if") {
                    Some(Some(rest[1..].to_vec()))
                } else {
                    None
                };
                if let Some(els) = els {
                    return Ok(Stmt::If { cond: core[1..b].to_vec(), then: then.clone(), els, at: first.span() });
                }
            }
        }
        fail(
            first.span(),
            "a barrier here is not supported: barriers go in the body, or in the block of a `while` or `if` \
             (not `for`, `loop`, `match`, a closure, or an expression); remove #[lanes] to run on fibers",
        )
    }

    /// A block with barriers, lowered: its barrier-free runs of statements each one loop over
    /// the lanes, its barriers and the loops and branches around them once per workgroup.
    fn block(&mut self, tokens: &[Tt], scopes: &mut Vec<Vec<Var>>) -> Result<TokenStream> {
        // The block's items first, as written: Rust's items are visible in the whole block, and
        // where they stand the copy has a loop over the lanes, whose body would hide them from
        // the next one (a `const` of the body's would be the module's of that name there).
        let mut out = TokenStream::new();
        let mut stmts = Vec::new();
        for s in split_statements(tokens) {
            if item_kind(&s[attributes_end(&s, 0).min(s.len())..]).is_some_and(|k| k.item) {
                self.scan(&s, false);
                out.extend(stream(&s));
            } else {
                match self.split_shuffle(&s, &mut out)? {
                    Some(split) => stmts.extend(split),
                    None => stmts.push(self.classify(s)?),
                }
            }
        }
        // The names each statement and those after it mention (what a run of statements must
        // keep for the rest of the block: its locals are gone after the block).
        let mut later: Vec<BTreeSet<String>> = vec![BTreeSet::new(); stmts.len() + 1];
        for i in (0..stmts.len()).rev() {
            let mut names = later[i + 1].clone();
            stmt_idents(&stmts[i], &mut names);
            later[i] = names;
        }
        let mut i = 0;
        while i < stmts.len() {
            match &stmts[i] {
                Stmt::Plain(_) => {
                    let mut run = Vec::new();
                    let mut lowered = None;
                    while let Some(Stmt::Plain(s)) = stmts.get(i) {
                        if let Some(parts) = self.uniform_while(s, &run, scopes, &later[i]) {
                            lowered = Some(parts);
                            break;
                        }
                        run.push(s.clone());
                        i += 1;
                    }
                    if !run.is_empty() {
                        out.extend(self.segment(&run, scopes, &later[i])?);
                    }
                    if let Some((cond, body, at)) = lowered {
                        out.extend(self.lower_uniform_while(&cond, &body, at, scopes)?);
                        i += 1;
                    }
                }
                Stmt::Barrier(at, stash) => {
                    out.extend(respan(ts("__wg.barrier();"), *at));
                    if let Some(id) = stash.filter(|id| self.uniform_shuffles.contains(id)) {
                        out.extend(respan(ts(&format!("unsafe {{ __stash_{id}.settle() }};")), *at));
                    }
                    i += 1;
                }
                Stmt::While { cond, body, at } => {
                    let barrier = self.first_barrier(&body.stream().into_iter().collect::<Vec<_>>()).unwrap_or(*at);
                    let vote = self.vote(cond, scopes, *at, barrier)?;
                    scopes.push(Vec::new());
                    let inner = self.block(&body.stream().into_iter().collect::<Vec<_>>(), scopes)?;
                    scopes.pop();
                    let mut l = ts("loop");
                    let mut b = vote;
                    b.extend(ts("if !__go { break; }"));
                    b.extend([Tt::Group(Group::new(Delimiter::Brace, inner))]);
                    l.extend([Tt::Group(Group::new(Delimiter::Brace, b))]);
                    out.extend(l);
                    i += 1;
                }
                Stmt::If { cond, then, els, at } => {
                    let then_tokens: Vec<Tt> = then.stream().into_iter().collect();
                    let barrier = self
                        .first_barrier(&then_tokens)
                        .or_else(|| els.as_ref().and_then(|e| self.first_barrier(e)))
                        .unwrap_or(*at);
                    let mut b = self.vote(cond, scopes, *at, barrier)?;
                    scopes.push(Vec::new());
                    let t = self.block(&then_tokens, scopes)?;
                    scopes.pop();
                    b.extend(ts("if __go"));
                    b.extend([Tt::Group(Group::new(Delimiter::Brace, t))]);
                    if let Some(e) = els {
                        scopes.push(Vec::new());
                        let e = self.block(e, scopes)?;
                        scopes.pop();
                        b.extend(ts("else"));
                        b.extend([Tt::Group(Group::new(Delimiter::Brace, e))]);
                    }
                    out.extend([Tt::Group(Group::new(Delimiter::Brace, b))]);
                    i += 1;
                }
            }
        }
        Ok(out)
    }

    /// The span of the first `barrier` (or shuffle: its barrier) in `tokens` (where a divergence
    /// around it is reported).
    fn first_barrier(&self, tokens: &[Tt]) -> Option<Span> {
        for (k, t) in tokens.iter().enumerate() {
            if is_ident(t, &self.ctx)
                && tokens.get(k + 1).is_some_and(|t| is_punct(t, '.'))
                && tokens.get(k + 2).is_some_and(|t| is_ident(t, "barrier") || is_ident(t, SHUFFLE))
            {
                return Some(tokens[k + 2].span());
            }
            if let Tt::Group(g) = t {
                if let Some(s) = self.first_barrier(&g.stream().into_iter().collect::<Vec<_>>()) {
                    return Some(s);
                }
            }
        }
        None
    }

    /// The loop over the lanes, `body` inside it, with the locals that `uses` names taken from
    /// their lanes first, and `store` (with the `mut` ones taken) put back after; with `below`
    /// (`lane_bound`), only over the lanes whose x is below that value.
    fn lane_loop(
        &self,
        uses: &BTreeSet<String>,
        scopes: &[Vec<Var>],
        body: TokenStream,
        store: &[Var],
        shadowed: &BTreeSet<String>,
        below: Option<TokenStream>,
    ) -> TokenStream {
        let mut before = TokenStream::new();
        let bounded = below.is_some();
        let x_end = match below {
            Some(bound) => {
                before.extend(ts("let __below: usize ="));
                before.extend(bound);
                before.extend(ts(";"));
                "__wg.x_below(__below)"
            }
            None => "__wg.size()[0]",
        };
        let mut inner = TokenStream::new();
        if self.returns {
            inner.extend(ts("if __wg.retired(__lane) { continue '__lanes; }"));
        }
        inner.extend(ts(&format!("let {} = __wg.ctx(__lane, __local);", self.ctx)));
        let (remat, taken): (Vec<Var>, Vec<Var>) = visible(scopes, uses).into_iter().partition(|v| v.remat.is_some());
        inner.extend(remat_lets(&remat, &loop_idents(&body.clone().into_iter().collect::<Vec<_>>())));
        let put_back = |v: &Var| v.mutable && !shadowed.contains(&v.name);
        for v in &taken {
            let m = if v.mutable { "mut " } else { "" };
            let get = if !v.uniform {
                format!("__lane_{}.get(__lane)", v.id)
            } else if put_back(v) {
                // Each lane starts from the value before the loop (the first lane's put back
                // must not be the next lane's start: `offset *= 2` once per lane, not 2^lanes).
                before.extend(respan(ts(&format!("let __uin_{0} = __uni_{0};", v.id)), v.span));
                format!("__uin_{}.get()", v.id)
            } else {
                format!("__uni_{}.get()", v.id)
            };
            inner.extend(respan(ts(&format!("let {m}{} = unsafe {{ {get} }};", v.name)), v.span));
        }
        inner.extend(body);
        for v in taken.iter().filter(|v| put_back(v)).chain(store.iter()) {
            // A uniform one: every lane sets the same value; a lane-pure one is not kept, only
            // its type (what the loops that compute it again infer theirs from).
            let set = if v.remat.is_some() {
                format!("__rt_{}.bind(&{});", v.id, v.name)
            } else if v.uniform {
                format!("__uni_{}.set({});", v.id, v.name)
            } else {
                format!("unsafe {{ __lane_{}.set(__lane, {}) }};", v.id, v.name)
            };
            inner.extend(respan(ts(&set), v.span));
        }
        let mut head = ts("let __lane = __row + __x as usize; let __local = [__x, __y, __z];");
        head.extend(inner);
        let mut x = ts(&format!("'__lanes: for __x in 0..{x_end}"));
        x.extend([Tt::Group(Group::new(Delimiter::Brace, head))]);
        let mut y = ts("let __row = __wg.row(__y, __z);");
        y.extend(x);
        // After the loop over x: its end marked unlikely (`Lanes::row_end`), so that the cpu
        // build's range check elimination splits it. Not a loop to a bound (`lane_bound`): a
        // reduction's tree steps run 128, 64, .., 1 lanes, and with theirs split too reduction's
        // CPU time a launch was often 8.5 ms, not 6.6-7.5 (processes of four alternations with
        // d29c9c5, load 1-7); without, 6.6-8.0 against d29c9c5's 6.7-8.7.
        if !bounded {
            y.extend(ts("__wg.row_end();"));
        }
        let mut yl = ts("for __y in 0..__wg.size()[1]");
        yl.extend([Tt::Group(Group::new(Delimiter::Brace, y))]);
        let mut l = ts("for __z in 0..__wg.size()[2]");
        l.extend([Tt::Group(Group::new(Delimiter::Brace, yl))]);
        before.extend(l);
        before
    }

    /// A run whose every statement is uniform, once for the workgroup (while some lane has not
    /// returned: else nothing it reads was set): its uniform locals taken, `store` and the `mut`
    /// ones taken put back.
    fn once(&self, uses: &BTreeSet<String>, scopes: &[Vec<Var>], body: TokenStream, store: &[Var], shadowed: &BTreeSet<String>) -> TokenStream {
        let mut inner = ts(&format!("let {} = __wg.uniform_ctx();", self.ctx));
        // Only uniform locals can be named (a name of a per-lane one here is a field's or a
        // method's: `uniform_expr` refused every other use).
        let taken: Vec<Var> = visible(scopes, uses).into_iter().filter(|v| v.uniform).collect();
        for v in &taken {
            let m = if v.mutable { "mut " } else { "" };
            inner.extend(respan(ts(&format!("let {m}{} = unsafe {{ __uni_{}.get() }};", v.name, v.id)), v.span));
        }
        inner.extend(body);
        for v in taken.iter().filter(|v| v.mutable && !shadowed.contains(&v.name)).chain(store.iter()) {
            inner.extend(respan(ts(&format!("__uni_{}.set({});", v.id, v.name)), v.span));
        }
        let mut out = ts("if __wg.live()");
        out.extend([Tt::Group(Group::new(Delimiter::Brace, inner))]);
        out
    }

    /// The binding `name` has at this point of a run: `Some(uniform)` for a local (bound earlier
    /// in the run: `env`; or kept) or a parameter, `None` for anything else (an item: a `const`,
    /// a `static`, a function, a type).
    fn resolve(&self, name: &str, env: &BTreeMap<String, bool>, scopes: &[Vec<Var>]) -> Option<bool> {
        if let Some(u) = env.get(name) {
            return Some(*u);
        }
        for scope in scopes.iter().rev() {
            if let Some(v) = scope.iter().rev().find(|v| v.name == name) {
                return Some(v.uniform);
            }
        }
        if self.param_names.contains(name) {
            return Some(self.uniform_params.contains(name));
        }
        None
    }

    /// Whether the expression `tokens` has the same value in every lane, and evaluating it has
    /// no effect but its value: it names only uniform locals and parameters, items, literals
    /// and `ctx`'s per-workgroup values, calls no function, closure or macro (and of methods
    /// only the pure numeric ones of `PURE_METHODS`), and assigns nothing. No memory read: an
    /// element another lane writes before the next barrier differs per lane.
    fn uniform_expr(&self, tokens: &[Tt], env: &BTreeMap<String, bool>, scopes: &[Vec<Var>]) -> bool {
        let mut k = 0;
        while k < tokens.len() {
            match &tokens[k] {
                Tt::Ident(i) => {
                    let name = i.to_string();
                    let next = tokens.get(k + 1);
                    let call = matches!(next, Some(Tt::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                    if k >= 1 && is_punct(&tokens[k - 1], '.') && !(k >= 2 && is_punct(&tokens[k - 2], '.')) {
                        // A field (of a uniform value: uniform), or a method.
                        if (call || next.is_some_and(|t| is_punct(t, ':'))) && !PURE_METHODS.contains(&name.as_str()) {
                            return false;
                        }
                    } else if name == self.ctx {
                        let method = matches!(tokens.get(k + 2), Some(Tt::Ident(m)) if WORKGROUP_METHODS.contains(&m.to_string().as_str()));
                        let no_args = matches!(tokens.get(k + 3), Some(Tt::Group(g)) if g.delimiter() == Delimiter::Parenthesis && g.stream().is_empty());
                        if !(next.is_some_and(|t| is_punct(t, '.')) && method && no_args) {
                            return false;
                        }
                        k += 4;
                        continue;
                    } else if REFUSED_WORDS.contains(&name.as_str()) {
                        return false;
                    } else if !ALLOWED_WORDS.contains(&name.as_str()) {
                        // A macro, a call (a function, a closure, a tuple struct: refused alike).
                        if call || (next.is_some_and(|t| is_punct(t, '!')) && matches!(tokens.get(k + 2), Some(Tt::Group(_)))) {
                            return false;
                        }
                        let path_before = k >= 2 && is_punct(&tokens[k - 1], ':') && is_punct(&tokens[k - 2], ':');
                        let path_after = next.is_some_and(|t| is_punct(t, ':')) && tokens.get(k + 2).is_some_and(|t| is_punct(t, ':'));
                        if !path_before && !path_after && self.resolve(&name, env, scopes) == Some(false) {
                            return false;
                        }
                    }
                }
                Tt::Punct(_) => {
                    let (op, len) = operator(tokens, k);
                    if refused_operator(tokens, k, &op, len) {
                        return false;
                    }
                    k += len;
                    continue;
                }
                Tt::Group(g) => {
                    // A call of a value: `(f)(x)`.
                    if g.delimiter() == Delimiter::Parenthesis && k >= 1 && matches!(tokens[k - 1], Tt::Group(_)) {
                        return false;
                    }
                    if !self.uniform_expr(&g.stream().into_iter().collect::<Vec<_>>(), env, scopes) {
                        return false;
                    }
                }
                Tt::Literal(_) => {}
            }
            k += 1;
        }
        true
    }

    /// `name` is not a uniform `mut` local after all (this pass assumed it was).
    fn drop_mut(&mut self, name: &str) {
        if self.mut_uniform.remove(name) {
            self.dropped = true;
        }
    }

    /// Every use of a `mut_uniform` name in `tokens` that could change a local of that name other
    /// than a run's own `name = uniform;` statement (those are checked in `segment`): an
    /// assignment, `&mut`, a binding (`let mut`, `ref mut`, `|mut x|`), an index or a field (`a[i]
    /// = ..`, `a.0 += ..`), a method other than `PURE_METHODS` (`&mut self`), a call (`FnMut`),
    /// a macro's arguments, a place in parentheses or a destructuring assignment. The name is
    /// then dropped: conservatively, for every local of that name.
    fn scan(&mut self, tokens: &[Tt], in_macro: bool) {
        for k in 0..tokens.len() {
            match &tokens[k] {
                Tt::Group(g) => {
                    let inner: Vec<Tt> = g.stream().into_iter().collect();
                    let is_macro = in_macro || macro_group(tokens, k);
                    if assignment_op(tokens, k + 1).is_some() {
                        let mut names = BTreeSet::new();
                        idents(&inner, &mut names);
                        names.iter().for_each(|n| self.drop_mut(n));
                    }
                    self.scan(&inner, is_macro);
                }
                Tt::Literal(l) if in_macro => {
                    let mut names = BTreeSet::new();
                    format_names(&l.to_string(), &mut names);
                    names.iter().for_each(|n| self.drop_mut(n));
                }
                Tt::Ident(i) => {
                    let name = i.to_string();
                    if !self.mut_uniform.contains(&name)
                        || (k >= 1 && is_punct(&tokens[k - 1], '.') && !(k >= 2 && is_punct(&tokens[k - 2], '.')))
                    {
                        continue;
                    }
                    let after = |j: usize| tokens.get(k + j);
                    let pure_method = after(2).is_some_and(|t| matches!(t, Tt::Ident(m) if PURE_METHODS.contains(&m.to_string().as_str())))
                        && matches!(after(3), Some(Tt::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                    let dot = after(1).is_some_and(|t| is_punct(t, '.')) && !after(2).is_some_and(|t| is_punct(t, '.'));
                    if in_macro
                        || (k >= 1 && (is_ident(&tokens[k - 1], "mut") || is_ident(&tokens[k - 1], "ref")))
                        || assignment_op(tokens, k + 1).is_some()
                        || matches!(after(1), Some(Tt::Group(g)) if g.delimiter() != Delimiter::Brace)
                        || (dot && !pure_method)
                    {
                        self.drop_mut(&name);
                    }
                }
                _ => {}
            }
        }
    }

    /// A run of barrier-free statements: one loop over the lanes (or, every statement uniform,
    /// once). Its `let`s that the rest of the block names are kept, per lane or once.
    fn segment(&mut self, stmts: &[Vec<Tt>], scopes: &mut [Vec<Var>], later: &BTreeSet<String>) -> Result<TokenStream> {
        let mut uses = BTreeSet::new();
        let mut body = TokenStream::new();
        let mut defined: Vec<(String, bool, Span, bool)> = Vec::new();
        // Every name a `let` of the run binds (or may bind: each identifier of a pattern this
        // cannot keep), which shadows a kept local of that name to the run's end.
        let mut shadowed: BTreeMap<String, Span> = BTreeMap::new();
        // The locals the run binds so far, and whether each is uniform; whether a statement
        // before may have returned (a lane that did skips the rest: then nothing after it is
        // taken as uniform), and whether every statement so far is uniform.
        let mut env: BTreeMap<String, bool> = BTreeMap::new();
        let mut returned = false;
        let mut all_uniform = true;
        // Lane-pure locals (`closed_form`): the run's bindings a closed form may name, and each
        // `let`'s id (taken when it is bound: a closed form names a uniform one's slot).
        let mut closed: BTreeMap<String, Closed> = BTreeMap::new();
        let mut ids: BTreeMap<String, usize> = BTreeMap::new();
        // The names a `let` of the run binds in a pattern this cannot keep (not kept, so not
        // kept again after a statement macro either: nothing after the run may name them).
        let mut unkept_lets: BTreeSet<String> = BTreeSet::new();
        for s in stmts {
            check_no_escape(s)?;
            idents(s, &mut uses);
            let stmt = s;
            // A `let` with attributes (`#[allow(..)] let x = ..;`) binds as one without (but is
            // not taken as uniform: a `#[cfg]` may remove it).
            let attributed = attributes_end(s, 0) > 0;
            let s = &s[attributes_end(s, 0).min(s.len())..];
            let end = if s.last().is_some_and(|t| is_punct(t, ';')) { s.len() - 1 } else { s.len() };
            let mut uniform = false;
            if s.first().is_some_and(|t| is_ident(t, "let")) {
                let names = match let_names(s) {
                    Ok(names) => names,
                    // A pattern this cannot keep per lane is fine while nothing after the run
                    // names what it binds.
                    Err(e) => {
                        let mut bound = BTreeSet::new();
                        let end = s.iter().position(|t| is_punct(t, '=')).unwrap_or(s.len());
                        idents(&s[1..end], &mut bound);
                        if bound.iter().any(|n| later.contains(n)) {
                            return Err(e);
                        }
                        self.scan(s, false);
                        for n in &bound {
                            env.insert(n.clone(), false);
                            closed.remove(n);
                        }
                        // A binding of the run that the pattern shadows is not the one in scope
                        // at the run's end: its slot would be set from the pattern's value (a
                        // lane-pure local computed from it read that in the loops after).
                        defined.retain(|d| !bound.contains(&d.0));
                        unkept_lets.extend(bound.iter().cloned());
                        shadowed.extend(bound.into_iter().map(|n| (n, s[0].span())));
                        all_uniform = false;
                        Vec::new()
                    }
                };
                let value = (1..end).find(|&k| assignment_op(s, k) == Some(("=".into(), 1)));
                if let Some(v) = value {
                    self.scan(&s[v + 1..end], false);
                }
                let value_uniform = !attributed && !returned && value.is_some_and(|v| self.uniform_expr(&s[v + 1..end], &env, scopes));
                uniform = value_uniform;
                // Lane-pure (per lane but computed from the lane's ids): each name's closed form,
                // before the names are bound.
                let remat = match value {
                    Some(v) if !attributed && !value_uniform => self.lane_pure_let(s, &s[v + 1..end], names.len(), &env, &closed, scopes),
                    _ => Vec::new(),
                };
                for (k, (name, mutable, span)) in names.into_iter().enumerate() {
                    let remat = remat.get(k).cloned().flatten();
                    let id = self.next_id;
                    self.next_id += 1;
                    ids.insert(name.clone(), id);
                    closed.remove(&name);
                    if value_uniform && !mutable {
                        closed.insert(name.clone(), Closed::Slot(id));
                    } else if let Some((form, needs)) = &remat {
                        closed.insert(name.clone(), Closed::Form(form.clone(), needs.clone()));
                    }
                    if mutable && !value_uniform {
                        self.drop_mut(&name);
                    }
                    let u = value_uniform && (!mutable || self.mut_uniform.contains(&name));
                    uniform &= u;
                    env.insert(name.clone(), u);
                    shadowed.insert(name.clone(), s[0].span());
                    defined.retain(|(n, _, _, _)| *n != name);
                    defined.push((name, mutable, span, u));
                }
            } else if let (Some(Tt::Ident(target)), Some((_, len))) = (s.first(), assignment_op(s, 1)) {
                // `name = value;`, `name op= value;`: every lane does it. A uniform local stays
                // uniform only if the value is.
                let name = target.to_string();
                let value = &s[1 + len..end];
                self.scan(value, false);
                let value_uniform = !attributed && !returned && self.uniform_expr(value, &env, scopes);
                if !value_uniform {
                    self.drop_mut(&name);
                }
                uniform = value_uniform && self.resolve(&name, &env, scopes) == Some(true);
            } else {
                // A statement macro may bind any name its tokens hold (`rebind!(v, 500)`,
                // `bind!(v <- t)`: `let v = ..;` in its expansion) for the rest of the run (the
                // loop's body is one scope) and, on fibers, of the block; which, the copy cannot
                // see. So each such name that is a local or a parameter of a primitive type is
                // taken as bound again here, per lane (not uniform, not computed again): the
                // run keeps whatever binding of it is in scope at its end, the macro's or the
                // one before (changed or not), and the runs after read that. Else a later run
                // took the binding before (its slot, or computed again from its `let`) where
                // fibers read the macro's, with no error.
                if let Some((mac, args)) = statement_macro(s) {
                    let mut named = BTreeMap::new();
                    macro_idents(&args, &mut named);
                    let mut unkept = BTreeSet::new();
                    for (name, at) in named {
                        let mutable = if let Some(d) = defined.iter().find(|d| d.0 == name) {
                            Some(d.1)
                        } else if unkept_lets.contains(&name) || name == self.ctx {
                            None
                        } else if let Some((depth, v)) = innermost(scopes, &name) {
                            // A `mut` local of a block around this one: put back after the run
                            // if the macro changes it, not if it binds a new one (its scope
                            // ends with this block); the copy cannot tell which.
                            if v.mutable && depth + 1 < scopes.len() {
                                return fail(
                                    at,
                                    &format!(
                                        "the macro `{mac}!` is given `{name}`, a `mut` local of a block around this one that \
                                         a barrier after it reads: the copy cannot tell whether the macro changes it or binds \
                                         a new `{name}`. Give the macro a copy (`let c = {name};`), assign it in the body \
                                         (`{name} = ..;`), or remove #[lanes] to run on fibers"
                                    ),
                                );
                            }
                            Some(v.mutable)
                        } else if self.uniform_params.contains(&name) {
                            Some(false)
                        } else {
                            None
                        };
                        let Some(mutable) = mutable else {
                            unkept.insert(name);
                            continue;
                        };
                        let id = self.next_id;
                        self.next_id += 1;
                        ids.insert(name.clone(), id);
                        closed.remove(&name);
                        env.insert(name.clone(), false);
                        shadowed.insert(name.clone(), at);
                        defined.retain(|d| d.0 != name);
                        defined.push((name, mutable, at, false));
                    }
                    // A name it cannot keep (no local bound before it, nor a primitive parameter:
                    // a new name, a memory handle), given by itself and read after a barrier.
                    if let Some(name) = macro_binding(&args, later, &unkept) {
                        return fail(
                            mac.span(),
                            &format!(
                                "the macro `{mac}!` is given `{name}` by itself, which a barrier after it reads: if the macro \
                                 binds it (a `let` in its expansion), the copy cannot keep that binding across the barrier \
                                 (`{name}` is no local bound before it, nor a parameter of a primitive type). Bind it in the \
                                 body (`let {name} = ..;`), or remove #[lanes] to run on fibers"
                            ),
                        );
                    }
                }
                self.scan(stmt, false);
                // A macro's arguments may name a local it binds (`my_let!(x = ..)`, unseen here).
                let mut named = BTreeMap::new();
                mark_macro_names(stmt, false, &mut named);
                for n in named.keys() {
                    closed.remove(n);
                }
                env.extend(named);
            }
            if has_return(s) {
                returned = true;
            }
            all_uniform &= uniform;
            // A shuffle's put whose `delta` is uniform here (its names as this statement sees
            // them), and the take of such a shuffle: the uniform pair (`host::Stash`).
            let stmt = &self.uniform_shuffle(stmt, &env, scopes);
            body.extend(self.rewrite_returns(stmt));
            if needs_semicolon(stmt) {
                // A block's last statement may go without its `;` (`stride /= 2`): here the
                // locals put back after it follow.
                body.extend(ts(";"));
            }
        }
        let mut decls = TokenStream::new();
        let mut store = Vec::new();
        let (remat, needed) = lane_pure(&defined, &closed, &ids, later);
        for (name, mutable, span, uniform) in defined {
            let id = ids[&name];
            let read_later = later.contains(&name) || (uniform && needed.contains(&id));
            if !read_later {
                continue;
            }
            let v = Var { remat: remat.get(&name).cloned(), name, mutable, uniform, id, span };
            let decl = if v.remat.is_some() {
                format!("let __rt_{} = __wg.lane_type();", v.id)
            } else if uniform {
                format!("let mut __uni_{} = __wg.uniform();", v.id)
            } else {
                format!("let mut __lane_{} = __wg.var();", v.id)
            };
            decls.extend(respan(ts(&decl), v.span));
            store.push(v);
        }
        // A kept `mut` local that the run shadows: of this block, nothing after the run can name
        // it (not put back); of an enclosing block, it could be named after this block ends, and
        // putting it back would store the shadowing binding.
        let here: BTreeSet<usize> = scopes.last().map_or(BTreeSet::new(), |s| s.iter().map(|v| v.id).collect());
        for v in visible(scopes, &uses) {
            if let (true, Some(at), false) = (v.mutable, shadowed.get(&v.name), here.contains(&v.id)) {
                return fail(
                    *at,
                    &format!("`{}` is shadowed here by a `let` of the same name while a loop around it may change it; rename one", v.name),
                );
            }
        }
        // Taken from the lanes: the locals the run names that were kept before it.
        let shadowed: BTreeSet<String> = shadowed.into_keys().collect();
        let out_loop = if all_uniform && !stmts.is_empty() {
            self.once(&uses, scopes, body, &store, &shadowed)
        } else {
            let below = self.lane_bound(stmts, scopes);
            self.lane_loop(&uses, scopes, body, &store, &shadowed, below)
        };
        let scope = scopes.last_mut().expect("a scope");
        scope.extend(store);
        decls.extend(out_loop);
        Ok(decls)
    }

    // ---------------------------------------------------------------- uniform barrier-free `while`
    /// A barrier-free `while` at a block's top level, run as a loop over its iterations with a
    /// loop over the lanes inside (each iteration's lanes in turn: histogram's counting loop
    /// reads its input contiguously), not inside one lane loop (each lane's iterations in turn).
    /// Lowered only where every lane runs the same iterations, so the fibers' results stay:
    /// - `stmt` is `while cond { body }` (no label, no `let` in `cond`, no block in `cond`);
    /// - `cond` is uniform (`uniform_expr`) after the run's statements before it (`run`): its
    ///   names are parameters of a primitive type, uniform immutable locals, or `mut` locals
    ///   every assignment to which, in the whole body, is uniform (`mut_uniform`), so `cond`
    ///   stays uniform from one iteration to the next;
    /// - neither `cond` nor `body` has a `break`, `continue`, `return`, `?`, a label or a macro
    ///   call (which may hide one), nor a shuffle (a barrier): no lane leaves the loop alone;
    /// - the split keeps no local of `run` per lane (each a `Copy` type then, or a compile error)
    ///   but those seen to be of a primitive type or to be one element of a memory handle
    ///   (`known_copy`: an accumulator's `let mut sum = 0.0;`, scan_add's `let offset =
    ///   total.get(0);`);
    /// - the split ends `run`'s lane loop where fibers go on in one scope, so `run` holds nothing
    ///   whose scope that would cut short (`split_keeps_scope`): no `let` of a name neither the
    ///   loop nor what follows reads (fibers drop it at the block's end, after the loop: a type
    ///   with drop glue would be dropped before it here), nor of a value that may not be `Copy`
    ///   (`plainly_copy`: the split keeps it), no statement macro given a name the loop
    ///   or what follows reads (it may bind it: `bind!(n <- tid)`, a binding the loop would not
    ///   see), and no `macro_rules!` (the code after the split would not see it);
    /// - `body` lowers as a block (a `let` that shadows a kept `mut` local there, which one lane
    ///   loop takes, is refused in a block): else the loop stays in its run, as written.
    ///
    /// A per-lane `mut` local the body changes (an accumulator, kept from before or from `run`)
    /// goes through its lanes' storage (`host::LaneVar`) each iteration instead of a register:
    /// a load and a store per lane beside the iteration's own loads, which read consecutive
    /// elements across the lanes (warp_reduce's loads: LLVM vectorises that loop, where one
    /// lane's iterations in turn read `PER_THREAD` strided streams: CPU time per launch 1.9 ->
    /// 1.4-1.5 ms).
    ///
    /// The lanes' iterations then run in another order than on fibers; with no barrier between
    /// them any order is one a GPU may run (atomics commute; a plain race is one on fibers too).
    /// `None`: not lowered (the statement joins the run). Else the loop's parts, taken by
    /// `lower_uniform_while` after the run before it (`run`) is lowered on its own.
    fn uniform_while(&self, stmt: &[Tt], run: &[Vec<Tt>], scopes: &[Vec<Var>], later: &BTreeSet<String>) -> Option<(Vec<Tt>, Group, Span)> {
        let core: &[Tt] = if stmt.last().is_some_and(|t| is_punct(t, ';')) { &stmt[..stmt.len() - 1] } else { stmt };
        if core.len() < 3 || !is_ident(&core[0], "while") {
            return None;
        }
        let b = core.iter().position(is_brace)?;
        if b != core.len() - 1 || b < 2 {
            return None;
        }
        let Tt::Group(body) = &core[b] else { return None };
        let cond = &core[1..b];
        let all: Vec<Tt> = core.to_vec();
        if escapes(&all) || cond.iter().any(|t| is_ident(t, "let")) || self.find_shuffle(&all).is_some() || self.contains_barrier(&all) {
            return None;
        }
        if !split_keeps_scope(run, later) {
            return None;
        }
        // The run before it, lowered on a copy (its locals' uniformity: `segment`); the real
        // lowering repeats it once the loop is taken.
        let mut probe = self.clone();
        let mut scopes = scopes.to_vec();
        let before = scopes.last().map_or(0, Vec::len);
        if !run.is_empty() {
            probe.segment(run, &mut scopes, later).ok()?;
        }
        // The split keeps the run's locals that the loop or what follows names; one kept per
        // lane must be `Copy` (`host::LaneVar`), which a run left whole does not ask of it: only
        // a local whose type is seen to be a primitive one (an accumulator's `let mut sum =
        // 0.0;`) or a handle's element (`let v = x.get(i);`) may be kept (`known_copy`).
        if scopes.last().is_some_and(|s| s[before..].iter().any(|v| !v.uniform && v.remat.is_none() && !known_copy(run, &v.name, &self.body_items, &self.element_handles))) {
            return None;
        }
        if !probe.uniform_expr(cond, &BTreeMap::new(), &scopes) {
            return None;
        }
        // Its block lowered on a copy: what a block refuses (a `let` shadowing the counter after
        // `k += 1`) a run left whole takes.
        probe.lower_uniform_while(cond, body, core[0].span(), &mut scopes).ok()?;
        Some((cond.to_vec(), body.clone(), core[0].span()))
    }

    /// The loop `uniform_while` took: its condition once for the workgroup before each
    /// iteration (as a `while` with a barrier has it), its block lowered as a block.
    fn lower_uniform_while(&mut self, cond: &[Tt], body: &Group, at: Span, scopes: &mut Vec<Vec<Var>>) -> Result<TokenStream> {
        let vote = self.vote(cond, scopes, at, at)?;
        scopes.push(Vec::new());
        let inner = self.block(&body.stream().into_iter().collect::<Vec<_>>(), scopes)?;
        scopes.pop();
        let mut b = vote;
        b.extend(ts("if !__go { break; }"));
        b.extend([Tt::Group(Group::new(Delimiter::Brace, inner))]);
        let mut l = ts("loop");
        l.extend([Tt::Group(Group::new(Delimiter::Brace, b))]);
        Ok(l)
    }

    /// `let __go = cond` for the workgroup: every lane's value of `cond`, which must agree; or,
    /// `cond` uniform, its value once.
    fn vote(&mut self, cond: &[Tt], scopes: &[Vec<Var>], at: Span, barrier: Span) -> Result<TokenStream> {
        check_no_escape(cond)?;
        self.scan(cond, false);
        let mut uses = BTreeSet::new();
        idents(cond, &mut uses);
        if self.uniform_expr(cond, &BTreeMap::new(), scopes) {
            let mut value = ts(&format!("let {} = __wg.uniform_ctx();", self.ctx));
            for v in visible(scopes, &uses).iter().filter(|v| v.uniform) {
                value.extend(respan(ts(&format!("let {} = unsafe {{ __uni_{}.get() }};", v.name, v.id)), v.span));
            }
            value.extend([Tt::Group(Group::new(Delimiter::Parenthesis, stream(cond)))]);
            let mut out = respan(ts("let __go = __wg.live() &&"), at);
            out.extend([Tt::Group(Group::new(Delimiter::Brace, value))]);
            out.extend(ts(";"));
            return Ok(out);
        }
        // Lanes may stop at the vote (a divergence): the loops after it skip them.
        self.returns = true;
        let mut args = ts("__lane,");
        args.extend([Tt::Group(Group::new(Delimiter::Brace, self.rewrite_returns(cond)))]);
        let mut cast = ts("__vote.cast");
        cast.extend([Tt::Group(Group::new(Delimiter::Parenthesis, args))]);
        cast.extend(ts(";"));
        let mut out = respan(ts("let mut __vote = __wg.vote();"), at);
        out.extend(self.lane_loop(&uses, scopes, cast, &[], &BTreeSet::new(), None));
        out.extend(ts("let __go ="));
        out.extend(respan(ts("__vote.result(__wg)"), barrier));
        out.extend(ts(";"));
        Ok(out)
    }

    /// `return` (the invocation is done) as: this lane retires, go on with the next one.
    fn rewrite_returns(&self, tokens: &[Tt]) -> TokenStream {
        let mut out = TokenStream::new();
        let mut k = 0;
        while k < tokens.len() {
            let t = &tokens[k];
            k += 1;
            // A function (`fn name`) or a closure with a block (`|a| { .. }`, `|a| -> T { .. }`):
            // its `return` is its own, kept as written (rewritten, it would leave the loop over
            // the lanes from inside the closure: a compile error).
            let mut verbatim_to = None;
            if is_ident(t, "fn") && matches!(tokens.get(k), Some(Tt::Ident(_))) {
                verbatim_to = tokens[k..].iter().position(is_brace).map(|b| k + b);
            } else if is_punct(t, '|') && closure_starts(&tokens[..k - 1]) {
                if let Some(close) = tokens[k..].iter().position(|t| is_punct(t, '|')).map(|c| k + c) {
                    let after = close + 1;
                    if tokens.get(after).is_some_and(is_brace) {
                        verbatim_to = Some(after);
                    } else if tokens.get(after).is_some_and(|t| matches!(t, Tt::Punct(p) if p.as_char() == '-' && p.spacing() == Spacing::Joint))
                        && tokens.get(after + 1).is_some_and(|t| is_punct(t, '>'))
                    {
                        verbatim_to = tokens[after..].iter().position(is_brace).map(|b| after + b);
                    }
                }
            }
            if let Some(end) = verbatim_to {
                out.extend(stream(&tokens[k - 1..=end]));
                k = end + 1;
                continue;
            }
            match t {
                Tt::Ident(i) if i.to_string() == "return" => {
                    out.extend(respan(ts("{ __wg.retire(__lane); continue '__lanes; }"), i.span()));
                }
                Tt::Group(g) => {
                    let inner: Vec<Tt> = g.stream().into_iter().collect();
                    let mut n = Group::new(g.delimiter(), self.rewrite_returns(&inner));
                    n.set_span(g.span());
                    out.extend([Tt::Group(n)]);
                }
                t => out.extend([t.clone()]),
            }
        }
        out
    }
}

fn stmt_idents(s: &Stmt, into: &mut BTreeSet<String>) {
    match s {
        Stmt::Plain(t) => idents(t, into),
        Stmt::Barrier(..) => {}
        Stmt::While { cond, body, .. } => {
            idents(cond, into);
            idents(&body.stream().into_iter().collect::<Vec<_>>(), into);
        }
        Stmt::If { cond, then, els, .. } => {
            idents(cond, into);
            idents(&then.stream().into_iter().collect::<Vec<_>>(), into);
            if let Some(e) = els {
                idents(e, into);
            }
        }
    }
}

/// The kept locals that `uses` names, the innermost binding of each name.
fn visible(scopes: &[Vec<Var>], uses: &BTreeSet<String>) -> Vec<Var> {
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for scope in scopes.iter().rev() {
        for v in scope.iter().rev() {
            if uses.contains(&v.name) && seen.insert(v.name.clone()) {
                out.push(v.clone());
            }
        }
    }
    out
}

/// The names a `let` binds: `let [mut] name` or `let ([mut] a, [mut] b, ..)`, each with whether
/// it is `mut`.
fn let_names(s: &[Tt]) -> Result<Vec<(String, bool, Span)>> {
    let pat_end = s.iter().position(|t| is_punct(t, ':') || is_punct(t, '=') || is_punct(t, ';')).unwrap_or(s.len());
    let pat = &s[1..pat_end];
    let simple = |p: &[Tt]| -> Option<(String, bool, Span)> {
        match p {
            [Tt::Ident(i)] => Some((i.to_string(), false, i.span())),
            [m, Tt::Ident(i)] if is_ident(m, "mut") => Some((i.to_string(), true, i.span())),
            _ => None,
        }
    };
    if let Some(v) = simple(pat) {
        return Ok(if v.0 == "_" { vec![] } else { vec![v] });
    }
    if let [Tt::Group(g)] = pat {
        if g.delimiter() == Delimiter::Parenthesis {
            let inner: Vec<Tt> = g.stream().into_iter().collect();
            let mut out = Vec::new();
            for part in split_commas(&inner) {
                match simple(&part) {
                    Some(v) if v.0 == "_" => {}
                    Some(v) => out.push(v),
                    None => return fail(g.span(), "this `let` pattern is not supported here (a name, or a tuple of names)"),
                }
            }
            return Ok(out);
        }
    }
    fail(s[0].span(), "this `let` pattern is not supported here (a name, or a tuple of names)")
}

/// Whether the last `let` of `name` among the run's statements `run` binds it to a value of a
/// primitive type, seen from the tokens alone: `let [mut] name: TYPE = ..;` with `TYPE` one of
/// `PRIMITIVES`, or `let [mut] name = LITERAL;` (a number, maybe negated, or `true` / `false`);
/// or to one element of a memory handle parameter, `let name = h.get(..);` / `h[..]`
/// (`element_read`, `handles`). Such a local is `Copy`, so `uniform_while` may keep it per lane
/// (`host::LaneVar`). A `TYPE` that an item or `use` of the body declares (`items`: `struct u64
/// { .. }`) is that item, not the primitive: not known (kept, a non-`Copy` one failed to compile
/// with `Carried`'s "lives across a barrier" in a body with no barrier, where the loop left in
/// its run compiles). An item of that name outside the body is not seen (the same compile error).
fn known_copy(run: &[Vec<Tt>], name: &str, items: &BTreeSet<String>, handles: &BTreeSet<String>) -> bool {
    for s in run.iter().rev() {
        let s = &s[attributes_end(s, 0).min(s.len())..];
        if !s.first().is_some_and(|t| is_ident(t, "let")) {
            continue;
        }
        let Ok(names) = let_names(s) else { continue };
        if !names.iter().any(|(n, _, _)| n == name) {
            continue;
        }
        let end = if s.last().is_some_and(|t| is_punct(t, ';')) { s.len() - 1 } else { s.len() };
        let Some(eq) = (1..end).find(|&k| assignment_op(s, k) == Some(("=".into(), 1))) else { return false };
        let (pat, value) = (&s[1..eq], &s[eq + 1..end]);
        if names.len() != 1 {
            return false;
        }
        if let Some(colon) = pat.iter().position(|t| is_punct(t, ':')) {
            return matches!(&pat[colon + 1..], [Tt::Ident(ty)] if PRIMITIVES.contains(&ty.to_string().as_str()) && !items.contains(&ty.to_string()));
        }
        if element_read(value, handles) {
            return true;
        }
        let value = if value.first().is_some_and(|t| is_punct(t, '-')) { &value[1..] } else { value };
        return match value {
            [Tt::Literal(l)] => {
                let l = l.to_string();
                l.starts_with(|c: char| c.is_ascii_digit())
            }
            [t] => is_ident(t, "true") || is_ident(t, "false"),
            _ => false,
        };
    }
    false
}

/// Whether `value` is one element of a memory handle parameter, `h.get(i)` or `h[i]` (`h` in
/// `handles`): an `Element`, which is `Copy` (scan_add's `let offset = total.get(0);` before its
/// uniform `while`: without this the loop stayed inside the run's lane loop, each lane's nine
/// strided elements in turn; split, each round's lanes update contiguous elements).
fn element_read(value: &[Tt], handles: &BTreeSet<String>) -> bool {
    let [Tt::Ident(h), rest @ ..] = value else { return false };
    if !handles.contains(&h.to_string()) {
        return false;
    }
    match rest {
        [Tt::Punct(dot), Tt::Ident(get), Tt::Group(args)] => {
            dot.as_char() == '.' && get.to_string() == "get" && args.delimiter() == Delimiter::Parenthesis
        }
        [Tt::Group(index)] => index.delimiter() == Delimiter::Bracket,
        _ => false,
    }
}

/// Whether every use of `name` in `tokens` (at any depth) is an access through it, `name.` or
/// `name[`: then no pattern, closure parameter or `let` of the body binds another value to that
/// name (each would be followed by something else: `=`, `:`, `,`, `)`, `|`, `in`, `=>`), and a
/// memory handle parameter of that name is the one every `name.get(..)` reads.
fn only_accessed(tokens: &[Tt], name: &str) -> bool {
    tokens.iter().enumerate().all(|(k, t)| match t {
        Tt::Group(g) => only_accessed(&g.stream().into_iter().collect::<Vec<_>>(), name),
        Tt::Ident(i) if i.to_string() == name => {
            let after_path = k >= 1 && is_punct(&tokens[k - 1], ':');
            let next = tokens.get(k + 1);
            !after_path
                && (next.is_some_and(|n| is_punct(n, '.') && !tokens.get(k + 2).is_some_and(|m| is_punct(m, '.')))
                    || matches!(next, Some(Tt::Group(g)) if g.delimiter() == Delimiter::Bracket))
        }
        _ => true,
    })
}

/// No `break` / `continue` that would leave the run of statements (it meant a loop around a
/// barrier; here it would leave the loop over the lanes).
fn check_no_escape(tokens: &[Tt]) -> Result<()> {
    let mut k = 0;
    while k < tokens.len() {
        let t = &tokens[k];
        if is_ident(t, "while") || is_ident(t, "for") || is_ident(t, "loop") {
            // The loop's own block: its `break` and `continue` stay in it.
            while k < tokens.len() && !is_brace(&tokens[k]) {
                if let Tt::Group(g) = &tokens[k] {
                    check_no_escape(&g.stream().into_iter().collect::<Vec<_>>())?;
                }
                k += 1;
            }
            k += 1;
            continue;
        }
        if is_punct(t, '|') {
            // A closure: its body is its own (a `break` in it would not compile anyway).
            k += 1;
            continue;
        }
        // A labeled one is the run's own: a label outside the run would be a loop's or block's
        // with a barrier in it, which is refused.
        let labeled = tokens.get(k + 1).is_some_and(|t| is_punct(t, '\''));
        if (is_ident(t, "break") || is_ident(t, "continue")) && !labeled {
            return fail(t.span(), "`break` / `continue` out of a loop with a barrier in it is not supported");
        }
        if let Tt::Group(g) = t {
            check_no_escape(&g.stream().into_iter().collect::<Vec<_>>())?;
        }
        k += 1;
    }
    Ok(())
}

/// Whether `tokens` may leave a loop around them or the function early, at any depth: a
/// `break`, `continue`, `return`, `?`, a label or lifetime (`'a`), or a macro call (`m!(..)`,
/// which may expand to one). For `uniform_while`, which needs every lane to run every iteration.
fn escapes(tokens: &[Tt]) -> bool {
    tokens.iter().enumerate().any(|(k, t)| match t {
        Tt::Ident(_) => {
            ["break", "continue", "return"].iter().any(|w| is_ident(t, w))
                || (tokens.get(k + 1).is_some_and(|t| is_punct(t, '!')) && matches!(tokens.get(k + 2), Some(Tt::Group(_))))
        }
        Tt::Punct(p) => p.as_char() == '?' || p.as_char() == '\'',
        Tt::Group(g) => escapes(&g.stream().into_iter().collect::<Vec<_>>()),
        Tt::Literal(_) => false,
    })
}

/// Whether ending the lane loop of `run` (the statements before a uniform `while`) before the
/// loop keeps what its statements meant, `later` the names the loop and what follows it read:
/// no `let` binds a name `later` lacks (on fibers it lives to the block's end, after the loop:
/// a value with drop glue would be dropped before the loop instead; one that `later` names is
/// kept, and must be `Copy`: `plainly_copy`), no statement macro other than
/// `NON_BINDING_MACROS` mentions a name `later` has (it may bind it, in a form `macro_binding`
/// does not see: `bind!(n <- tid)`; the loop and the run after would read the binding before
/// it), and no `macro_rules!` (unseen after the split).
fn split_keeps_scope(run: &[Vec<Tt>], later: &BTreeSet<String>) -> bool {
    run.iter().all(|s| {
        let s = &s[attributes_end(s, 0).min(s.len())..];
        let end = if s.last().is_some_and(|t| is_punct(t, ';')) { s.len() - 1 } else { s.len() };
        if s.first().is_some_and(|t| is_ident(t, "let")) {
            let pat_end = (1..end).find(|&k| is_punct(&s[k], ':') || assignment_op(s, k) == Some(("=".into(), 1))).unwrap_or(end);
            let mut bound = BTreeSet::new();
            idents(&s[1..pat_end], &mut bound);
            return bound.iter().all(|n| matches!(n.as_str(), "mut" | "ref" | "_") || later.contains(n)) && plainly_copy(&s[pat_end..end]);
        }
        if let [path @ .., Tt::Punct(bang), Tt::Group(args)] = &s[..end] {
            if bang.as_char() == '!' && path.iter().all(|t| matches!(t, Tt::Ident(_)) || is_punct(t, ':')) {
                let Some(Tt::Ident(mac)) = path.last() else { return true };
                let mac = mac.to_string();
                if mac == "macro_rules" {
                    return false;
                }
                if path.len() == 1 && NON_BINDING_MACROS.contains(&mac.as_str()) {
                    return true;
                }
                let mut named = BTreeSet::new();
                idents(&args.stream().into_iter().collect::<Vec<_>>(), &mut named);
                return named.is_disjoint(later);
            }
        }
        // `macro_rules! name { .. }` is `[macro_rules, !, name, {..}]`.
        !s.first().is_some_and(|t| is_ident(t, "macro_rules"))
    })
}

/// Whether a `let`'s type and value (`tokens`, from its `:` or `=`) look like a `Copy` value's:
/// a local the split keeps once (uniform) or per lane must be `Copy`, which a run left whole does
/// not ask of it (`let r = 0..ITEMS;` read by the loop: a `Range`, kept, did not compile). No
/// range (`..`), no block or struct literal (`{ .. }`), no type or item of a type's name (`None`,
/// `S`: a name with a capital other than a `CONST`'s), and a type, if given, of primitives.
fn plainly_copy(tokens: &[Tt]) -> bool {
    fn walk(tokens: &[Tt], in_type: bool) -> bool {
        let mut in_type = in_type;
        tokens.iter().enumerate().all(|(k, t)| match t {
            Tt::Group(g) => g.delimiter() != Delimiter::Brace && walk(&g.stream().into_iter().collect::<Vec<_>>(), in_type),
            Tt::Punct(p) if p.as_char() == '=' => {
                in_type = false;
                true
            }
            Tt::Punct(p) => !(p.as_char() == '.' && tokens.get(k + 1).is_some_and(|n| is_punct(n, '.'))),
            Tt::Ident(i) => {
                let name = i.to_string();
                let constant = name.chars().all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_');
                if in_type {
                    PRIMITIVES.contains(&name.as_str()) || constant
                } else {
                    !name.starts_with(|c: char| c.is_ascii_uppercase()) || constant
                }
            }
            Tt::Literal(_) => true,
        })
    }
    walk(tokens, tokens.first().is_some_and(|t| is_punct(t, ':')))
}

/// Where `name` is assigned (`name = ..`, `name += ..`, ...) in `tokens`, if anywhere.
fn assigned(tokens: &[Tt], name: &str) -> Option<Span> {
    for (k, t) in tokens.iter().enumerate() {
        if let Tt::Group(g) = t {
            if let Some(s) = assigned(&g.stream().into_iter().collect::<Vec<_>>(), name) {
                return Some(s);
            }
        }
        if !is_ident(t, name) || (k > 0 && (is_punct(&tokens[k - 1], '.') || is_ident(&tokens[k - 1], "let") || is_ident(&tokens[k - 1], "mut"))) {
            continue;
        }
        // `=` alone, or an operator joined to a final `=` (`+=`, `<<=`; not `==`, `<=`, `>=`, `!=`).
        let mut j = k + 1;
        let mut op = String::new();
        while let Some(Tt::Punct(p)) = tokens.get(j) {
            op.push(p.as_char());
            j += 1;
            if p.spacing() == Spacing::Alone {
                break;
            }
        }
        let is_assign = op == "="
            || (op.len() >= 2 && op.ends_with('=') && !matches!(op.as_str(), "==" | "<=" | ">=" | "!=" | "=>"));
        if is_assign {
            return Some(t.span());
        }
    }
    None
}

/// The primitive types: a parameter of one is a plain value, the same for every invocation.
const PRIMITIVES: &[&str] =
    &["u8", "u16", "u32", "u64", "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64", "bool", "char"];

/// `ctx`'s methods whose value is the workgroup's, the same for every invocation (the subgroup
/// size is the launch's).
const WORKGROUP_METHODS: &[&str] = &[
    "group_id_x", "group_id_y", "group_id_z", "group_size_x", "group_size_y", "group_size_z", "num_groups_x", "num_groups_y",
    "num_groups_z", "group_linear", "subgroup_size",
];

/// Methods of the numeric types that compute a value from their operands and nothing else (a
/// uniform expression may call these, and a uniform `mut` local may be their receiver).
const PURE_METHODS: &[&str] = &[
    "min", "max", "clamp", "div_ceil", "div_euclid", "rem_euclid", "abs", "abs_diff", "signum", "pow", "powi", "powf", "sqrt",
    "floor", "ceil", "round", "trunc", "count_ones", "count_zeros", "leading_zeros", "trailing_zeros", "next_power_of_two",
    "is_power_of_two", "ilog2", "rotate_left", "rotate_right", "wrapping_add", "wrapping_sub", "wrapping_mul", "wrapping_div",
    "wrapping_rem", "wrapping_neg", "wrapping_shl", "wrapping_shr", "wrapping_pow", "saturating_add", "saturating_sub",
    "saturating_mul", "saturating_pow", "is_multiple_of",
];

/// Words a uniform expression may not hold (control flow, bindings, `unsafe`, items), and those
/// it may that are no local's name.
const REFUSED_WORDS: &[&str] = &[
    "unsafe", "return", "break", "continue", "let", "loop", "while", "for", "match", "mut", "ref", "move", "fn", "static", "const",
    "async", "await", "yield", "impl", "dyn", "struct", "enum", "trait", "type", "where", "use", "mod", "extern", "in",
    "macro_rules", "union",
];
const ALLOWED_WORDS: &[&str] = &["if", "else", "as", "true", "false", "crate", "self", "super", "Self"];

/// The operator at `tokens[k]` (its joined punctuation, as written) and its length in tokens.
fn operator(tokens: &[Tt], k: usize) -> (String, usize) {
    let mut op = String::new();
    let mut j = k;
    while let Some(Tt::Punct(p)) = tokens.get(j) {
        op.push(p.as_char());
        j += 1;
        if p.spacing() == Spacing::Alone {
            break;
        }
    }
    (op, j - k)
}

/// Whether the operator `op` at `tokens[k]` (`len` tokens, from [`operator`]) is one a uniform or
/// lane-pure expression may not hold: a label or lifetime, `?`, a macro's `$`, an attribute, a
/// binding `@`, an assignment (comparisons pass), a turbofish, or a closure's `|`. One rule for
/// both, so a value the macro keeps once and one it computes again per lane refuse the same forms.
fn refused_operator(tokens: &[Tt], k: usize, op: &str, len: usize) -> bool {
    op.contains(['\'', '?', '$', '#', '@'])
        || (op.contains('=') && !matches!(op, "==" | "!=" | "<=" | ">=" | "..="))
        || (op.ends_with("::") && tokens.get(k + len).is_some_and(|t| is_punct(t, '<')))
        || op.contains("::<")
        || (op.starts_with('|') && closure_starts(&tokens[..k]))
}

/// The assignment operator at `tokens[k]` (`=`, `+=`, `<<=`, ...; `x=-1` joins `=` and `-`) and
/// its length, if there is one.
fn assignment_op(tokens: &[Tt], k: usize) -> Option<(String, usize)> {
    let (op, _) = operator(tokens, k);
    if op.starts_with('=') && !op.starts_with("==") && !op.starts_with("=>") {
        return Some(("=".into(), 1));
    }
    ["<<=", ">>=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^="]
        .iter()
        .find(|a| op.starts_with(**a))
        .map(|a| (a.to_string(), a.chars().count()))
}

/// Names that may be `mut` uniform locals: every name after a `mut` (none where the body has a
/// `ref mut`, which borrows a place whose name it does not write).
fn mut_candidates(tokens: &[Tt]) -> BTreeSet<String> {
    fn walk(tokens: &[Tt], into: &mut BTreeSet<String>) -> bool {
        for (k, t) in tokens.iter().enumerate() {
            if is_ident(t, "mut") {
                if k >= 1 && is_ident(&tokens[k - 1], "ref") {
                    return false;
                }
                if let Some(Tt::Ident(i)) = tokens.get(k + 1) {
                    into.insert(i.to_string());
                }
            }
            if let Tt::Group(g) = t {
                if !walk(&g.stream().into_iter().collect::<Vec<_>>(), into) {
                    return false;
                }
            }
        }
        true
    }
    let mut names = BTreeSet::new();
    if walk(tokens, &mut names) { names } else { BTreeSet::new() }
}

/// Macros of the standard library a statement may call that bind no name of the caller's.
const NON_BINDING_MACROS: &[&str] = &[
    "assert", "assert_eq", "assert_ne", "debug_assert", "debug_assert_eq", "debug_assert_ne", "print", "println", "eprint",
    "eprintln", "panic", "unreachable", "todo", "unimplemented", "write", "writeln", "format", "format_args", "dbg",
];

/// A statement that is one macro call (`path!(..);`, `path![..];`, `path! { .. }`), other than
/// `NON_BINDING_MACROS` and `macro_rules!`: the macro's name and its arguments' tokens.
fn statement_macro(s: &[Tt]) -> Option<(Ident, Vec<Tt>)> {
    let end = if s.last().is_some_and(|t| is_punct(t, ';')) { s.len() - 1 } else { s.len() };
    let [path @ .., Tt::Punct(bang), Tt::Group(args)] = &s[..end] else { return None };
    let Some(Tt::Ident(mac)) = path.last() else { return None };
    if bang.as_char() != '!' || !path.iter().all(|t| matches!(t, Tt::Ident(_)) || is_punct(t, ':')) {
        return None;
    }
    if (path.len() == 1 && NON_BINDING_MACROS.contains(&mac.to_string().as_str())) || mac.to_string() == "macro_rules" {
        return None;
    }
    Some((mac.clone(), args.stream().into_iter().collect()))
}

/// Every identifier in a macro's tokens (`tokens`, nested groups included), each with the span of
/// its first: any may be one it binds (`$n:ident` wherever the macro's pattern has it). Not the
/// names a string literal's format arguments capture: a literal binds nothing.
fn macro_idents(tokens: &[Tt], into: &mut BTreeMap<String, Span>) {
    for t in tokens {
        match t {
            Tt::Ident(i) => {
                into.entry(i.to_string()).or_insert(i.span());
            }
            Tt::Group(g) => macro_idents(&g.stream().into_iter().collect::<Vec<_>>(), into),
            _ => {}
        }
    }
}

/// The innermost kept local named `name`, with the index of its scope in `scopes`.
fn innermost<'a>(scopes: &'a [Vec<Var>], name: &str) -> Option<(usize, &'a Var)> {
    scopes.iter().enumerate().rev().find_map(|(depth, s)| s.iter().rev().find(|v| v.name == name).map(|v| (depth, v)))
}

/// In a statement macro's arguments (`inner`), a name of `candidates` that `later` reads, given by
/// itself (an argument that is just the name, `mut name`, `name = ..`, `name: ..` or `let name =
/// ..`: what a `macro_rules!` takes as an `ident` to bind, or a `stmt`). A name inside an
/// expression of its arguments (`stop_if!(t % 2 == 1)`) is taken as only read.
fn macro_binding(inner: &[Tt], later: &BTreeSet<String>, candidates: &BTreeSet<String>) -> Option<String> {
    let mut parts: Vec<&[Tt]> = Vec::new();
    let mut start = 0;
    for (k, t) in inner.iter().enumerate() {
        if is_punct(t, ',') || is_punct(t, ';') {
            parts.push(&inner[start..k]);
            start = k + 1;
        }
    }
    parts.push(&inner[start..]);
    for part in parts {
        let mut part = part;
        while let [m, rest @ ..] = part {
            if !(is_ident(m, "let") || is_ident(m, "mut") || is_ident(m, "ref")) {
                break;
            }
            part = rest;
        }
        let Some(Tt::Ident(name)) = part.first() else { continue };
        let name = name.to_string();
        let alone = part.len() == 1 || matches!(operator(part, 1).0.as_str(), "=" | ":");
        if alone && later.contains(&name) && candidates.contains(&name) {
            return Some(name);
        }
    }
    None
}

/// Every name in the arguments of a macro in `tokens`, as not uniform in `env`.
fn mark_macro_names(tokens: &[Tt], in_macro: bool, env: &mut BTreeMap<String, bool>) {
    for (k, t) in tokens.iter().enumerate() {
        match t {
            Tt::Group(g) => {
                let is_macro = in_macro || macro_group(tokens, k);
                mark_macro_names(&g.stream().into_iter().collect::<Vec<_>>(), is_macro, env);
            }
            Tt::Ident(i) if in_macro => {
                env.insert(i.to_string(), false);
            }
            _ => {}
        }
    }
}

/// Whether the group at `tokens[k]` holds a macro's arguments (`name!(..)`, not `if !(..)`).
fn macro_group(tokens: &[Tt], k: usize) -> bool {
    k >= 2
        && is_punct(&tokens[k - 1], '!')
        && matches!(&tokens[k - 2], Tt::Ident(i) if !REFUSED_WORDS.contains(&i.to_string().as_str()) && !ALLOWED_WORDS.contains(&i.to_string().as_str()))
}

// ---------------------------------------------------------------------------- lane-pure locals

/// A binding of the current run that a closed form may name: a uniform one (its slot, `__uni_ID`,
/// kept for the loops that compute the form again), or a lane-pure one (its own closed form, and
/// the slots that names).
enum Closed {
    Slot(usize),
    Form(TokenStream, BTreeSet<usize>),
}

/// `ctx`'s methods whose value is the invocation's own local or global ids: with the workgroup's
/// values, what a lane-pure local may be computed from.
const LANE_METHODS: &[&str] = &["local_id_x", "local_id_y", "local_id_z", "global_id_x", "global_id_y"];

/// `PURE_METHODS` too dear to compute again in each loop rather than load once.
const DEAR_METHODS: &[&str] = &["pow", "powi", "powf", "sqrt", "wrapping_pow", "saturating_pow"];

/// The most tokens a closed form may have (its lane-pure and uniform names written out): beyond
/// that, computing it in each loop that reads it costs more than the load it saves.
const MAX_CLOSED_TOKENS: usize = 96;

impl Lower {
    /// The closed forms (`closed_form`) of an immutable `let`'s names, in the pattern's order:
    /// `let name = value` or `let (a, b) = (value_a, value_b)` (each name its own value), none
    /// for another pattern or a `mut` name.
    fn lane_pure_let(
        &self,
        stmt: &[Tt],
        value: &[Tt],
        count: usize,
        env: &BTreeMap<String, bool>,
        closed: &BTreeMap<String, Closed>,
        scopes: &[Vec<Var>],
    ) -> Vec<Option<(TokenStream, BTreeSet<usize>)>> {
        let form = |v: &[Tt]| self.closed_form(v, env, closed, scopes);
        match (stmt.get(1), value) {
            (Some(Tt::Ident(i)), _) if i.to_string() != "mut" && count == 1 => vec![form(value)],
            (Some(Tt::Group(pat)), [Tt::Group(g)]) if pat.delimiter() == Delimiter::Parenthesis && g.delimiter() == Delimiter::Parenthesis => {
                let names = split_commas(&pat.stream().into_iter().collect::<Vec<_>>());
                let parts = split_commas(&g.stream().into_iter().collect::<Vec<_>>());
                // Each name a plain one (`let_names` dropped `_`s and said which are `mut`), and
                // one value each (`split_commas` may take a `<` for a generic's and join two
                // values, never split one: as many values as names is each name's own).
                let plain = names.iter().all(|n| matches!(n.as_slice(), [Tt::Ident(i)] if i.to_string() != "_"));
                if plain && names.len() == count && parts.len() == count {
                    parts.iter().map(|p| form(p)).collect()
                } else {
                    Vec::new()
                }
            }
            _ => Vec::new(),
        }
    }

    /// A lane-pure `let`'s value written so that any loop over the lanes can compute it again
    /// for its lane, with the slots of the run's uniform locals it names (kept for those loops):
    /// `None` where it may not be. Lane-pure: immutable and computed from the lane's ids only
    /// (`ctx.local_id_x()`, `global_id_*`, `LANE_METHODS`), with what a uniform expression may
    /// name (`uniform_expr`: literals, items, `ctx`'s workgroup values, the pure numeric methods,
    /// `if`/`else`; no call, macro, assignment, memory read or control flow), and only immutable
    /// locals: uniform ones are read from their slots (`__uni_ID`), lane-pure ones written out
    /// in their own closed form, primitive parameters by name (the form is computed first in a
    /// loop, before the loop binds any local of the body: nothing there shadows a parameter). A
    /// `mut` local, a per-lane one, a memory handle, or an item the body declares (another
    /// block's of that name may be the one seen where the form is computed) is refused.
    ///
    /// Each loop that reads the local then computes it from its own lane (`ctx` is that lane's):
    /// the loop's counters, where a `LaneVar` was a load per lane that hid from LLVM that
    /// `t == lane` (a bounds check it could hoist, a loop it could vectorise).
    fn closed_form(
        &self,
        tokens: &[Tt],
        env: &BTreeMap<String, bool>,
        closed: &BTreeMap<String, Closed>,
        scopes: &[Vec<Var>],
    ) -> Option<(TokenStream, BTreeSet<usize>)> {
        let mut needs = BTreeSet::new();
        let form = self.close(tokens, env, closed, scopes, &mut needs)?;
        fn count(s: &TokenStream) -> usize {
            s.clone().into_iter().map(|t| if let Tt::Group(g) = t { 1 + count(&g.stream()) } else { 1 }).sum()
        }
        (count(&form) <= MAX_CLOSED_TOKENS).then_some((form, needs))
    }

    fn close(
        &self,
        tokens: &[Tt],
        env: &BTreeMap<String, bool>,
        closed: &BTreeMap<String, Closed>,
        scopes: &[Vec<Var>],
        needs: &mut BTreeSet<usize>,
    ) -> Option<TokenStream> {
        let slot = |id: usize, span: Span| respan(ts(&format!("unsafe {{ __uni_{id}.get() }}")), span);
        let paren = |s: TokenStream, span: Span| {
            let mut g = Group::new(Delimiter::Parenthesis, s);
            g.set_span(span);
            Tt::Group(g)
        };
        let mut out = TokenStream::new();
        // An `if` whose block has not come yet: the only blocks a closed form may hold are an
        // `if`'s and an `else`'s (another, `Name { field }`, would take a name for a field).
        let mut in_if = false;
        let mut k = 0;
        while k < tokens.len() {
            let t = &tokens[k];
            match t {
                Tt::Ident(i) => {
                    let name = i.to_string();
                    let next = tokens.get(k + 1);
                    let call = matches!(next, Some(Tt::Group(g)) if g.delimiter() == Delimiter::Parenthesis);
                    if k >= 1 && is_punct(&tokens[k - 1], '.') && !(k >= 2 && is_punct(&tokens[k - 2], '.')) {
                        // A field, or a method: a pure one, not too dear.
                        if (call || next.is_some_and(|t| is_punct(t, ':')))
                            && (!PURE_METHODS.contains(&name.as_str()) || DEAR_METHODS.contains(&name.as_str()))
                        {
                            return None;
                        }
                        out.extend([t.clone()]);
                    } else if name == self.ctx {
                        let method = matches!(tokens.get(k + 2), Some(Tt::Ident(m))
                            if WORKGROUP_METHODS.contains(&m.to_string().as_str()) || LANE_METHODS.contains(&m.to_string().as_str()));
                        let no_args = matches!(tokens.get(k + 3), Some(Tt::Group(g)) if g.delimiter() == Delimiter::Parenthesis && g.stream().is_empty());
                        if !(next.is_some_and(|t| is_punct(t, '.')) && method && no_args) {
                            return None;
                        }
                        out.extend(stream(&tokens[k..k + 4]));
                        k += 4;
                        continue;
                    } else if REFUSED_WORDS.contains(&name.as_str()) {
                        return None;
                    } else if ALLOWED_WORDS.contains(&name.as_str()) {
                        in_if |= name == "if";
                        out.extend([t.clone()]);
                    } else {
                        if call || (next.is_some_and(|t| is_punct(t, '!')) && matches!(tokens.get(k + 2), Some(Tt::Group(_)))) {
                            return None;
                        }
                        let path_before = k >= 2 && is_punct(&tokens[k - 1], ':') && is_punct(&tokens[k - 2], ':');
                        let path_after = next.is_some_and(|t| is_punct(t, ':')) && tokens.get(k + 2).is_some_and(|t| is_punct(t, ':'));
                        if path_before {
                            out.extend([t.clone()]);
                        } else if path_after || self.resolve(&name, env, scopes).is_none() {
                            // An item (or a path's first name): refused where the body declares
                            // one of that name.
                            if self.body_items.contains(&name) {
                                return None;
                            }
                            out.extend([t.clone()]);
                        } else if env.contains_key(&name) {
                            match closed.get(&name)? {
                                Closed::Slot(id) => {
                                    needs.insert(*id);
                                    out.extend([paren(slot(*id, i.span()), i.span())]);
                                }
                                Closed::Form(form, n) => {
                                    needs.extend(n.iter().copied());
                                    out.extend([paren(form.clone(), i.span())]);
                                }
                            }
                        } else if let Some(v) = scopes.iter().rev().find_map(|s| s.iter().rev().find(|v| v.name == name)) {
                            match &v.remat {
                                Some(form) => out.extend([paren(form.clone(), i.span())]),
                                None if v.uniform && !v.mutable => out.extend([paren(slot(v.id, i.span()), i.span())]),
                                None => return None,
                            }
                        } else if self.uniform_params.contains(&name) && !self.body_items.contains(&name) {
                            // A parameter by name, unless an item of the body may hide it where
                            // the form is computed again (`const n` in an inner block: nearer
                            // there than the parameter, where fibers computed it from the latter).
                            out.extend([t.clone()]);
                        } else {
                            return None;
                        }
                    }
                }
                Tt::Punct(_) => {
                    let (op, len) = operator(tokens, k);
                    if refused_operator(tokens, k, &op, len) {
                        return None;
                    }
                    out.extend(stream(&tokens[k..k + len]));
                    k += len;
                    continue;
                }
                Tt::Group(g) => {
                    // A call of a value: `(f)(x)`.
                    if g.delimiter() == Delimiter::Parenthesis && k >= 1 && matches!(tokens[k - 1], Tt::Group(_)) {
                        return None;
                    }
                    if g.delimiter() == Delimiter::Brace {
                        if !(in_if || (k >= 1 && is_ident(&tokens[k - 1], "else"))) {
                            return None;
                        }
                        in_if = false;
                    }
                    let inner = self.close(&g.stream().into_iter().collect::<Vec<_>>(), env, closed, scopes, needs)?;
                    let mut n = Group::new(g.delimiter(), inner);
                    n.set_span(g.span());
                    out.extend([Tt::Group(n)]);
                }
                Tt::Literal(_) => out.extend([t.clone()]),
            }
            k += 1;
        }
        Some(out)
    }
}

impl Lower {
    /// A run that is one `if t < bound { .. }` (no `else`), `t` the lane's x id (`ctx.local_id_x()`
    /// or a lane-pure local of just that) and `bound` uniform: the lanes at or past the bound do
    /// nothing in it, so the loop stops there (`lane_loop`), its value computed once before it.
    /// A reduction's tree step (`if t < stride`) then loops over `stride` lanes, not all of them:
    /// LLVM does not split the loop at the condition itself.
    fn lane_bound(&self, stmts: &[Vec<Tt>], scopes: &[Vec<Var>]) -> Option<TokenStream> {
        let [s] = stmts else { return None };
        let s = if s.last().is_some_and(|t| is_punct(t, ';')) { &s[..s.len() - 1] } else { &s[..] };
        let b = s.iter().position(is_brace)?;
        if !is_ident(&s[0], "if") || b + 1 != s.len() {
            return None;
        }
        let cond = &s[1..b];
        let is_x = |t: &[Tt]| {
            matches!(t, [c, d, m, Tt::Group(g)] if is_ident(c, &self.ctx) && is_punct(d, '.') && is_ident(m, "local_id_x")
                && g.delimiter() == Delimiter::Parenthesis && g.stream().is_empty())
        };
        let lt = cond.iter().position(|t| is_punct(t, '<'))?;
        let lane = &cond[..lt];
        let is_lane_x = is_x(lane)
            || matches!(lane, [Tt::Ident(i)] if visible(scopes, &BTreeSet::from([i.to_string()])).first()
                .and_then(|v| v.remat.as_ref()).is_some_and(|f| is_x(&f.clone().into_iter().collect::<Vec<_>>())));
        let bound = &cond[lt + 1..];
        // `t < bound` alone: `<` not joined (`<=`, `<<`), and nothing in `bound` that binds less
        // tightly than `<` (`&&`, `||`, another comparison, a range, an assignment).
        let alone = matches!(&cond[lt], Tt::Punct(p) if p.spacing() == Spacing::Alone);
        let loose = bound.iter().enumerate().any(|(k, t)| {
            matches!(t, Tt::Punct(p) if matches!(p.as_char(), '&' | '|' | '<' | '>' | '=' | '!' | '?')
                || (p.as_char() == '.' && bound.get(k + 1).is_some_and(|n| is_punct(n, '.'))))
        });
        if !is_lane_x || !alone || bound.is_empty() || loose || !self.uniform_expr(bound, &BTreeMap::new(), scopes) {
            return None;
        }
        let mut uses = BTreeSet::new();
        idents(bound, &mut uses);
        let mut value = ts(&format!("let {} = __wg.uniform_ctx();", self.ctx));
        for v in visible(scopes, &uses).iter().filter(|v| v.uniform) {
            value.extend(respan(ts(&format!("let {} = unsafe {{ __uni_{}.get() }};", v.name, v.id)), v.span));
        }
        value.extend([Tt::Group(Group::new(Delimiter::Parenthesis, stream(bound)))]);
        // No lane left: nothing it reads was set, and no lane runs.
        let mut out = ts("if __wg.live()");
        out.extend([Tt::Group(Group::new(Delimiter::Brace, value))]);
        out.extend(ts("else { 0 }"));
        Some(out)
    }
}

/// Which of a run's kept locals (`defined`, those `later` names) are lane-pure, with their closed
/// forms; and the ids of the run's uniform locals those forms read (kept too, whether or not
/// `later` names them). A form that reads a uniform binding the run shadows afterwards (its
/// slot is not the one kept) is refused: that local is kept per lane.
fn lane_pure(
    defined: &[(String, bool, Span, bool)],
    closed: &BTreeMap<String, Closed>,
    ids: &BTreeMap<String, usize>,
    later: &BTreeSet<String>,
) -> (BTreeMap<String, TokenStream>, BTreeSet<usize>) {
    let uniform: BTreeSet<usize> = defined.iter().filter(|d| d.3 && !d.1).map(|d| ids[&d.0]).collect();
    let mut remat = BTreeMap::new();
    let mut needed = BTreeSet::new();
    for (name, ..) in defined.iter().filter(|d| later.contains(&d.0)) {
        if let Some(Closed::Form(form, needs)) = closed.get(name) {
            if needs.is_subset(&uniform) {
                remat.insert(name.clone(), form.clone());
                needed.extend(needs.iter().copied());
            }
        }
    }
    (remat, needed)
}

/// A loop's lane-pure locals, computed from its lane first, all in one `let` (a form may name a
/// parameter that another of them shadows). One that the run names in a loop of its own
/// (`in_loops`) is taken through `LaneType::opaque`: seen as the lane loop's counter inside an
/// inner loop, LLVM's strength reduction gave histogram's counting loop a second multiply per
/// element (its CPU time a launch 5.2 -> 6.1 ms against a kept local; see `loop_idents`).
fn remat_lets(remat: &[Var], in_loops: &BTreeSet<String>) -> TokenStream {
    if remat.is_empty() {
        return TokenStream::new();
    }
    let names: Vec<&str> = remat.iter().map(|v| v.name.as_str()).collect();
    let mut values = TokenStream::new();
    for v in remat {
        let take = if in_loops.contains(&v.name) { "opaque" } else { "value" };
        values.extend(respan(ts(&format!("__rt_{}.{take}", v.id)), v.span));
        let form = v.remat.clone().expect("a lane-pure local");
        values.extend([Tt::Group(Group::new(Delimiter::Parenthesis, form))]);
        values.extend(ts(","));
    }
    let mut out = ts(&format!("let ({},) =", names.join(", ")));
    out.extend([Tt::Group(Group::new(Delimiter::Parenthesis, values))]);
    out.extend(ts(";"));
    out
}

/// Every name in the loops of `tokens` (`while`, `for`, `loop`: their conditions and blocks).
fn loop_idents(tokens: &[Tt]) -> BTreeSet<String> {
    fn walk(tokens: &[Tt], into: &mut BTreeSet<String>) {
        let mut k = 0;
        while k < tokens.len() {
            if ["while", "for", "loop"].iter().any(|w| is_ident(&tokens[k], w)) {
                let end = tokens[k..].iter().position(is_brace).map_or(tokens.len(), |b| k + b + 1);
                idents(&tokens[k..end], into);
                k = end;
                continue;
            }
            if let Tt::Group(g) = &tokens[k] {
                walk(&g.stream().into_iter().collect::<Vec<_>>(), into);
            }
            k += 1;
        }
    }
    let mut names = BTreeSet::new();
    walk(tokens, &mut names);
    names
}

/// Every name the body's items and `use`s declare, in any block (`const K`, `fn f`, `use a::b as
/// c`: every name of a `use`).
fn body_items(tokens: &[Tt]) -> BTreeSet<String> {
    fn walk(tokens: &[Tt], into: &mut BTreeSet<String>) {
        let mut k = 0;
        while k < tokens.len() {
            match &tokens[k] {
                Tt::Ident(i) if i.to_string() == "use" => {
                    while k < tokens.len() && !is_punct(&tokens[k], ';') {
                        idents(&tokens[k..=k], into);
                        k += 1;
                    }
                }
                Tt::Ident(i) if matches!(i.to_string().as_str(), "const" | "static" | "fn" | "struct" | "enum" | "union" | "type" | "trait" | "mod" | "macro_rules") => {
                    let at = if tokens.get(k + 1).is_some_and(|t| is_punct(t, '!')) { k + 2 } else { k + 1 };
                    if let Some(Tt::Ident(n)) = tokens.get(at) {
                        into.insert(n.to_string());
                    }
                }
                Tt::Group(g) => walk(&g.stream().into_iter().collect::<Vec<_>>(), into),
                _ => {}
            }
            k += 1;
        }
    }
    let mut names = BTreeSet::new();
    walk(tokens, &mut names);
    names
}

// ---------------------------------------------------------------------------- subgroup shuffles

/// `ctx`'s shuffle: the lanes of a subgroup exchange values at it.
const SHUFFLE: &str = "subgroup_shuffle_down";

/// `ctx`'s subgroup methods the copy runs (any other `subgroup_*` is refused, by name): the size
/// and the lane's index are plain values, the shuffle is split (`split_shuffle`).
const SUBGROUP_METHODS: &[&str] = &["subgroup_size", "subgroup_invocation_id", SHUFFLE];

/// What a refused shuffle's message says is supported.
const SHUFFLE_SHAPES: &str = "a subgroup shuffle is supported as a statement of its own, `let x = ctx.subgroup_shuffle_down(v, d);`, \
     `x = ctx.subgroup_shuffle_down(v, d);` or `x op= ctx.subgroup_shuffle_down(v, d);`, where a barrier could be (in the body, \
     or the block of a `while` or `if` the workgroup agrees on), with no shuffle or barrier in `v` or `d`; remove #[lanes] to \
     run on fibers";

impl Lower {
    /// The span of the first `ctx.subgroup_shuffle_down` in `tokens` (the method's name), nested
    /// groups included.
    fn find_shuffle(&self, tokens: &[Tt]) -> Option<Span> {
        for (k, t) in tokens.iter().enumerate() {
            if is_ident(t, &self.ctx)
                && !(k > 0 && is_punct(&tokens[k - 1], '.'))
                && tokens.get(k + 1).is_some_and(|t| is_punct(t, '.'))
                && tokens.get(k + 2).is_some_and(|t| is_ident(t, SHUFFLE))
            {
                return Some(tokens[k + 2].span());
            }
            if let Tt::Group(g) = t {
                if let Some(s) = self.find_shuffle(&g.stream().into_iter().collect::<Vec<_>>()) {
                    return Some(s);
                }
            }
        }
        None
    }

    /// `stmt` with a shuffle's put (`split_shuffle`'s `__stash_N.put`) made `put_uniform` where
    /// its `delta` is a uniform expression (`uniform_expr`, with the run's `env` so far), and a
    /// take (`__stash_N.get`) made `get_uniform` where that shuffle's put was (`block` settles
    /// its stash after the barrier between them). Every lane then puts with the same delta, so
    /// `settle` can move the values to their readers' slots in place, with no source per lane,
    /// and `get_uniform` reads what `get` would (the lane `delta` above where it is in the
    /// subgroup and the workgroup, else its own). The put is lowered before its take (the run
    /// before the shuffle's barrier, then the one after), so the take sees the put's decision.
    fn uniform_shuffle(&mut self, stmt: &[Tt], env: &BTreeMap<String, bool>, scopes: &[Vec<Var>]) -> Vec<Tt> {
        fn stash_call(tokens: &[Tt], k: usize, method: &str) -> Option<usize> {
            let Tt::Ident(i) = &tokens[k] else { return None };
            let id = i.to_string().strip_prefix("__stash_")?.parse().ok()?;
            (tokens.get(k + 1).is_some_and(|t| is_punct(t, '.')) && tokens.get(k + 2).is_some_and(|t| is_ident(t, method))).then_some(id)
        }
        fn rewrite(tokens: &[Tt], f: &mut dyn FnMut(&[Tt], usize) -> Option<&'static str>) -> Vec<Tt> {
            let mut out = Vec::with_capacity(tokens.len());
            for (k, t) in tokens.iter().enumerate() {
                match t {
                    Tt::Group(g) => {
                        let inner = rewrite(&g.stream().into_iter().collect::<Vec<_>>(), f);
                        let mut n = Group::new(g.delimiter(), stream(&inner));
                        n.set_span(g.span());
                        out.push(Tt::Group(n));
                    }
                    Tt::Ident(i) if k >= 2 => match f(tokens, k - 2) {
                        Some(name) => out.push(Tt::Ident(Ident::new(name, i.span()))),
                        None => out.push(t.clone()),
                    },
                    _ => out.push(t.clone()),
                }
            }
            out
        }
        let mut decided = Vec::new();
        let out = rewrite(stmt, &mut |tokens, k| {
            if let Some(id) = stash_call(tokens, k, "put") {
                let delta = self.shuffle_deltas.get(&id)?;
                if self.uniform_expr(delta, env, scopes) {
                    decided.push(id);
                    return Some("put_uniform");
                }
            } else if let Some(id) = stash_call(tokens, k, "get") {
                if self.uniform_shuffles.contains(&id) {
                    return Some("get_uniform");
                }
            }
            None
        });
        self.uniform_shuffles.extend(decided);
        out
    }

    /// A statement that is a shuffle (`let x = ctx.subgroup_shuffle_down(v, d);`, `x = ..;`,
    /// `x op= ..;`), as the three steps it is among the lanes: every lane evaluates `v` and `d`
    /// and puts them in the shuffle's `Stash` (declared into `decls`, at the block's top); a
    /// barrier (at the shuffle's name: where the fibers' shuffle waits, the same epoch and the
    /// same divergence reports); every lane takes its source lane's value and finishes the
    /// statement. As on fibers, where `v` and `d` are evaluated first (the operands of a call)
    /// and the rest of these shapes only binds or assigns a name (`x op= ..` on a primitive
    /// evaluates its right side first). `None`: the statement holds no shuffle, or one in the
    /// block of a `while` / `if` (its block is lowered as a block). Any other place of a
    /// shuffle is refused.
    fn split_shuffle(&mut self, stmt: &[Tt], decls: &mut TokenStream) -> Result<Option<Vec<Stmt>>> {
        let Some(at) = self.find_shuffle(stmt) else { return Ok(None) };
        let core: &[Tt] = if stmt.last().is_some_and(|t| is_punct(t, ';')) { &stmt[..stmt.len() - 1] } else { stmt };
        if core.first().is_some_and(|t| is_ident(t, "while") || is_ident(t, "if")) {
            let block = core.iter().position(is_brace).unwrap_or(core.len());
            if let Some(in_cond) = self.find_shuffle(&core[1..block]) {
                return fail(in_cond, SHUFFLE_SHAPES);
            }
            // `else if` conditions are checked when the `else` branch is lowered as a block.
            return Ok(None);
        }
        if attributes_end(core, 0) > 0 {
            return fail(at, SHUFFLE_SHAPES);
        }
        // Where the shuffle call starts: after `let PATTERN[: TYPE] =`, or `name =` / `name op=`.
        let value_at = if core.first().is_some_and(|t| is_ident(t, "let")) {
            (1..core.len()).find(|&k| assignment_op(core, k) == Some(("=".into(), 1))).map(|k| k + 1)
        } else if let (Some(Tt::Ident(_)), Some((_, len))) = (core.first(), assignment_op(core, 1)) {
            Some(1 + len)
        } else {
            None
        };
        let Some(v) = value_at else { return fail(at, SHUFFLE_SHAPES) };
        let call = &core[v..];
        let args = match call {
            [c, dot, m, Tt::Group(g)]
                if is_ident(c, &self.ctx) && is_punct(dot, '.') && is_ident(m, SHUFFLE) && g.delimiter() == Delimiter::Parenthesis =>
            {
                g.stream().into_iter().collect::<Vec<_>>()
            }
            _ => return fail(at, SHUFFLE_SHAPES),
        };
        if self.find_shuffle(&core[..v]).is_some() || self.contains_barrier(&args) {
            return fail(at, SHUFFLE_SHAPES);
        }
        // The two arguments, split at their top-level comma (a trailing one allowed).
        let mut parts: Vec<Vec<Tt>> = vec![Vec::new()];
        for t in &args {
            if is_punct(t, ',') {
                parts.push(Vec::new());
            } else {
                parts.last_mut().expect("one part at least").push(t.clone());
            }
        }
        if parts.last().is_some_and(|p| p.is_empty()) && parts.len() == 3 {
            parts.pop();
        }
        let [value, delta] = &parts[..] else { return fail(at, SHUFFLE_SHAPES) };
        if value.is_empty() || delta.is_empty() {
            return fail(at, SHUFFLE_SHAPES);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.shuffle_deltas.insert(id, delta.clone());
        let stash = format!("__stash_{id}");
        decls.extend(respan(ts(&format!("let mut {stash} = __wg.stash();")), at));
        // The operands as written (their spans kept), in the lane's own statements: no `unsafe`
        // around the user's code.
        let mut put = ts("let __shuffle_value =");
        put.extend([Tt::Group(Group::new(Delimiter::Parenthesis, stream(value)))]);
        put.extend(ts("; let __shuffle_delta: u32 ="));
        put.extend([Tt::Group(Group::new(Delimiter::Parenthesis, stream(delta)))]);
        put.extend(respan(ts(&format!("; unsafe {{ {stash}.put(__lane, __shuffle_value, __shuffle_delta) }}")), at));
        let put = vec![Tt::Group(Group::new(Delimiter::Brace, put))];
        let mut take = core[..v].to_vec();
        take.extend(respan(ts(&format!("unsafe {{ {stash}.get(__lane) }};")), at));
        Ok(Some(vec![Stmt::Plain(put), Stmt::Barrier(at, Some(id)), Stmt::Plain(take)]))
    }
}
