"""What a run hides from its children, resolved once: the same answers as path by path, at a cost per
child that does not grow with the class (a class of n hid n submissions from each of its children, and
each child resolved, checked and digested all n: O(n²) for the class in the grader's one process)."""
from __future__ import annotations

import json
import os
import sys

import pytest

from autograder.core import layout
from autograder.grading import supervise
from autograder.grading.staging import GradingRun, always_hidden
from autograder.grading.supervise import ChildLimits, child_payload, path_digest, payload_bytes
from autograder.isolation import levels as isolation
from autograder.isolation.childfs import HiddenPaths, _within
from autograder.isolation.launch import ChildSpec, confinement

# names that sort between a folder and its contents ("/a/b-c" < "/a/b/" < "/a/bc"), the root, a file
HIDDEN = ["/a/b", "/a/b-c", "/a/bc", "/a/b/c/d", "/x/y.ipynb", "/a/b/c"]
QUERIES = ["/", "/a", "/a/", "/a/b", "/a/b/", "/a/b/c", "/a/b/c/d/e", "/a/b-c", "/a/bc/d", "/a/bb", "/x",
           "/x/y.ipynb", "/x/y", "/z", "/a/b-"]


@pytest.mark.parametrize("hidden", [HIDDEN, [*HIDDEN, "/"], []])
def test_inside_and_holding_answer_as_path_by_path(hidden):
    h = HiddenPaths(hidden)
    for q in QUERIES:
        assert sorted(h.inside(q)) == sorted(x for x in set(hidden) if _within(x, q)), q
        holding = h.holding(q.rstrip("/") or "/")
        expected = [x for x in set(hidden) if _within(q.rstrip("/") or "/", x)]
        assert (holding is None) == (not expected) and (holding is None or holding in expected), q


def test_it_is_the_tuple_of_the_given_paths_first_occurrence_first(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    paths = [str(tmp_path / "link"), "/b", str(tmp_path / "link"), "/a"]
    h = HiddenPaths(paths)
    assert h == (str(tmp_path / "link"), "/b", "/a") and HiddenPaths.of(h) is h
    assert h.real == ("/a", "/b", str(tmp_path / "real"))  # sorted, symlinks followed
    assert HiddenPaths(paths).salt != h.salt  # a salt per run


def test_a_childs_payload_digests_every_hidden_path_but_the_graders_own_by_the_runs_salt(tmp_path):
    classmates = [str(tmp_path / f"student_{i}" / "s01_prefix_match.ipynb") for i in range(3)]
    hidden = HiddenPaths([*always_hidden(), *classmates])
    a = child_payload({"cells": []}, ChildLimits(5, 512, 1), hidden, tmp_path, str(tmp_path), 9)
    b = child_payload({"cells": []}, ChildLimits(5, 512, 1), hidden, tmp_path, str(tmp_path), 9)
    assert a["salt"] == b["salt"] == hidden.salt and a["denied_dirs"] == list(always_hidden())
    assert a["denied_digests"] == [path_digest(hidden.salt, c) for c in classmates] == b["denied_digests"]
    # the same payload either way: with the run's digests spliced in as encoded once, or encoded here
    assert json.loads(payload_bytes(a)) == json.loads(json.dumps(a)) == a
    plain = {**a, "denied_digests": list(a["denied_digests"])}
    assert json.loads(payload_bytes(plain)) == a and json.loads(payload_bytes({"denied_digests": []})) == {"denied_digests": []}


@pytest.mark.parametrize("n", [20, 2000])
def test_a_child_of_a_run_costs_the_same_whatever_the_size_of_the_class(tmp_path, monkeypatch, n):
    """Counted, not timed: after a run's first child, another child's confinement and payload resolve
    no hidden path again and digest none, with 20 submissions hidden or 2,000."""
    subs = [str(tmp_path / "submitted" / f"student{i:05d}" / "01.ipynb") for i in range(n)]
    iso = isolation.select("best")
    with GradingRun.open(iso, hidden=subs) as run:
        scratch, uid = run.scratch()
        spec = ChildSpec(sys.executable, supervise.CHILD_ENTRY, str(run.staging), scratch, hidden=run.hidden, uid=uid,
                         memory_mb=512, cgroup_fd=5 if iso.layers else None)
        limits = ChildLimits(5, 512, 1)
        first = child_payload({"cells": []}, limits, run.hidden, run.staging, scratch, 3)
        if iso.layers:
            confinement(spec, iso)
        assert len(first["denied_digests"]) == n  # every submission, by digest
        calls = {"realpath": 0, "digest": 0}
        real, digest = os.path.realpath, supervise.salted_digest
        monkeypatch.setattr(os.path, "realpath", lambda p, *a, **k: calls.__setitem__("realpath", calls["realpath"] + 1)
                            or real(p, *a, **k))
        monkeypatch.setattr("autograder.isolation.childfs.salted_digest",
                            lambda *a: calls.__setitem__("digest", calls["digest"] + 1) or digest(*a))
        for _ in range(3):
            child_payload({"cells": []}, limits, run.hidden, run.staging, scratch, 3)
            if iso.layers:
                confinement(spec, iso)
        assert calls["digest"] == 0 and calls["realpath"] <= 3 * 12, calls  # the child's own few paths only


def test_confinement_still_refuses_or_masks_a_hidden_path_among_many(tmp_path):
    """One hidden path among thousands is still found: the run's folder of answers, and the answers
    inside a readable folder (masked under namespaces, refused without)."""
    iso = isolation.select("best")
    if not iso.layers:
        pytest.skip("no kernel isolation here: nothing is launched confined")
    others = [str(tmp_path / f"s{i}.ipynb") for i in range(3000)]
    inside = str(layout.stage_files("s01").spec)  # a file inside the folder the child reads
    spec = ChildSpec(sys.executable, "x:y", str(layout.ROOT), str(tmp_path / "scratch"),
                     hidden=HiddenPaths([*others, inside]))
    os.mkdir(tmp_path / "scratch")
    if "namespaces" in iso.layers:
        assert confinement(spec, iso).masked == (inside,)
    else:
        with pytest.raises(isolation.IsolationError, match="must not see"):
            confinement(spec, iso)
    for hidden in ([*others, str(layout.ROOT)], [*others, str(layout.ROOT.parent)]):  # is, or holds, what it reads
        with pytest.raises(isolation.IsolationError, match="must not see"):
            confinement(ChildSpec(sys.executable, "x:y", str(layout.ROOT), str(tmp_path / "scratch"),
                                  hidden=HiddenPaths(hidden)), iso)
