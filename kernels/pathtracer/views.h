// Views of a batch: their camera rays and the projection of points back onto their film (for motion vectors).
//
// Three kinds (ViewKind, view_records.h):
//   VIEW_CAMERA       the pipeline's Camera (camera.h's rays, bit for bit): to_world's columns are U, V, W, eye.
//   VIEW_PINHOLE      intrinsics in pixels as vision and robotics code write them, K = [fx 0 cx; 0 fy cy; 0 0 1]:
//                     the film point (u, v) looks along (x, y, 1) = ((u - cx) / fx, (v - cy) / fy, 1) in the
//                     camera's OpenCV frame (x right, y down, z forward).
//   VIEW_ORTHOGRAPHIC the same film coordinates in world units, (x, y) = ((u - cx) / fx, (v - cy) / fy), on the
//                     camera's plane; every ray looks along the camera's forward axis.
// A pose is camera-to-world, 3 rows of 4. In the OpenCV convention its rotation's columns are the camera's x
// (right), y (down) and z (forward) axes; in the OpenGL one they are x (right), y (up) and the backward axis (the
// camera looks along -z): a camera direction (x, y, 1) of OpenCV is (x, -y, -1) there. Rotations are taken to
// be orthonormal (the projection uses the transpose as the inverse).
#pragma once

#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

// A view as a launch uses it: its record with the pose of this launch.
struct View {
    unsigned int kind;
    float flip;    // 1 for OpenCV poses, -1 for OpenGL ones (the sign of the camera's y and z)
    unsigned int world;
    unsigned int seed;
    float fx, fy, cx, cy;
    float m[12];   // camera-to-world rows
    float ray_length;  // how far its camera rays run
};

// View `index` of `records`, with its pose from `poses` (pose_stride floats each) when there are poses.
__forceinline__ __device__ View load_view(const ViewRecord* records, const float* poses, unsigned int stride,
                                          unsigned int index) {
    const ViewRecord& r = records[index];
    View v;
    v.kind = r.kind;
    v.flip = r.convention == POSE_OPENGL ? -1.0f : 1.0f;
    v.world = r.world;
    v.seed = r.seed;
    v.fx = r.fx;
    v.fy = r.fy;
    v.cx = r.cx;
    v.cy = r.cy;
    v.ray_length = r.ray_length;
    const float* m = poses ? poses + static_cast<unsigned long long>(stride) * index : r.to_world;
#pragma unroll
    for (int i = 0; i < 12; ++i) v.m[i] = __ldg(m + i);
    return v;
}

__forceinline__ __device__ float3 view_column(const View& v, int c) {
    return make_float3(v.m[c], v.m[4 + c], v.m[8 + c]);
}

// The rotation applied to a camera-frame vector (x, y, z) given in OpenCV axes.
__forceinline__ __device__ float3 view_rotate(const View& v, float x, float y, float z) {
    const float sy = y * v.flip, sz = z * v.flip;
    return make_float3(v.m[0] * x + v.m[1] * sy + v.m[2] * sz, v.m[4] * x + v.m[5] * sy + v.m[6] * sz,
                       v.m[8] * x + v.m[9] * sy + v.m[10] * sz);
}

// A world vector in the camera's OpenCV axes (the transpose of the rotation, then the convention's signs).
__forceinline__ __device__ float3 view_local(const View& v, float3 d) {
    const float x = v.m[0] * d.x + v.m[4] * d.y + v.m[8] * d.z;
    const float y = v.m[1] * d.x + v.m[5] * d.y + v.m[9] * d.z;
    const float z = v.m[2] * d.x + v.m[6] * d.y + v.m[10] * d.z;
    return make_float3(x, y * v.flip, z * v.flip);
}

struct ViewRay {
    float3 origin;
    float3 direction;  // unit
    float tmax;        // the view's ray length (an orthographic camera's far plane, else 1e16)
};

// The camera ray through the film point (x + jx, y + jy) of a width x height image.
__forceinline__ __device__ ViewRay view_ray(const View& v, unsigned int x, unsigned int y, float jx, float jy,
                                            float scale_x, float scale_y) {
    ViewRay ray;
    ray.tmax = v.ray_length;
    if (v.kind == VIEW_CAMERA) {  // camera.h's PinholeCamera, the same expressions (the same bits)
        const float sx = (static_cast<float>(x) + jx) * scale_x - 1.0f;
        const float sy = 1.0f - (static_cast<float>(y) + jy) * scale_y;
        ray.origin = view_column(v, 3);
        ray.direction = normalize(view_column(v, 2) + view_column(v, 0) * sx + view_column(v, 1) * sy);
        return ray;
    }
    const float a = (static_cast<float>(x) + jx - v.cx) / v.fx;
    const float b = (static_cast<float>(y) + jy - v.cy) / v.fy;
    const float3 eye = view_column(v, 3);
    if (v.kind == VIEW_ORTHOGRAPHIC) {
        ray.origin = eye + view_rotate(v, a, b, 0.0f);
        ray.direction = normalize(view_rotate(v, 0.0f, 0.0f, 1.0f));
    } else {
        ray.origin = eye;
        ray.direction = normalize(view_rotate(v, a, b, 1.0f));
    }
    return ray;
}

// The unit forward axis of a view (its camera-space z, along which depth is measured).
__forceinline__ __device__ float3 view_forward(const View& v) {
    if (v.kind == VIEW_CAMERA) return view_column(v, 2);
    return normalize(view_rotate(v, 0.0f, 0.0f, 1.0f));
}

// Camera-space z of the point at distance t along a camera ray of unit `direction`.
__forceinline__ __device__ float view_depth(const View& v, float t, float3 direction) {
    if (v.kind == VIEW_ORTHOGRAPHIC) return t;
    return t * dot(direction, view_forward(v));
}

// Film position (pixels, x right, y down) of the world point p, or of the direction p when `at_infinity`; false
// when it is behind the view (or a direction seen by an orthographic view, which has no such position).
__forceinline__ __device__ bool view_project(const View& v, float3 p, bool at_infinity, float width, float height,
                                             float2& film) {
    const float3 d = at_infinity ? p : p - view_column(v, 3);
    if (v.kind == VIEW_CAMERA) {
        const float3 u = view_column(v, 0), up = view_column(v, 1), w = view_column(v, 2);
        const float z = dot(d, w);
        if (!(z > 0.0f)) return false;
        const float sx = dot(d, u) / (z * dot(u, u));
        const float sy = dot(d, up) / (z * dot(up, up));
        film = make_float2((sx + 1.0f) * 0.5f * width, (1.0f - sy) * 0.5f * height);
        return true;
    }
    const float3 c = view_local(v, d);
    if (v.kind == VIEW_ORTHOGRAPHIC) {
        if (at_infinity) return false;
        film = make_float2(v.fx * c.x + v.cx, v.fy * c.y + v.cy);
        return true;
    }
    if (!(c.z > 0.0f)) return false;
    film = make_float2(v.fx * (c.x / c.z) + v.cx, v.fy * (c.y / c.z) + v.cy);
    return true;
}

}  // namespace pt
