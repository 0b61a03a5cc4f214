// The pinhole camera: primary rays from image positions.
#pragma once

#include "pathtracer/records.h"
#include "pathtracer/vec_math.h"

namespace pt {

// The launch's camera (eye, cam_u, cam_v, cam_w of the parameters), with the pixel size in image coordinates
// worked out once per pixel rather than once per sample. Image coordinates run over [-1, 1] across the view,
// which cam_u and cam_v span.
struct PinholeCamera {
    const PathTracerParams& P;
    float scale_x;  // 2 / width
    float scale_y;  // 2 / height

    __forceinline__ __device__ float3 origin() const { return P.eye; }

    // Unit direction through the point (x + jx, y + jy) of the image, in pixels: x rightwards from the left
    // edge, y downwards from the top one (rows are stored top row first).
    __forceinline__ __device__ float3 direction(unsigned int x, unsigned int y, float jx, float jy) const {
        const float sx = (static_cast<float>(x) + jx) * scale_x - 1.0f;
        const float sy = 1.0f - (static_cast<float>(y) + jy) * scale_y;
        return normalize(P.cam_w + P.cam_u * sx + P.cam_v * sy);
    }
};

__forceinline__ __device__ PinholeCamera pinhole_camera(const PathTracerParams& P) {
    return PinholeCamera{P, 2.0f / static_cast<float>(P.width), 2.0f / static_cast<float>(P.height)};
}

}  // namespace pt
