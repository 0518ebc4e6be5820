"""`gpusem replay --backend cuda` of a cpu bundle: the cpu harness names a deadlock, a
GPU can only see a launch that never ends; that is the same finding, nothing else is."""

from gpusem.fuzz.replay import deadlock_as_timeout


def test_a_cpu_deadlock_reproduces_as_a_gpu_timeout():
    assert deadlock_as_timeout("compile:kernel-failed:deadlock",
                                "compile:kernel-failed:timeout")


def test_other_signature_changes_do_not_count():
    assert not deadlock_as_timeout("compile:kernel-failed:deadlock",
                                    "compile:kernel-failed:runtime_error")
    assert not deadlock_as_timeout("compile:kernel-failed:timeout",
                                    "compile:kernel-failed:deadlock")
    assert not deadlock_as_timeout("compile:disagree:disagree",
                                    "compile:kernel-failed:timeout")
