// The launch's camera: primary rays from image positions, pinhole or orthographic.
#pragma once

#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

// A camera ray: where it starts, its unit direction, and how far it runs (the far plane of an orthographic
// camera; 1e16, as every other ray of a path, without one).
struct CameraRay {
    float3 origin;
    float3 direction;
    float tmax;
};

// The launch's camera (eye, cam_u, cam_v, cam_w, orthographic and ray_length of the parameters), with the pixel
// size in image coordinates worked out once per pixel rather than once per sample. Image coordinates (sx, sy) run
// over [-1, 1] across the view, which cam_u and cam_v span: a pinhole camera's rays leave the eye towards
// cam_w + sx cam_u + sy cam_v; an orthographic camera's rays run along cam_w from the point eye + sx cam_u +
// sy cam_v of its near plane (the host puts the eye there, and cam_u and cam_v are the view's half extents).
struct LaunchCamera {
    const PathTracerParams& P;
    float scale_x;  // 2 / width
    float scale_y;  // 2 / height

    __forceinline__ __device__ float3 origin() const { return P.eye; }

    // Unit direction of the pinhole ray through the point (x + jx, y + jy) of the image, in pixels: x rightwards
    // from the left edge, y downwards from the top one (rows are stored top row first).
    __forceinline__ __device__ float3 direction(unsigned int x, unsigned int y, float jx, float jy) const {
        const float sx = (static_cast<float>(x) + jx) * scale_x - 1.0f;
        const float sy = 1.0f - (static_cast<float>(y) + jy) * scale_y;
        return normalize(P.cam_w + P.cam_u * sx + P.cam_v * sy);
    }

    // The ray through the point (x + jx, y + jy) of the image.
    __forceinline__ __device__ CameraRay ray(unsigned int x, unsigned int y, float jx, float jy) const {
        if (P.orthographic) {
            const float sx = (static_cast<float>(x) + jx) * scale_x - 1.0f;
            const float sy = 1.0f - (static_cast<float>(y) + jy) * scale_y;
            return CameraRay{P.eye + P.cam_u * sx + P.cam_v * sy, P.cam_w, P.ray_length};
        }
        return CameraRay{origin(), direction(x, y, jx, jy), P.ray_length};
    }
};

__forceinline__ __device__ LaunchCamera launch_camera(const PathTracerParams& P) {
    return LaunchCamera{P, 2.0f / static_cast<float>(P.width), 2.0f / static_cast<float>(P.height)};
}

}  // namespace pt
