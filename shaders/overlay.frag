#version 430 core
// Straight-alpha RGBA texture; the first texture row is the top of the image.
uniform sampler2D image;
uniform vec4 tint;
in vec2 uv;
out vec4 color;

void main() {
    color = texture(image, uv) * tint;
}
