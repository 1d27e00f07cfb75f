#version 430 core
// A screen-space textured rectangle for text and UI overlays (pixel coordinates, origin top-left).
uniform vec2 screen_size;
uniform vec4 rect;  // x, y, width, height in pixels
in vec2 corner;     // (0, 0) .. (1, 1)
out vec2 uv;

void main() {
    vec2 pixel = rect.xy + corner * rect.zw;
    vec2 ndc = vec2(pixel.x / screen_size.x * 2.0 - 1.0, 1.0 - pixel.y / screen_size.y * 2.0);
    uv = corner;
    gl_Position = vec4(ndc, 0.0, 1.0);
}
