"""scripts/profile_amir_machine.py (issue 27 item 2's profile): its instrumented machine
is the reference machine (same verdict and statistics: the timers and the per-iteration
images change nothing), its rule table accounts for the run, and the image it takes of
the task-local state finds the ragged GEMM's 4-stage ring: a repeat at distance 4."""

from __future__ import annotations

from gpusem.interpreter.amir.machine import check_amir

from tests.script_module import load_script


def test_instrumented_machine_is_the_reference_and_finds_the_ring():
    mod = load_script("profile_amir_machine")
    prog, env = mod.converted(512)
    ref = check_amir(prog, env)
    for images in (False, True):
        m = mod.Profiled(prog, env, "k", 1, images=images)
        got = m.run()
        assert got.violation is None and ref.violation is None
        assert got.stats == ref.stats
        assert m.k_entries == 6 and m.k_iters == 6 * 15   # 3 x 2 tasks, k = 1..15
        assert sum(m.calls.values()) > 0
    assert [len(s) for s in m.k_sigs] == [15] * 6
    periods = [mod.period_of(s) for s in m.k_sigs]
    assert {d for _, d in periods} == {4}                 # the ring's 4 stages
    assert all(start is not None and start >= 4 for start, _ in periods)


def test_image_sees_a_difference():
    """Two images of different states differ (the repeat test is not vacuous): the
    state before the first k iteration is not the state one iteration later."""
    mod = load_script("profile_amir_machine")
    prog, env = mod.converted(512)
    m = mod.Profiled(prog, env, "k", 1, images=True)
    m.run()
    first = m.k_sigs[0]
    assert len(set(first[:4])) == 4
