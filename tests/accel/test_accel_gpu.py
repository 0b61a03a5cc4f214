"""GAS, IAS, compaction and refit checked ray by ray against the numpy reference in ``reference.py``.

OptiX intersects in float32 and the reference in float64, so rays whose closest hit is too close to call are
left out of the comparison: those within 1e-4 (barycentric) or a small distance of a triangle edge, those whose
two nearest hits are within 1e-5 relative of each other, those with a hit near tmin or tmax, and those that
meet the plane of their nearest hit at a grazing angle (where t is ill-conditioned). At least 95%
of the rays must remain, and every remaining ray must agree exactly: hit or miss, primitive index, instance
id, and ``t`` within 1e-4 relative.
"""

from __future__ import annotations

import numpy as np
import pytest
from reference import ambiguous_rays, cast_reference, transform_points

from optixasync.accel import AccelOptions, GeometryAccel, Instance, InstanceAccel, RayCaster, TriangleInput
from optixasync.cuda import spin_gpu

pytestmark = pytest.mark.gpu

BARY_MARGIN = 1e-4  # nearest hit this close (barycentric) to an edge: either answer is right
T_AMBIGUOUS = 1e-5  # two nearest hits this close (relative): either may win
EDGE_MARGIN = 2e-5  # ray this close to an edge, relative to the scene's extent (float32 rounding is ~1e-7)
MIN_COS = 2e-3  # rays nearly parallel to the plane they hit: t moves a lot with the least rounding of the corners
T_TOLERANCE = 1e-4  # relative agreement of t
MIN_CLEAR = 0.95  # share of rays that must remain after leaving out the ambiguous ones
NUM_RAYS = 4096


# --- scenes ---------------------------------------------------------------------------------------------------------


def random_mesh(rng: np.random.Generator, num_triangles: int = 2000, size: float = 0.04):
    """Small random triangles scattered in [-1, 1]^3, stored in a shuffled vertex order so the indices matter."""
    centres = rng.uniform(-0.95, 0.95, (num_triangles, 1, 3))
    corners = (centres + rng.normal(0.0, size, (num_triangles, 3, 3))).reshape(-1, 3).astype(np.float32)
    order = rng.permutation(len(corners))
    vertices = np.ascontiguousarray(corners[order])
    indices = np.argsort(order).reshape(-1, 3).astype(np.int32)  # vertices[indices[i, k]] == corners[3 i + k]
    return vertices, indices


def random_rays(rng: np.random.Generator, world_triangles: np.ndarray, count: int = NUM_RAYS, radius: float = 3.0):
    """Rays from a sphere of ``radius`` around the box: half toward random points on random triangles (mostly
    hits), half toward random points in the box (mostly misses). Directions are not normalised: the target is
    at t = 1."""
    origins = rng.normal(size=(count, 3))
    origins *= radius / np.linalg.norm(origins, axis=1, keepdims=True)
    targets = rng.uniform(-1.0, 1.0, (count, 3))
    aimed = rng.random(count) < 0.5
    chosen = world_triangles[rng.integers(0, len(world_triangles), count)]  # (count, 3 corners, 3)
    on_triangle = np.einsum("rk,rkj->rj", rng.dirichlet(np.ones(3), count), chosen)
    targets[aimed] = on_triangle[aimed]
    return origins.astype(np.float32), (targets - origins).astype(np.float32)


def triangles_of(vertices: np.ndarray, indices: np.ndarray, transform: np.ndarray | None = None) -> np.ndarray:
    world = np.asarray(vertices, np.float64) if transform is None else transform_points(vertices, transform)
    return world[indices]


def rotation_z(degrees: float, translation=(0.0, 0.0, 0.0)) -> np.ndarray:
    a = np.radians(degrees)
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0, translation[0]], [s, c, 0, translation[1]], [0, 0, 1, translation[2]]], np.float32)


def translation(x: float, y: float, z: float) -> np.ndarray:
    transform = np.eye(3, 4, dtype=np.float32)
    transform[:, 3] = (x, y, z)
    return transform


# --- comparison -----------------------------------------------------------------------------------------------------


def describe_rays(rays: np.ndarray, gpu: dict, ref: dict, limit: int = 8) -> str:
    lines = []
    for r in rays[:limit]:
        lines.append(
            f"  ray {r}: gpu hit={gpu['hit'][r]} prim={gpu['prim'][r]} inst={gpu['inst'][r]} t={gpu['t'][r]!r}; "
            f"reference hit={ref['hit'][r]} prim={ref['prim'][r]} inst={ref['inst'][r]} t={ref['t'][r]!r} "
            f"bary={ref['bary'][r]:.3g} edge_distance={ref['edge_distance'][r]:.3g} t_second={ref['t_second'][r]:.9g}"
        )
    return "\n".join(lines)


def check_layout(gpu: dict, count: int) -> None:
    assert gpu["t"].dtype == np.float32 and gpu["t"].shape == (count,)
    assert gpu["prim"].dtype == np.int32 and gpu["prim"].shape == (count,)
    assert gpu["inst"].dtype == np.int32 and gpu["inst"].shape == (count,)
    assert gpu["hit"].dtype == bool and gpu["hit"].shape == (count,)
    np.testing.assert_array_equal(gpu["hit"], gpu["prim"] >= 0)
    miss = ~gpu["hit"]
    assert (gpu["t"][miss] == -1).all() and (gpu["prim"][miss] == -1).all() and (gpu["inst"][miss] == -1).all()
    assert (gpu["t"][gpu["hit"]] >= 0).all()


def assert_hits_match(gpu: dict, ref: dict, scale: float, *, check_inst: bool = False,
                      hit_share: tuple[float, float] = (0.3, 0.95)) -> np.ndarray:
    """Compare GPU hits with the reference on every unambiguous ray; return the mask of those rays."""
    count = len(ref["hit"])
    check_layout(gpu, count)
    clear = ~ambiguous_rays(ref, bary_margin=BARY_MARGIN, t_rel=T_AMBIGUOUS, edge_margin=EDGE_MARGIN * scale,
                            min_cos=MIN_COS)
    assert clear.mean() >= MIN_CLEAR, f"only {clear.sum()} of {count} rays are unambiguous"
    hits = clear & ref["hit"]
    share = hits.sum() / clear.sum()
    assert hit_share[0] < share < hit_share[1], f"the scene should give a mix of hits and misses, got {share:.3f} hits"

    wrong_hit = np.flatnonzero(clear & (gpu["hit"] != ref["hit"]))
    assert len(wrong_hit) == 0, f"{len(wrong_hit)} rays hit on one side only:\n{describe_rays(wrong_hit, gpu, ref)}"
    wrong_prim = np.flatnonzero(hits & (gpu["prim"] != ref["prim"]))
    assert len(wrong_prim) == 0, f"{len(wrong_prim)} rays hit another primitive:\n{describe_rays(wrong_prim, gpu, ref)}"
    if check_inst:
        wrong_inst = np.flatnonzero(hits & (gpu["inst"] != ref["inst"]))
        assert len(wrong_inst) == 0, (
            f"{len(wrong_inst)} rays hit another instance:\n{describe_rays(wrong_inst, gpu, ref)}"
        )
    rel = np.abs(gpu["t"][hits].astype(np.float64) - ref["t"][hits]) / ref["t"][hits]
    bad_t = np.flatnonzero(hits)[rel > T_TOLERANCE]
    assert len(bad_t) == 0, f"{len(bad_t)} rays have t off by over {T_TOLERANCE}:\n{describe_rays(bad_t, gpu, ref)}"
    return clear


def assert_identical(before: dict, after: dict) -> None:
    """Bitwise the same hits."""
    np.testing.assert_array_equal(after["t"].view(np.uint32), before["t"].view(np.uint32))
    for key in ("prim", "inst", "hit"):
        np.testing.assert_array_equal(after[key], before[key], err_msg=key)


def extent(*arrays: np.ndarray) -> float:
    return float(max(np.abs(a).max() for a in arrays))


@pytest.fixture(scope="module")
def caster(ctx):
    return RayCaster(ctx)


@pytest.fixture
def no_gpu_work(ctx, monkeypatch):
    """Make any upload or device allocation through ``ctx`` fail the test (patched until the test ends)."""

    def refuse(*args, **kwargs):
        raise AssertionError("GPU work was started for an invalid input")

    def apply():
        monkeypatch.setattr(ctx, "upload", refuse)
        monkeypatch.setattr(ctx.memory, "alloc", refuse)
        monkeypatch.setattr(ctx.memory, "empty", refuse)

    return apply


# --- a random mesh in one GAS ---------------------------------------------------------------------------------------


def test_random_mesh_matches_reference(ctx, caster):
    rng = np.random.default_rng(11)
    vertices, indices = random_mesh(rng)
    origins, directions = random_rays(rng, triangles_of(vertices, indices))
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices))
    assert isinstance(gas.handle, int) and gas.handle != 0
    assert gas.nbytes > 0

    gpu = caster.cast(gas.handle, origins, directions)
    ref = cast_reference(vertices, indices, origins, directions)
    assert_hits_match(gpu, ref, extent(origins, vertices))
    # a bare GAS has no instance: OptiX reports ~0 as the instance id, which the caster returns as -1
    assert (gpu["inst"][gpu["hit"]] == -1).all(), np.unique(gpu["inst"][gpu["hit"]])

    # the structure itself instead of its handle: the same launch, the same answers
    assert_identical(gpu, caster.cast(gas, origins, directions))
    assert gas.build_ms is not None and gas.build_ms >= 0.0  # the cast waited, so the build's time is known
    assert gas.refit_ms is None


def test_random_mesh_within_an_interval(ctx, caster):
    rng = np.random.default_rng(12)
    vertices, indices = random_mesh(rng)
    origins, directions = random_rays(rng, triangles_of(vertices, indices))
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(prefer="fast_build"))
    tmin, tmax = np.float32(0.75), np.float32(0.95)  # targets are at t = 1, the box is entered near t = 0.6
    gpu = caster.cast(gas, origins, directions, tmin=float(tmin), tmax=float(tmax))
    ref = cast_reference(vertices, indices, origins, directions, tmin=float(tmin), tmax=float(tmax))
    clear = assert_hits_match(gpu, ref, extent(origins, vertices), hit_share=(0.1, 0.9))
    hit = gpu["hit"] & clear
    assert (gpu["t"][hit] >= tmin).all() and (gpu["t"][hit] <= tmax).all()
    # without the interval some of these rays hit something nearer
    unbounded = cast_reference(vertices, indices, origins, directions)
    assert (unbounded["hit"] & ~ref["hit"]).sum() > 0.1 * len(origins)


# --- compaction -----------------------------------------------------------------------------------------------------


def test_compaction_never_changes_a_hit(ctx, caster):
    rng = np.random.default_rng(21)
    vertices, indices = random_mesh(rng)
    origins, directions = random_rays(rng, triangles_of(vertices, indices))
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_compaction=True))
    original = gas.nbytes
    assert not gas.compacted

    before = caster.cast(gas, origins, directions)
    assert_hits_match(before, cast_reference(vertices, indices, origins, directions), extent(origins, vertices))
    size = gas.compacted_size  # the cast waited for the stream, so the emitted size has arrived
    assert isinstance(size, int) and 0 < size <= original

    assert gas.compact(wait=True) is True
    assert gas.compacted
    assert gas.nbytes == gas.compacted_size == size
    assert gas.nbytes <= original
    assert gas.handle != 0

    after = caster.cast(gas, origins, directions)
    assert_identical(before, after)
    after_by_handle = caster.cast(gas.handle, origins, directions)
    assert_identical(before, after_by_handle)
    # compacting again has nothing left to do
    assert gas.compact(wait=True) is False
    assert gas.compact() is False
    assert gas.nbytes == size


def test_compaction_does_not_wait_for_the_size(ctx, caster):
    rng = np.random.default_rng(22)
    vertices, indices = random_mesh(rng, 500)
    origins, directions = random_rays(rng, triangles_of(vertices, indices), 1024)
    spin_gpu(300_000_000, ctx.stream)  # 300 ms of earlier work on the build stream
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_compaction=True))
    original = gas.nbytes
    # the build has not run yet: nothing is known, and compact() without waiting declines
    assert gas.compacted_size is None
    assert gas.build_ms is None
    assert gas.compact() is False
    assert not gas.compacted and gas.nbytes == original

    assert gas.compact(wait=True) is True  # waits for the size, then compacts
    assert gas.compacted and gas.nbytes == gas.compacted_size <= original
    gpu = caster.cast(gas, origins, directions)
    assert_hits_match(gpu, cast_reference(vertices, indices, origins, directions), extent(origins, vertices))
    assert gas.build_ms is not None and gas.build_ms >= 0.0


def test_deferred_compaction_once_the_size_is_known(ctx, caster):
    rng = np.random.default_rng(23)
    vertices, indices = random_mesh(rng, 800)
    origins, directions = random_rays(rng, triangles_of(vertices, indices), 1024)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_compaction=True, allow_update=True))
    before = caster.cast(gas, origins, directions)  # waits: the size has arrived by now
    assert gas.compacted_size is not None
    assert gas.compact() is True  # no wait needed
    assert gas.compacted and gas.nbytes == gas.compacted_size
    assert_identical(before, caster.cast(gas, origins, directions))


# --- refit ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("source", ["host", "device"])
def test_refit_follows_the_moved_vertices(ctx, caster, source):
    rng = np.random.default_rng(31 if source == "host" else 32)
    vertices, indices = random_mesh(rng)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_update=True))
    handle = gas.handle
    origins, directions = random_rays(rng, triangles_of(vertices, indices))
    before = caster.cast(gas, origins, directions)
    assert_hits_match(before, cast_reference(vertices, indices, origins, directions), extent(origins, vertices))
    assert gas.refit_ms is None

    # translate everything and jitter every vertex a little
    shift = np.array([0.3, -0.2, 0.1], np.float32)
    moved = (vertices + shift + rng.normal(0, 0.002, vertices.shape)).astype(np.float32)
    gas.refit(ctx.upload(moved) if source == "device" else moved)
    assert gas.handle == handle  # updated in place
    origins, directions = random_rays(rng, triangles_of(moved, indices))
    gpu = caster.cast(gas, origins, directions)
    ref = cast_reference(moved, indices, origins, directions)
    assert_hits_match(gpu, ref, extent(origins, moved))
    assert gas.refit_ms is not None and gas.refit_ms >= 0.0
    # the old positions are gone: those rays no longer see the mesh as it was
    stale = cast_reference(vertices, indices, origins, directions)
    assert (stale["prim"] != ref["prim"]).mean() > 0.3


def test_refit_after_a_large_deformation_is_still_exact(ctx, caster):
    """Refitted trees can be poor (boxes grow, nothing is re-sorted); the hits must not suffer."""
    rng = np.random.default_rng(33)
    vertices, indices = random_mesh(rng)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_update=True, prefer="fast_build"))
    owner = np.empty(len(vertices), np.int64)  # the triangle each vertex belongs to
    owner[indices] = np.arange(len(indices))[:, None]
    for step in range(3):
        # swirl about z, squash in z, and scatter the triangles: neighbours in the tree drift apart
        current = transform_points(vertices, rotation_z(40.0 * (step + 1))) * np.array([1.0, 1.0, 0.5])
        current = (current + rng.normal(0, 0.05, (len(indices), 3))[owner]).astype(np.float32)
        gas.refit(current)
        origins, directions = random_rays(rng, triangles_of(current, indices))
        gpu = caster.cast(gas, origins, directions)
        assert_hits_match(gpu, cast_reference(current, indices, origins, directions), extent(origins, current))


def test_refit_into_the_original_positions_gives_the_original_hits(ctx, caster):
    rng = np.random.default_rng(34)
    vertices, indices = random_mesh(rng, 1000)
    origins, directions = random_rays(rng, triangles_of(vertices, indices), 2048)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_update=True))
    ref = cast_reference(vertices, indices, origins, directions)
    first = caster.cast(gas, origins, directions)
    assert_hits_match(first, ref, extent(origins, vertices))
    gas.refit((vertices * np.float32(0.5)).astype(np.float32))
    gas.refit(vertices.copy())
    assert_hits_match(caster.cast(gas, origins, directions), ref, extent(origins, vertices))


def test_rebuild_every_k_refits(ctx, caster):
    """The refit policy: after K refits the next one rebuilds (new handle, no longer compacted), hits stay exact."""
    rng = np.random.default_rng(35)
    vertices, indices = random_mesh(rng, 1000)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices),
                        AccelOptions(allow_update=True, allow_compaction=True, rebuild_every=2))
    assert gas.compact(wait=True)
    handles, kinds = [gas.handle], []
    for step in range(6):
        current = (vertices + np.float32(0.05 * (step + 1)) + rng.normal(0, 0.01, vertices.shape)).astype(np.float32)
        gas.refit(current)
        kinds.append("rebuild" if gas.handle != handles[-1] else "refit")
        handles.append(gas.handle)
        origins, directions = random_rays(rng, triangles_of(current, indices), 2048)
        gpu = caster.cast(gas, origins, directions)
        assert_hits_match(gpu, cast_reference(current, indices, origins, directions), extent(origins, current))
        if kinds[-1] == "rebuild":
            assert not gas.compacted
            assert gas.compact(wait=True)  # a rebuilt structure compacts again (another handle)
            handles[-1] = gas.handle
    assert kinds == ["refit", "refit", "rebuild", "refit", "refit", "rebuild"]
    assert (gas.refits, gas.rebuilds) == (6, 2)


def test_ias_rebuild_over_a_rebuilt_gas(ctx, caster):
    """Rebuilding replaces buffers while earlier traces may still run: the old ones are held, not freed."""
    rng = np.random.default_rng(42)
    vertices, indices, placements, origins, directions, scale = ias_scene(rng)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_update=True, rebuild_every=1))
    ias = InstanceAccel(ctx, [Instance(gas, transform=tr, instance_id=iid) for tr, iid in placements])
    gas.refit(vertices.copy())  # an update
    gas.refit(vertices.copy())  # the policy's rebuild: a new handle, which the IAS must pick up
    ias.rebuild()
    gpu = caster.cast(ias, origins, directions)
    ref = cast_reference(vertices, indices, origins, directions, transforms=placements)
    assert_hits_match(gpu, ref, scale, check_inst=True)


# --- instances ------------------------------------------------------------------------------------------------------


def ias_scene(rng, num_triangles=2000):
    vertices, indices = random_mesh(rng, num_triangles)
    placements = [(translation(0.35, -0.25, 0.15), 3), (rotation_z(35.0), 9)]
    world = np.concatenate([triangles_of(vertices, indices, transform) for transform, _ in placements])
    origins, directions = random_rays(rng, world)
    scale = extent(origins, world)
    return vertices, indices, placements, origins, directions, scale


def test_two_instances_of_one_gas(ctx, caster):
    rng = np.random.default_rng(41)
    vertices, indices, placements, origins, directions, scale = ias_scene(rng)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices))
    ias = InstanceAccel(ctx, [Instance(gas, transform=tr, instance_id=iid) for tr, iid in placements])
    assert isinstance(ias.handle, int) and ias.handle != 0

    gpu = caster.cast(ias.handle, origins, directions)
    ref = cast_reference(vertices, indices, origins, directions, transforms=placements)
    clear = assert_hits_match(gpu, ref, scale, check_inst=True)
    hits = clear & ref["hit"]
    for _, instance_id in placements:  # both instances are seen, often
        assert (gpu["inst"][hits] == instance_id).sum() > 0.2 * hits.sum()
    assert set(np.unique(gpu["inst"]).tolist()) <= {-1, 3, 9}


def test_instance_accel_over_a_compacted_gas(ctx, caster):
    rng = np.random.default_rng(42)
    vertices, indices, placements, origins, directions, scale = ias_scene(rng, 1500)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_compaction=True))
    assert gas.compact(wait=True)
    ias = InstanceAccel(ctx, [Instance(gas, transform=tr, instance_id=iid) for tr, iid in placements])
    gpu = caster.cast(ias, origins, directions)
    ref = cast_reference(vertices, indices, origins, directions, transforms=placements)
    assert_hits_match(gpu, ref, scale, check_inst=True)


def test_instance_of_a_refitted_gas(ctx, caster):
    rng = np.random.default_rng(43)
    vertices, indices, placements, _, _, _ = ias_scene(rng, 1500)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(allow_update=True))
    moved = (vertices + rng.normal(0, 0.003, vertices.shape)).astype(np.float32)
    gas.refit(moved)
    ias = InstanceAccel(ctx, [Instance(gas, transform=tr, instance_id=iid) for tr, iid in placements])
    world = np.concatenate([triangles_of(moved, indices, transform) for transform, _ in placements])
    origins, directions = random_rays(rng, world)
    gpu = caster.cast(ias, origins, directions)
    ref = cast_reference(moved, indices, origins, directions, transforms=placements)
    assert_hits_match(gpu, ref, extent(origins, world), check_inst=True)


# --- bad input ------------------------------------------------------------------------------------------------------


def small_gas(ctx, rng, **options):
    vertices, indices = random_mesh(rng, 200)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices), AccelOptions(**options))
    return gas, vertices, indices


def bad_refits(vertices: np.ndarray) -> list[tuple[str, object]]:
    nan = vertices.copy()
    nan[17, 1] = np.nan
    inf = vertices.copy()
    inf[3, 2] = np.inf
    return [
        ("count", vertices[:-3]),  # fewer vertices
        ("count", np.concatenate([vertices, vertices[:3]])),  # more vertices
        ("float64", vertices.astype(np.float64)),
        ("shape", np.ascontiguousarray(np.pad(vertices, ((0, 0), (0, 1))))),  # (N, 4)
        ("shape", vertices.reshape(-1)),  # flat
        ("NaN", nan),
        ("NaN", inf),  # the message names "NaN or Inf"
        ("contiguous", np.asfortranarray(vertices)),
        ("input", [vertices, vertices]),  # one array per input, and there is one input
    ]


def test_bad_refits_fail_before_gpu_work_and_leave_the_gas_intact(ctx, caster, no_gpu_work):
    rng = np.random.default_rng(51)
    gas, vertices, indices = small_gas(ctx, rng, allow_update=True)
    origins, directions = random_rays(rng, triangles_of(vertices, indices), 512)
    caster.cast(gas, origins, directions)
    handle = gas.handle
    no_gpu_work()
    for match, bad in bad_refits(vertices):
        with pytest.raises(ValueError, match=match):
            gas.refit(bad)
    assert gas.handle == handle and gas.refit_ms is None


def test_structure_unchanged_after_bad_refits(ctx, caster):
    rng = np.random.default_rng(52)
    gas, vertices, indices = small_gas(ctx, rng, allow_update=True)
    origins, directions = random_rays(rng, triangles_of(vertices, indices), 512)
    before = caster.cast(gas, origins, directions)
    for _, bad in bad_refits(vertices):
        with pytest.raises(ValueError):
            gas.refit(bad)
    assert_identical(before, caster.cast(gas, origins, directions))


def test_bad_device_refits_fail_without_reading_the_data(ctx, caster):
    import cupy

    rng = np.random.default_rng(53)
    gas, vertices, indices = small_gas(ctx, rng, allow_update=True)
    origins, directions = random_rays(rng, triangles_of(vertices, indices), 512)
    before = caster.cast(gas, origins, directions)
    with pytest.raises(ValueError, match="count"):
        gas.refit(ctx.upload(vertices[:-3]))
    with pytest.raises(ValueError, match="float64"):
        gas.refit(ctx.upload(vertices.astype(np.float64)))
    with pytest.raises(ValueError, match="shape"):
        gas.refit(ctx.upload(np.pad(vertices, ((0, 0), (0, 1)))))
    with pytest.raises(ValueError, match="contiguous"):
        gas.refit(cupy.asarray(np.pad(vertices, ((0, 0), (0, 1))))[:, :3])
    ctx.stream.synchronize()
    assert_identical(before, caster.cast(gas, origins, directions))


def test_refit_without_allow_update(ctx, caster, no_gpu_work):
    rng = np.random.default_rng(54)
    gas, vertices, _ = small_gas(ctx, rng)
    handle = gas.handle
    no_gpu_work()
    with pytest.raises(ValueError, match="allow_update"):
        gas.refit(vertices)
    assert gas.handle == handle


def test_compact_without_allow_compaction(ctx, no_gpu_work):
    rng = np.random.default_rng(55)
    gas, _, _ = small_gas(ctx, rng, allow_update=True)
    nbytes = gas.nbytes
    no_gpu_work()
    with pytest.raises(ValueError, match="allow_compaction"):
        gas.compact(wait=True)
    with pytest.raises(ValueError, match="allow_compaction"):
        gas.compact()
    assert gas.nbytes == nbytes and not gas.compacted
    assert gas.compacted_size is None


def test_bad_meshes_fail_before_gpu_work(ctx, caster, no_gpu_work):
    vertices, indices = random_mesh(np.random.default_rng(56), 10)
    nan = vertices.copy()
    nan[4] = np.nan
    beyond = indices.copy()
    beyond[7, 1] = len(vertices)
    negative = indices.copy()
    negative[2, 0] = -1
    options = AccelOptions(allow_update=True, allow_compaction=True)
    no_gpu_work()
    for match, make in [
        ("empty", lambda: TriangleInput(np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int32))),
        ("empty", lambda: TriangleInput(vertices, np.zeros((0, 3), np.int32))),
        ("NaN", lambda: TriangleInput(nan, indices)),
        ("out of range", lambda: TriangleInput(vertices, beyond)),
        ("out of range", lambda: TriangleInput(vertices, negative)),
    ]:
        with pytest.raises(ValueError, match=match):
            GeometryAccel(ctx, make(), options)


def test_context_still_traces_after_the_errors(ctx, caster):
    rng = np.random.default_rng(57)
    vertices, indices = random_mesh(rng, 500)
    origins, directions = random_rays(rng, triangles_of(vertices, indices), 1024)
    gas = GeometryAccel(ctx, TriangleInput(vertices, indices))
    gpu = caster.cast(gas, origins, directions)
    assert_hits_match(gpu, cast_reference(vertices, indices, origins, directions), extent(origins, vertices))


def test_bad_instances(ctx):
    rng = np.random.default_rng(58)
    gas, _, _ = small_gas(ctx, rng)
    with pytest.raises(ValueError, match="3x4 or 4x4 affine transform, got shape"):
        Instance(gas, transform=np.eye(3, dtype=np.float32))
    transform = np.eye(3, 4, dtype=np.float32)
    transform[1, 3] = np.nan
    with pytest.raises(ValueError, match="NaN or Inf"):
        Instance(gas, transform=transform)
    # the one rule for every transform: a 4x4's last row is 0 0 0 1, and the linear part is invertible
    projective = np.eye(4, dtype=np.float32)
    projective[3, 2] = 0.5
    with pytest.raises(ValueError, match="last row"):
        Instance(gas, transform=projective)
    with pytest.raises(ValueError, match="singular"):
        Instance(gas, transform=np.diag([1.0, 1.0, 0.0, 1.0])[:3])
    assert Instance(gas, transform=np.eye(4)).transform.shape == (3, 4)
    assert Instance(gas, transform=np.eye(4)).transform.dtype == np.float32
    with pytest.raises(ValueError, match="visibility_mask"):
        Instance(gas, visibility_mask=0x100)
    with pytest.raises(TypeError):
        Instance(np.zeros(3))
    with pytest.raises(TypeError):
        InstanceAccel(ctx, [])


def test_casting_against_a_closed_structure_is_refused(ctx, caster):
    gas, _, _ = small_gas(ctx, np.random.default_rng(60))
    gas.close()
    rays = np.ones((4, 3), np.float32)
    with pytest.raises(RuntimeError, match="closed GeometryAccel"):
        caster.cast(gas, rays, rays)


def test_a_compacting_structure_is_ready_once_its_compacted_size_has_arrived(ctx):
    from optixasync.cuda import synchronize

    gas, _, _ = small_gas(ctx, np.random.default_rng(62), allow_compaction=True)
    synchronize(gas.ready.event)  # the end of the build includes the copy of the size to the host
    assert gas.compacted_size is not None


def test_bad_rays(ctx, caster):
    rng = np.random.default_rng(59)
    gas, _, _ = small_gas(ctx, rng)
    origins = np.zeros((8, 3), np.float32)
    with pytest.raises(ValueError, match="shape"):
        caster.cast(gas, origins, np.zeros((7, 3), np.float32))
    with pytest.raises(ValueError, match="shape"):
        caster.cast(gas, origins[:, :2], np.zeros((8, 2), np.float32))
    with pytest.raises(ValueError, match="shape"):
        caster.cast(gas, origins[:0], origins[:0])


def test_several_build_inputs_and_instance_sbt_offsets(ctx, caster):
    """Renderers give each build input its own SBT record and offset instances; the caster still traces them."""
    from optixasync.accel import HIT_RECORDS

    rng = np.random.default_rng(61)
    vertices, indices, placements, origins, directions, scale = ias_scene(rng)
    starts = np.array([0, len(indices) // 3, 2 * len(indices) // 3])
    chunks = np.split(indices, starts[1:])
    gas = GeometryAccel(ctx, [TriangleInput(vertices, np.ascontiguousarray(c)) for c in chunks])
    offsets = [HIT_RECORDS - 1, 0]
    ias = InstanceAccel(ctx, [Instance(gas, transform=tr, instance_id=iid, sbt_offset=off)
                              for (tr, iid), off in zip(placements, offsets, strict=True)])
    gpu = caster.cast(ias, origins, directions)
    ref = cast_reference(vertices, indices, origins, directions, transforms=placements)
    # OptiX numbers primitives within their build input: map the reference's global index likewise
    local = ref["prim"] - starts[np.searchsorted(starts, ref["prim"], side="right") - 1]
    ref = dict(ref, prim=np.where(ref["hit"], local, ref["prim"]))
    assert_hits_match(gpu, ref, scale, check_inst=True)
