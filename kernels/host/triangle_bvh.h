// The OptiX stand-in's triangles: a bounding volume hierarchy over the world-space triangles of the static meshes
// (pathtracer_host.cpp includes it after world_corner() and accepted(), which it uses).
//
// The hierarchy only prunes: a leaf's triangles are intersected by the same double-precision Moller-Trumbore test
// on the same world-space corners (computed once, by world_corner) as a loop over every triangle would, and the
// boxes are grown by a margin far above the test's rounding, so no hit the loop finds is lost. Of several hits at
// the same distance the one of the highest (mesh, primitive) wins, which is the one the loop in mesh and primitive
// order keeps: the hierarchy gives the loop's pixels, bit for bit, in O(log n) per ray instead of O(n).
//
// It is built when a launch sees meshes different from the last launch's: a 64-bit fingerprint of the mesh
// records, their triangle counts, indices and vertices is compared (a few ms for a million triangles). Moving
// meshes (motion keys) are not in it: pathtracer_host.cpp loops over their triangles at the ray's time. Built with
// OA_HOST_NO_BVH there is no tree and every ray tests every triangle (the tests' reference).
#pragma once

#include <algorithm>
#include <cstring>
#include <vector>

#include "median_split.h"

namespace host_bvh {

using Bounds = host_split::Box;

struct Node {
    Bounds box;
    unsigned child = 0u, first = 0u, count = 0u;  // count 0: an inner node with children child and child + 1
    int axis = 0;                                 // an inner node's split: child holds the lower centres
};

struct Tree {
    std::vector<Node> nodes;
    std::vector<unsigned> order;                 // triangle slots in leaf order
    std::vector<unsigned long long> keys;        // slot -> (mesh << 32) | primitive
    std::vector<double> corners;                 // slot -> 9 doubles: the world-space corners a, b, c
    unsigned long long fingerprint = 0ull;
    bool built = false;
};

inline Tree g_tree;

// FNV-1a over bytes, continued from `h`.
inline unsigned long long mix_bytes(unsigned long long h, const void* data, size_t size) {
    const unsigned char* p = static_cast<const unsigned char*>(data);
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        unsigned long long word;
        std::memcpy(&word, p + i, 8);
        h = (h ^ word) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < size; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

inline Bounds empty_bounds() { return host_split::empty_box(); }

using host_split::build_node;

// Whether the ray o + t d meets the box for some t in [tmin, tmax].
inline bool meets(const Bounds& box, const double o[3], const double inv[3], double tmin, double tmax) {
    for (int k = 0; k < 3; ++k) {
        double t0 = (box.low[k] - o[k]) * inv[k], t1 = (box.high[k] - o[k]) * inv[k];
        if (t0 > t1) std::swap(t0, t1);
        if (!(t0 <= t1)) {  // NaN: the ray is parallel to the slab and starts on its plane (0 * inf)
            if (o[k] < box.low[k] || o[k] > box.high[k]) return false;
            continue;
        }
        tmin = std::max(tmin, t0);
        tmax = std::min(tmax, t1);
        if (tmin > tmax) return false;
    }
    return true;
}

}  // namespace host_bvh

// The fingerprint of the static meshes of the launch's scene (records, counts, indices, vertices).
static unsigned long long static_mesh_fingerprint() {
    unsigned long long h = host_bvh::mix_bytes(0xcbf29ce484222325ull, &g_num_meshes, sizeof(g_num_meshes));
    for (unsigned m = 0; m < g_num_meshes; ++m) {
        const MeshRecord& rec = params.scene.meshes[m];
        const unsigned n = g_triangle_counts[m];
        h = host_bvh::mix_bytes(h, &n, sizeof(n));
        h = host_bvh::mix_bytes(h, &rec, sizeof(rec));
        if (!n) continue;
        h = host_bvh::mix_bytes(h, rec.indices, sizeof(unsigned) * 3u * n);
        unsigned vertices = 0u;
        for (unsigned k = 0; k < 3u * n; ++k) vertices = std::max(vertices, rec.indices[k] + 1u);
        h = host_bvh::mix_bytes(h, rec.vertices, sizeof(float) * 3u * vertices);
    }
    return h;
}

// Builds the hierarchy over the static meshes' triangles, unless the last launch's still fits them.
static void prepare_triangles() {
    host_bvh::Tree& tree = host_bvh::g_tree;
#ifdef OA_HOST_NO_BVH
    tree = host_bvh::Tree{};  // every triangle tested by every ray (the reference the tests compare the tree with)
    return;
#endif
    const unsigned long long fingerprint = static_mesh_fingerprint();
    if (tree.built && tree.fingerprint == fingerprint) return;
    tree = host_bvh::Tree{};
    std::vector<host_bvh::Bounds> boxes;
    for (unsigned m = 0; m < g_num_meshes; ++m) {
        const MeshRecord& rec = params.scene.meshes[m];
        if (moving_mesh(m, 0.0f).keys) continue;  // traced at the ray's time, triangle by triangle
        for (unsigned f = 0; f < g_triangle_counts[m]; ++f) {
            double c[9];
            for (unsigned v = 0; v < 3u; ++v) world_corner(rec, rec.indices[3u * f + v], c + 3u * v);
            host_bvh::Bounds box = host_bvh::empty_bounds();
            double size = 0.0;
            for (int a = 0; a < 3; ++a) {
                box.low[a] = std::min({c[a], c[3 + a], c[6 + a]});
                box.high[a] = std::max({c[a], c[3 + a], c[6 + a]});
                size = std::max({size, std::abs(box.low[a]), std::abs(box.high[a])});
            }
            const double margin = 1e-7 * size + 1e-30;  // far above the rounding of the hit test
            for (int a = 0; a < 3; ++a) box.low[a] -= margin, box.high[a] += margin;
            tree.keys.push_back((static_cast<unsigned long long>(m) << 32) | f);
            tree.corners.insert(tree.corners.end(), c, c + 9);
            boxes.push_back(box);
        }
    }
    const unsigned count = static_cast<unsigned>(boxes.size());
    tree.order.resize(count);
    for (unsigned i = 0; i < count; ++i) tree.order[i] = i;
    tree.nodes.reserve(2u * count + 1u);
    tree.nodes.resize(1u);
    if (count) host_bvh::build_node(tree, boxes, 0u, 0u, count);
    tree.fingerprint = fingerprint;
    tree.built = true;
}

// The Moller-Trumbore test of the triangle with corners a, b, c (world space, double): t, u, v of a hit.
static inline bool triangle_hit(const double* a, const double* b, const double* c, const double o[3],
                                const double d[3], double& t, double& u, double& v) {
    const double e1x = b[0] - a[0], e1y = b[1] - a[1], e1z = b[2] - a[2];
    const double e2x = c[0] - a[0], e2y = c[1] - a[1], e2z = c[2] - a[2];
    const double px = d[1] * e2z - d[2] * e2y, py = d[2] * e2x - d[0] * e2z, pz = d[0] * e2y - d[1] * e2x;
    const double det = e1x * px + e1y * py + e1z * pz;
    if (det == 0.0) return false;
    const double inv = 1.0 / det;
    const double sx = o[0] - a[0], sy = o[1] - a[1], sz = o[2] - a[2];
    u = (sx * px + sy * py + sz * pz) * inv;
    if (u < 0.0 || u > 1.0) return false;
    const double qx = sy * e1z - sz * e1y, qy = sz * e1x - sx * e1z, qz = sx * e1y - sy * e1x;
    v = (d[0] * qx + d[1] * qy + d[2] * qz) * inv;
    if (v < 0.0 || u + v > 1.0) return false;
    t = (e2x * qx + e2y * qy + e2z * qz) * inv;
    return true;
}

// A candidate at distance t replaces the best so far (`key` the best's (mesh, primitive), `has` whether there is
// one): nearer, or as near and later in mesh and primitive order (the one a loop in that order keeps).
static inline bool better(double t, unsigned long long key, double best, unsigned long long best_key, bool has) {
    return t < best || (t == best && (!has || key > best_key));
}
