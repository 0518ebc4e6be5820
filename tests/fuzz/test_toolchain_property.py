"""The Bundl target's `toolchain` property on the cpu backend (issue 23, item 5): the
cpu configuration runs, the host configurations are built; a disagreement is a
finding with a cause-level signature and its attribution in the bundle files."""

from __future__ import annotations

import json

from gpusem.calculus.bundl.parser import parse_program
from gpusem.fuzz.bundl import toolchain_property
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.target import PROPERTIES, BundlTarget

from .test_attribution_wiring import HALVES


def _generated(text: str = HALVES) -> Generated:
    return Generated(parse_program(text, "p.bundl"), race_free_by_construction=False)


def test_toolchain_is_a_bundl_property():
    assert "toolchain" in PROPERTIES


def test_a_clean_program_passes_and_the_host_configs_were_built(monkeypatch):
    built = []
    real = toolchain_property.build_only

    def spy(specs, configs):
        built.append(configs)
        return real(specs, configs)

    monkeypatch.setattr(toolchain_property, "build_only", spy)
    target = BundlTarget("cpu")
    try:
        assert target.check(_generated(), "toolchain").status == "pass"
    finally:
        target.close()
    assert built == [("nvcc-O3", "nvcc-G", "ptxas-O0")]


def test_a_seeded_fault_is_a_cause_level_finding_attributed_ours(monkeypatch):
    monkeypatch.setenv("GPUSEM_FAULT", "floor-division")
    target = BundlTarget("cpu")
    try:
        res = target.check(_generated(), "toolchain")
    finally:
        target.close()
    assert res.status == "finding"
    assert res.signature == "toolchain:ours:cpu"  # the verdict and configs, no program
    blame = json.loads(res.files["attribution.json"])
    assert (blame["verdict"], blame["rule"]) == ("ours", "cpu-harness")
    assert {"program.bundl", "kernel.cu", "expected.json"} <= set(res.files)
    assert target.attribute(res, "toolchain") is None  # attributed already


def test_a_build_split_is_a_finding_naming_the_refusing_config(monkeypatch):
    """A kernel ptxas -O0 refuses while nvcc -O3 and -G build it (simulated: no such
    kernel is known) is ptxas's; the signature names the configuration."""
    def refusing(specs, configs):
        return {c: ["ptxas fatal: simulated" if c == "ptxas-O0" else None
                    for _ in specs] for c in configs}

    monkeypatch.setattr(toolchain_property, "build_only", refusing)
    target = BundlTarget("cpu")
    try:
        res = target.check(_generated(), "toolchain")
    finally:
        target.close()
    assert res.signature == "toolchain:build:ptxas-O0"
    assert json.loads(res.files["attribution.json"])["verdict"] == "ptxas"


def test_every_config_refusing_is_left_to_the_compile_property(monkeypatch):
    def refusing(specs, configs):
        return {c: ["nvcc error" for _ in specs] for c in configs}

    monkeypatch.setattr(toolchain_property, "build_only", refusing)
    target = BundlTarget("cpu")
    try:
        assert target.check(_generated(), "toolchain").status == "pass"
    finally:
        target.close()


class _FakeGpuMatrix:
    """Every configuration of the cuda matrix, its "GPU" the cpu harness: right,
    except the configurations in `wrong`, whose first output cell is off by one."""

    def __init__(self, wrong: tuple[str, ...] = ()) -> None:
        from gpusem.compiler.backends.cpu import CpuBackend
        from gpusem.compiler.backends.toolchain import CONFIGS

        self.configs, self.wrong, self.calls = tuple(CONFIGS), wrong, []
        self.harness = CpuBackend()

    def run(self, jobs, configs=None):
        from dataclasses import replace as changed

        self.calls.append((configs, len(jobs)))
        right = self.harness.run(jobs)
        out = {}
        for config in configs or self.configs:
            out[config] = right
            if config in self.wrong:
                out[config] = [changed(r, outputs={k: v + (k == "g_out")
                                                   for k, v in r.outputs.items()})
                               for r in right]
        return out


def _check_on_fake_gpu(wrong, monkeypatch, eager=False):
    from gpusem.interpreter.bundl.reference import reference

    if eager:
        monkeypatch.setenv("GPUSEM_TOOLCHAIN_EAGER", "1")
    progs = [parse_program(HALVES, "p.bundl")] * 2
    refs = [reference(p) for p in progs]
    matrix = _FakeGpuMatrix(wrong)
    results = toolchain_property.check_round(progs, refs, "cuda", matrix)
    return results, matrix.calls


def test_on_cuda_a_clean_program_costs_one_launch_a_gpu_config(monkeypatch):
    """Clean programs: one launch per GPU configuration, no harness; a wrong
    configuration: those programs again (the second launch of every GPU
    configuration, the harness's two), and the finding decided from all of them;
    GPUSEM_TOOLCHAIN_EAGER=1: two launches of everything, in the first call."""
    from gpusem.compiler.backends.toolchain import GPU_CONFIGS

    results, calls = _check_on_fake_gpu((), monkeypatch)
    assert [r.status for r in results] == ["pass", "pass"]
    assert calls == [(GPU_CONFIGS, 2)]  # two programs, one launch each
    results, calls = _check_on_fake_gpu(("nvcc-G",), monkeypatch)
    assert [r.status for r in results] == ["finding", "finding"]
    assert calls == [(GPU_CONFIGS, 2), (GPU_CONFIGS, 2), (("cpu",), 4)]
    blame = json.loads(results[0].files["attribution.json"])
    assert len(blame["matrix"]["nvcc-G"]) == 2 and len(blame["matrix"]["cpu"]) == 2
    assert (blame["failing_config"], blame["verdict"]) == ("nvcc-G", "undecided")
    assert results[0].signature.endswith(":nvcc-G")
    _, calls = _check_on_fake_gpu((), monkeypatch, eager=True)
    assert calls == [(None, 4)]


# ------------------------------------------------- nvcc-G on every K-th round only


def test_k_is_a_whole_number_at_least_one(monkeypatch):
    import pytest
    from gpusem.calculus.errors import BadInput
    from gpusem.compiler.backends.toolchain import G_EVERY, g_every

    monkeypatch.delenv("GPUSEM_TOOLCHAIN_G_EVERY", raising=False)
    assert g_every() == G_EVERY == 4
    monkeypatch.setenv("GPUSEM_TOOLCHAIN_G_EVERY", "8")
    assert g_every() == 8
    for bad in ("0", "-1", "x", "2.5"):
        monkeypatch.setenv("GPUSEM_TOOLCHAIN_G_EVERY", bad)
        with pytest.raises(BadInput, match="GPUSEM_TOOLCHAIN_G_EVERY"):
            g_every()


def _unsampled_on_fake_gpu(wrong, monkeypatch):
    from gpusem.interpreter.bundl.reference import reference

    progs = [parse_program(HALVES, "p.bundl")] * 2
    refs = [reference(p) for p in progs]
    matrix = _FakeGpuMatrix(wrong)
    results = toolchain_property.check_round(progs, refs, "cuda", matrix,
                                             sampled=False)
    return results, matrix.calls


def test_on_cuda_a_round_off_k_runs_nvcc_g_only_where_another_config_is_wrong(
        monkeypatch):
    """A round off the K-th: clean programs go without nvcc-G; a program nvrtc gets
    wrong gets nvcc-G's two launches too, and its verdict, signature and whole
    attribution are those of a round that ran nvcc-G for every program."""
    from gpusem.compiler.backends.toolchain import GPU_CONFIGS

    but_g = tuple(c for c in GPU_CONFIGS if c != "nvcc-G")
    results, calls = _unsampled_on_fake_gpu((), monkeypatch)
    assert [r.status for r in results] == ["pass", "pass"]
    assert calls == [(but_g, 2)]
    assert results[0].configs == but_g  # what the campaign counts
    sampled, _ = _check_on_fake_gpu((), monkeypatch)
    assert sampled[0].configs == GPU_CONFIGS
    # ("no-restrict", "nvcc-G"): the signature names them in the matrix's order
    for wrong in (("nvrtc",), ("no-restrict", "nvcc-G"),
                  ("nvcc-O3", "ptxas-O0", "nvrtc", "ptx-jit", "no-restrict")):
        results, calls = _unsampled_on_fake_gpu(wrong, monkeypatch)
        assert calls == [(but_g, 2), (but_g, 2), (("nvcc-G",), 4), (("cpu",), 4)]
        blame = json.loads(results[0].files["attribution.json"])
        assert len(blame["matrix"]["nvcc-G"]) == 2
        every, _ = _check_on_fake_gpu(wrong, monkeypatch)
        assert [(r.signature, r.files, r.configs) for r in results] == [
            (r.signature, r.files, r.configs) for r in every], wrong
    # all but nvcc-G wrong: "only other PTX (-G) is right" needs nvcc-G's runs
    assert json.loads(results[0].files["attribution.json"])["rule"] == "other-ptx"


def test_on_cuda_a_bug_of_nvcc_g_alone_is_seen_on_its_rounds_only(monkeypatch):
    """What K trades: a configuration wrong where every other is right is met only
    on the rounds that run it."""
    results, _ = _unsampled_on_fake_gpu(("nvcc-G",), monkeypatch)
    assert [r.status for r in results] == ["pass", "pass"]
    results, _ = _check_on_fake_gpu(("nvcc-G",), monkeypatch)
    assert [r.signature for r in results] == ["toolchain:undecided:nvcc-G"] * 2


def _on_cpu(monkeypatch, round_index, fake_builds=None, fault=""):
    """The toolchain verdict on the cpu backend in shard round `round_index` (K = 4:
    round 1 is off the K-th), and the host configurations each build call made."""
    calls = []
    real = fake_builds or toolchain_property.build_only

    def spy(specs, configs):
        calls.append((configs, len(specs)))
        return real(specs, configs)

    monkeypatch.setattr(toolchain_property, "build_only", spy)
    monkeypatch.setenv("GPUSEM_TOOLCHAIN_G_EVERY", "4")
    if fault:
        monkeypatch.setenv("GPUSEM_FAULT", fault)
    target = BundlTarget("cpu")
    try:
        target.begin_round(round_index)
        return target.check(_generated(), "toolchain"), calls
    finally:
        target.close()


def test_on_cpu_a_round_off_k_builds_nvcc_g_only_for_a_finding(monkeypatch):
    res, calls = _on_cpu(monkeypatch, 1)
    assert res.status == "pass"
    assert calls == [(("nvcc-O3", "ptxas-O0"), 1)]
    assert res.configs == ("nvcc-O3", "ptxas-O0", "cpu")
    res, calls = _on_cpu(monkeypatch, 4)  # the K-th round: everything
    assert calls == [(("nvcc-O3", "nvcc-G", "ptxas-O0"), 1)]
    assert res.configs == ("nvcc-O3", "nvcc-G", "ptxas-O0", "cpu")
    res, calls = _on_cpu(monkeypatch, None)  # no round (shrinking): everything
    assert calls == [(("nvcc-O3", "nvcc-G", "ptxas-O0"), 1)]
    # a seeded fault of our compiler: the harness is wrong, so nvcc-G is built too
    off, calls = _on_cpu(monkeypatch, 1, fault="floor-division")
    assert calls == [(("nvcc-O3", "ptxas-O0"), 1), (("nvcc-G",), 1)]
    on, _ = _on_cpu(monkeypatch, 0, fault="floor-division")
    assert off.signature == on.signature == "toolchain:ours:cpu"
    assert (off.files, off.configs) == (on.files, on.configs)


def test_on_cpu_build_verdicts_off_k_are_those_of_every_config(monkeypatch):
    """A refusal off the K-th round builds nvcc-G too, so a split is named as before
    and a kernel every configuration refuses is still left to the compile property;
    nvcc-G refusing alone is met on its rounds only (what K trades)."""
    def refusing(who):
        def build(specs, configs):
            return {c: ["simulated refusal" if c in who else None for _ in specs]
                    for c in configs}
        return build

    cases = {("ptxas-O0",): "toolchain:build:ptxas-O0",
             ("nvcc-O3", "ptxas-O0"): "toolchain:build:nvcc-O3+ptxas-O0",
             ("nvcc-O3", "nvcc-G"): "toolchain:build:nvcc-G+nvcc-O3",
             ("nvcc-O3", "nvcc-G", "ptxas-O0"): ""}  # every one: the compile property's
    for who, signature in cases.items():
        off, calls = _on_cpu(monkeypatch, 1, refusing(who))
        on, _ = _on_cpu(monkeypatch, 0, refusing(who))
        assert off.signature == on.signature == signature, who
        assert off.files == on.files and calls[-1] == (("nvcc-G",), 1), who
    off, _ = _on_cpu(monkeypatch, 1, refusing(("nvcc-G",)))
    on, _ = _on_cpu(monkeypatch, 0, refusing(("nvcc-G",)))
    assert (off.status, on.signature) == ("pass", "toolchain:build:nvcc-G")


def test_a_matrix_of_nvcc_g_alone_runs_it_on_every_round():
    from gpusem.interpreter.bundl.reference import reference

    progs = [parse_program(HALVES, "p.bundl")]
    matrix = _FakeGpuMatrix()
    matrix.configs = ("nvcc-G", "cpu")
    results = toolchain_property.check_round(progs, [reference(progs[0])], "cuda",
                                             matrix, sampled=False)
    assert matrix.calls == [(("nvcc-G",), 1)] and results[0].configs == ("nvcc-G",)
