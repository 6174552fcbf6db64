
// ---------------------------------------------------------------- the whole kernel API, compiled
// Appended to a copy of the reduction example by tests/build/test_kernel_api_compiles.py: one body
// calling every method of `Ctx`, `In`, `Out`, `Shared` and `gpu_kernel::math`, with an entry for
// the host (cpu) and one for rustc's NVPTX backend, so both targets compile (and codegen) it all.
pub const API_BLOCK: usize = 64;

#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub fn api_surface_body(
    ctx: Ctx,
    x: In<f32>,
    xi: In<u32>,
    mut y: Out<f32>,
    mut counts: Out<u32>,
    mut scratch: Shared<f32, API_BLOCK>,
    mut tally: Shared<u32, API_BLOCK>,
) {
    let lid = (ctx.local_id_x() + ctx.local_id_y() + ctx.local_id_z()) % API_BLOCK;
    let group = ctx.group_id_x() + ctx.group_id_y() + ctx.group_id_z() + ctx.group_linear();
    let size = ctx.group_size_x() * ctx.group_size_y() * ctx.num_groups_x() * ctx.num_groups_y();
    let i = ctx.global_id_x() + ctx.global_id_y();
    ctx.trace("i", i);
    let v = x.get(i) + x[i] + xi.get(i) as f32 + xi[i] as f32 + x.get4(0)[0];
    scratch.set(lid, v);
    tally.set(lid, 0);
    ctx.barrier();
    let s = scratch.get(lid) + scratch.get4(0)[1];
    tally.atomic_add(0, 1);
    let lane = ctx.subgroup_invocation_id() + ctx.subgroup_size();
    let shuffled = ctx.subgroup_shuffle_down(s, 1)
        + ctx.subgroup_shuffle_down(lane as u32, 1) as f32
        + ctx.subgroup_shuffle_down(lane as i32, 1) as f32;
    let e = gpu_kernel::math::exp(shuffled)
        + gpu_kernel::math::exp_portable(shuffled)
        + gpu_kernel::math::exp_ex2_scheme(shuffled, |f| f);
    #[cfg(target_arch = "nvptx64")]
    let e = e + gpu_kernel::math::exp_nvptx(shuffled);
    y.set(i, e + y.get(i) + y.get4(0)[2]);
    y[i] += (group + size) as f32;
    y.set4(0, [e; 4]);
    let counted = counts.get(0) + counts[1];
    counts.set(1, counted);
    counts.atomic_add(0, tally.get(0));
}

#[cfg(not(any(target_arch = "nvptx64", target_arch = "spirv")))]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn api_surface_cpu(
    launch: *mut gpu_kernel::host::Launch,
    x: *const f32,
    xi: *const u32,
    y: *mut f32,
    counts: *mut u32,
) {
    let k = unsafe { gpu_kernel::host::Kernel::new(launch) };
    let (x, xi) = unsafe { (k.input(0, x), k.input(1, xi)) };
    let (y, counts) = unsafe { (k.output(2, y), k.output(3, counts)) };
    k.run(|ctx| {
        let scratch = ctx.shared::<f32, API_BLOCK>();
        let tally = ctx.shared::<u32, API_BLOCK>();
        api_surface_body(ctx, x, xi, y, counts, scratch, tally)
    });
}

#[cfg(all(target_arch = "nvptx64", not(feature = "rust-cuda")))]
#[unsafe(no_mangle)]
pub unsafe extern "ptx-kernel" fn api_surface(x: *const f32, xi: *const u32, y: *mut f32, counts: *mut u32) {
    let scratch = gpu_kernel::nvptx_shared!(API_SCRATCH: [f32; API_BLOCK]);
    let tally = gpu_kernel::nvptx_shared!(API_TALLY: [u32; API_BLOCK]);
    unsafe {
        api_surface_body(
            Ctx::new(),
            In::new(x),
            In::new(xi),
            Out::new(y),
            Out::new(counts),
            scratch,
            tally,
        )
    }
}
