"""Nesting on tracks, Python stacks, flows and steps, on tiny hand-made inputs."""

from __future__ import annotations

import numpy as np

from kinetoscope.ingest.rows import links
from kinetoscope.ingest.rows.nesting import FrameTree, legacy_call_stack, nest

A = np.asarray


def test_depth_parent_and_partial_overlap() -> None:
    # GIVEN on one track: outer [0,10) holding [1,3) and [4,6), then [8,12) overlapping the outer's end
    nesting = nest(
        A([1, 1, 1, 1]), A([0, 1, 4, 8]), A([10, 3, 6, 12]), python_names={}, call_stacks={}, frames=FrameTree()
    )
    assert nesting.depth.tolist() == [0, 1, 1, 0]
    assert nesting.parent.tolist() == [-1, 0, 0, -1]
    assert nesting.overlaps == 1


def test_tracks_do_not_nest_into_each_other_and_instants_nest() -> None:
    nesting = nest(A([1, 2, 1]), A([0, 1, 5]), A([10, 3, 5]), python_names={}, call_stacks={}, frames=FrameTree())
    assert nesting.depth.tolist() == [0, 0, 1]
    assert nesting.parent.tolist() == [-1, -1, 0]


def test_python_frames_form_a_tree_and_ops_record_the_innermost_frame() -> None:
    frames = FrameTree()
    names = {0: "train.py(10): main", 1: "model.py(5): forward", 3: "model.py(5): forward"}
    nesting = nest(
        A([1, 1, 1, 1]), A([0, 1, 2, 20]), A([15, 10, 3, 25]), python_names=names, call_stacks={}, frames=frames
    )
    # op at row 2 sits in forward, called from main; row 3 is forward called at top level: another path
    main, forward, op, top_forward = nesting.stack_node.tolist()
    assert op == forward and top_forward not in (forward, main)
    assert (frames.name[forward], frames.file[forward], frames.line[forward]) == ("forward", "model.py", 5)
    assert frames.parent[forward] == main and frames.parent[top_forward] == -1 and frames.parent[main] == -1
    assert len(frames) == 3


def test_legacy_call_stack_is_outermost_first() -> None:
    assert legacy_call_stack("inner.py(2): f;outer.py(1): g;") == ["outer.py(1): g", "inner.py(2): f"]


def test_id_edges_link_framework_runtime_device_and_orphans() -> None:
    # rows: 0 op ext 5, 1 runtime ext 5 corr 9, 2 kernel corr 9, 3 op ext 6, 4 kernel ext 6 corr 11 (no runtime)
    layer = A([0, 1, 2, 0, 2], dtype=np.int8)
    external = A([5, 5, -1, 6, 6])
    correlation = A([-1, 9, 9, -1, 11])
    kind = A([7, 4, 0, 7, 0])  # op, runtime, kernel (model.kinds.KIND_CODES)
    keys = {"layer": layer, "kind": kind, "external_id": external, "correlation": correlation}
    edges, launcher = links.launch_edges(keys)
    links.op_edges(edges, {**keys, "is_python": np.zeros(5, bool)}, A([-1, -1, -1, -1, -1]), launcher)
    found = {
        (int(s), int(d), k, by)
        for src, dst, k, by in zip(edges.src, edges.dst, edges.kind, edges.found_by, strict=True)
        for s, d in zip(src, dst, strict=True)
    }
    assert found == {
        (0, 1, "framework_runtime", "external_id"),
        (1, 2, "runtime_device", "correlation"),
        (3, 4, "framework_device", "external_id"),
    }
    assert launcher.tolist() == [-1, -1, 1, -1, -1]


def test_a_runtime_call_whose_external_id_is_its_correlation_binds_to_its_enclosing_op() -> None:
    # GIVEN (as in the public DLRM traces) runtime rows whose External id equals their correlation id
    layer = A([0, 1, 1], dtype=np.int8)
    keys = {"layer": layer, "kind": A([7, 4, 4]), "external_id": A([3, 41, 42]), "correlation": A([-1, 41, 42])}
    edges, launcher = links.launch_edges(keys)
    # WHEN the enclosing op of both calls is row 0
    links.op_edges(edges, {**keys, "is_python": np.zeros(3, bool)}, A([-1, 0, 0]), launcher)
    # THEN both calls are bound to it, and the edge says how it was found
    assert [(e.tolist(), d.tolist(), k, by) for e, d, k, by in zip(*vars(edges).values(), strict=True)] == [
        ([0, 0], [1, 2], "framework_runtime", "enclosing_op")
    ]


def test_flow_events_bind_to_enclosing_slices() -> None:
    track = A([links.host_track(1, 1), links.host_track(1, 1), links.host_track(1, 2)])
    ts, end = A([0, 2, 50]), A([10, 4, 60])
    nesting = nest(track, ts, end, python_names={}, call_stacks={}, frames=FrameTree())
    finder = links.SliceFinder(track, ts, end, nesting.parent, nesting.order)
    edges = links.Edges([], [], [], [])
    points = [(7, "fwdbwd", "fwdbwd", "s", 3, 1, 1, False), (7, "fwdbwd", "fwdbwd", "f", 50, 1, 2, True)]
    assert links.flow_event_edges(points, finder, edges) == 0
    assert (edges.src[0].tolist(), edges.dst[0].tolist(), edges.kind) == ([1], [2], ["fwd_bwd"])


def test_steps_by_time_on_host_and_by_launcher_on_device() -> None:
    ts = A([5, 15, 25, 30])
    layer = A([0, 1, 2, 0], dtype=np.int8)
    launcher = A([-1, -1, 1, -1])
    step = links.steps(ts, layer, launcher, [(0, 10, 1), (10, 20, 2)])
    # the kernel (row 2) ran after step 2 ended but was launched in it
    assert step.tolist() == [1, 2, 2, -1]


def test_array_nesting_agrees_with_the_walk_on_random_tracks() -> None:
    # GIVEN random properly nested intervals, instants and, on one track, overlaps
    from kinetoscope.ingest.rows import nesting

    rng = np.random.default_rng(7)
    tracks, starts, ends = [], [], []
    for track in range(4):

        def fill(lo: int, hi: int, level: int, track: int = track) -> None:
            t = lo
            while t < hi and level < 6:
                length = int(rng.integers(0, max(1, (hi - t) // 2) + 1))
                tracks.append(track), starts.append(t), ends.append(t + length)
                if length > 2:
                    fill(t + 1, t + length - 1, level + 1)
                t += length + int(rng.integers(0, 3))

        fill(0, 400, 0)
    tracks += [9, 9, 9]
    starts += [0, 5, 7]
    ends += [10, 15, 8]  # [5,15) overlaps [0,10): this track is walked
    args = (A(tracks), A(starts), A(ends))
    fast = nest(*args, python_names={}, call_stacks={}, frames=FrameTree())
    order = np.lexsort((np.arange(len(tracks)), A(starts) - A(ends), A(starts), A(tracks)))
    depth, parent, node = (np.zeros(len(tracks), np.int32), np.full(len(tracks), -1), np.full(len(tracks), -1))
    overlaps = nesting.walk(order.tolist(), (tracks, starts, ends), ({}, {}, FrameTree()), (depth, parent, node))
    assert fast.depth.tolist() == depth.tolist()
    assert fast.parent.tolist() == parent.tolist()
    assert fast.overlaps == overlaps == 1
