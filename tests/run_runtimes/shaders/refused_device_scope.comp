// A valid Vulkan 1.2 compute shader that naga refuses: the device-scope atomic store under the
// Vulkan memory model makes glslang emit `OpCapability VulkanMemoryModelDeviceScope`, which naga's
// SPIR-V frontend does not support ("unsupported capability VulkanMemoryModelDeviceScope"), the same
// refusal seen on a real rust-gpu module (see ../shared/data/rust-gpu-spirv/README.md).
#version 450
#extension GL_KHR_memory_scope_semantics : require
#pragma use_vulkan_memory_model
layout(local_size_x = 1) in;
layout(std430, set = 0, binding = 0) buffer Data { uint data[]; };
void main() {
    atomicStore(data[gl_GlobalInvocationID.x], 1u, gl_ScopeDevice, gl_StorageSemanticsBuffer,
                gl_SemanticsRelease);
}
