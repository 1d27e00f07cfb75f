#version 430 core
// Debug lines: world-space endpoints with a colour each.
in vec3 in_position;
in vec4 in_color;

uniform mat4 u_view;
uniform mat4 u_projection;

out vec4 v_color;

void main() {
    v_color = in_color;
    gl_Position = u_projection * u_view * vec4(in_position, 1.0);
}
