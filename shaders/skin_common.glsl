// Shared by skinning.vert and skinning_dq.vert: vertex inputs, per-instance world transform,
// outputs, and the final model -> world -> clip step. Included after #version.
//
// INFLUENCE_SETS (1 or 2, #defined by engine/render/shaders.py) is the number of
// JOINTS_n/WEIGHTS_n pairs: 4 or 8 joint influences per vertex.
// Joint indices address the palette of the instance's character:
// palette[gl_InstanceID * u_joint_count + joint].

in vec3 in_position;      // bind pose, mesh space
in vec3 in_normal;
in vec2 in_uv;
in uvec4 in_joints0;
in vec4 in_weights0;
#if INFLUENCE_SETS > 1
in uvec4 in_joints1;
in vec4 in_weights1;
#endif
in mat4 in_world;         // per instance: the character's model -> world transform

uniform mat4 u_view;
uniform mat4 u_projection;
uniform int u_joint_count;

out vec3 v_world_position;
out vec3 v_world_normal;
out vec2 v_uv;

// Vertices whose weights are all zero follow no joint: they keep their bind position (the
// weights were L1-normalised when the mesh was uploaded, so the others sum to 1).
bool unweighted() {
    float total = dot(in_weights0, vec4(1.0));
#if INFLUENCE_SETS > 1
    total += dot(in_weights1, vec4(1.0));
#endif
    return total == 0.0;
}

// Transforms normals like the inverse transpose of m, up to a positive factor (normalised
// later). The cofactor matrix equals det(m) * inverse(transpose(m)): no division, so it stays
// finite for singular m; the sign of the determinant keeps normals outward under mirroring.
mat3 normal_matrix(mat3 m) {
    mat3 cofactor = mat3(cross(m[1], m[2]), cross(m[2], m[0]), cross(m[0], m[1]));
    return determinant(m) < 0.0 ? -cofactor : cofactor;
}

void emit(vec3 skinned_position, vec3 skinned_normal) {
    vec4 world = in_world * vec4(skinned_position, 1.0);
    v_world_position = world.xyz;
    v_world_normal = normalize(normal_matrix(mat3(in_world)) * skinned_normal);
    v_uv = in_uv;
    gl_Position = u_projection * u_view * world;
}
