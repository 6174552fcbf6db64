// out[i] = x[i] * scale + offset for i < n, with every scalar a pipeline-overridable constant,
// and the workgroup size a tunable (`block`) passed as an override too.
override n: u32;
override scale: f32;
override offset_value: f32 = 0.0;
override block: u32 = 64;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;

@compute @workgroup_size(block)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i < n) {
        out[i] = x[i] * scale + offset_value;
    }
}
