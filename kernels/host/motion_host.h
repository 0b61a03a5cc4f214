// The OptiX stand-in's moving meshes (pathtracer_host.cpp includes it after the kernel, whose MeshMotion records it
// reads): where a mesh's motion keys put a vertex at a ray's time, as OptiX's motion transforms and motion GAS
// interpolate them, linearly between the two keys around the time (clamped to the first and last key), with the
// kernel's own key lookup (oa::motion_key).
#pragma once

// A mesh at one time: its keys' interval and fraction, and for a moving instance the interpolated placement.
struct MovingMesh {
    const void* keys = nullptr;  // null: the mesh is static
    const float* vertex_a = nullptr;
    const float* vertex_b = nullptr;
    float fraction = 0.0f;
    float to_world[12] = {};
    bool placed = false;
};

#ifdef OA_MOTION

inline MovingMesh moving_mesh(unsigned m, float time) {
    MovingMesh out;
    if (!params.scene.motions || params.scene.motions[m].num_keys < 2u) return out;
    const MeshMotion& motion = params.scene.motions[m];
    int key;
    oa::motion_key(time, motion.time_begin, motion.time_end, motion.num_keys, key, out.fraction);
    out.keys = &motion;
    if (motion.vertex_keys) {
        out.vertex_a = reinterpret_cast<const float*>(motion.vertex_keys[key]);
        out.vertex_b = reinterpret_cast<const float*>(motion.vertex_keys[key + 1]);
    }
    const MeshRecord& rec = params.scene.meshes[m];
    if (motion.transforms) {
        const float* a = motion.transforms + 12 * key;
        for (int k = 0; k < 12; ++k) out.to_world[k] = a[k] + (a[12 + k] - a[k]) * out.fraction;
        out.placed = true;
    } else if (rec.flags & MESH_INSTANCED) {
        for (int k = 0; k < 12; ++k) out.to_world[k] = rec.to_world[k];
        out.placed = true;
    }
    return out;
}

// Vertex `i` of a moving mesh in world space at the mesh's time.
inline void moving_corner(const MeshRecord& rec, const MovingMesh& moving, unsigned i, double out[3]) {
    float p[3] = {rec.vertices[3u * i], rec.vertices[3u * i + 1u], rec.vertices[3u * i + 2u]};
    if (moving.vertex_a) {
        for (int k = 0; k < 3; ++k) {
            const float a = moving.vertex_a[3u * i + k], b = moving.vertex_b[3u * i + k];
            p[k] = a + (b - a) * moving.fraction;
        }
    }
    if (!moving.placed) {
        out[0] = p[0], out[1] = p[1], out[2] = p[2];
        return;
    }
    const float* m = moving.to_world;
    for (int r = 0; r < 3; ++r) {
        out[r] = static_cast<double>(m[4 * r]) * p[0] + static_cast<double>(m[4 * r + 1]) * p[1] +
                 static_cast<double>(m[4 * r + 2]) * p[2] + m[4 * r + 3];
    }
}

#else

inline MovingMesh moving_mesh(unsigned, float) { return MovingMesh{}; }
inline void moving_corner(const MeshRecord&, const MovingMesh&, unsigned, double*) {}

#endif
