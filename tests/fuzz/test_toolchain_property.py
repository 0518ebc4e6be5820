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
