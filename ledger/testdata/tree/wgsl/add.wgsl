// WGSL fixture.
/* outer /* nested */ still a comment */
/* outer
   /* nested
   */
   still comment */
@group(0) @binding(0) var<storage, read_write> a: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
    a[id.x] = a[id.x] * 2.0; // doubled
}
