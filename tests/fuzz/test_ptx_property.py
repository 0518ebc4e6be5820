"""The `ptx` property of the Bundl target (issue 23, item 3): generated programs, our
compiler, every installed NVRTC, the static PTX checks. cpu only: no GPU anywhere."""

from __future__ import annotations

from pathlib import Path

from gpusem.calculus.bundl.parser import parse_program
from gpusem.compiler.backends.nvrtc_lib import find_nvrtc
from gpusem.compiler.backends.ptx_oracle import check_cuda, check_many
from gpusem.compiler.bundl_cuda.pipeline import CompileOptions, compile_program
from gpusem.fuzz.bundl.generated import Generated
from gpusem.fuzz.bundl.sample import draw
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.fuzz.bundle import list_bundles
from gpusem.fuzz.campaign import Campaign

ROOT = Path(__file__).resolve().parents[2]
T1 = ROOT / "tests/compiler/ptx/t1_scratch_nc.bundl"
NONTRIVIAL = "ptx:kernel reads one buffer and writes another"


def _t1(extra: str = "") -> Generated:
    text = T1.read_text()
    if extra:
        text = text.replace("global out : int[1];", "global out : int[1];\n"
                            "global junk : int[4];")
        text = text.replace("  s[0] = 5;", f"  s[0] = 5;\n{extra}")
    return Generated(parse_program(text, str(T1)), race_free_by_construction=False)


def _versions() -> str:
    return "+".join(f"{n.version[0]}.{n.version[1]}" for n in find_nvrtc())


def test_a_short_campaign_reaches_nontrivial_kernels_under_every_nvrtc(
        tmp_path) -> None:
    # a count, not a time budget (issue 32.11): the test is about what 240 programs
    # reach, and a loaded machine must not leave it short of its 200. The shrink of a
    # finding is capped (issue 32): at the default cap (a fifth of 600 s) hypothesis
    # spent ~100 s of the test's 133 s on the one finding; the programs, the
    # coverage and the finding's evidence are the same at 8 s
    summary = Campaign("bundl", prop="ptx", budget_s=600, max_programs=240, seed=1,
                       coverage=True, out_dir=str(tmp_path), round_size=80,
                       hunt_cap_s=8).run()
    table = summary.coverage["ptx"]
    built = {n.label: table.get(f"ptx:{n.label}:built", 0) for n in find_nvrtc()}
    assert len([v for v in built.values() if v > 0]) >= 3, built
    assert min(built.values()) >= 0.9 * summary.programs >= 200, (built, summary)
    assert table[NONTRIVIAL] >= 50, table[NONTRIVIAL]
    assert all(table.get(f"ptx:{n.label}:ld.global.nc", 0) >= 50 for n in find_nvrtc())
    assert summary.internal == []
    for f in summary.findings:  # whatever NVVM does, a finding carries its evidence
        assert f.signature.startswith("ptx:")
        bundle = next(b for b in list_bundles(tmp_path) if b.signature == f.signature)
        assert ">>" in bundle.files["ptx_excerpt.txt"] and "kernel.cu" in bundle.files


def test_t1_is_a_finding_with_its_ptx_evidence() -> None:
    target = BundlTarget()
    res = target.check(_t1(), "ptx")
    assert res.status == "finding", res
    assert res.signature == f"ptx:ld.nc-read-only:nvvm:{_versions()}"
    assert res.files["kernel.cu"].count("int* __restrict__") == 3
    excerpt = res.files["ptx_excerpt.txt"]
    marked = [ln for ln in excerpt.splitlines() if ln.startswith(">>")]
    assert len(marked) == 2 * len(find_nvrtc())  # the store and the load, per version
    assert all(("ld.global.nc" in ln) != ("st.global" in ln) for ln in marked)
    for n in find_nvrtc():
        name = f"nvrtc-{n.version[0]}.{n.version[1]}.ptx"
        assert f"release {n.version[0]}.{n.version[1]}" in res.files[name]
    assert target.finding_meta(res)["nvrtc"][0]["arch"] == "compute_90a"
    assert target.replay(res.files, {"property": "ptx"}).signature == res.signature


def test_shrinking_keeps_the_check_failing(monkeypatch) -> None:
    monkeypatch.setenv("GPUSEM_SHRINK_S", "30")
    padded = _t1("  junk[0] = 1;\n  junk[1] = junk[0] + 2;\n  junk[2] = 3;\n")
    target = BundlTarget()
    res = target.check(padded, "ptx")
    assert res.status == "finding" and res.size >= 7
    # the fixpoint (67 candidates read, 14 batches) decides, not the clock: at the
    # default 60 s cap a loaded machine once stopped it with junk left
    small = target.minimise(padded, res, "ptx", budget_s=600)
    assert small.signature == res.signature
    assert small.size < res.size
    assert "junk" not in small.files["program.bundl"]
    assert not target.shrink_stats[res.signature]["capped"]


def test_the_round_screen_gives_each_kernels_own_verdict() -> None:
    """`check_many` (one NVRTC program per version for a round) and `check_cuda` (each
    kernel alone) agree on every kernel: the same .nc loads, buffers read and written,
    and findings."""
    sources = []
    for generated in draw(BundlTarget().strategy("ptx"), 40, 5):
        try:
            sources.append(compile_program(generated.program, CompileOptions()).source)
        except Exception:  # noqa: BLE001 - unsupported by our compiler: not for here
            continue
    sources.append(compile_program(_t1().program, CompileOptions()).source)
    assert len(sources) >= 30
    for many, alone in zip(check_many(sources), map(check_cuda, sources), strict=True):
        for m, a in zip(many.toolchains, alone.toolchains, strict=True):
            assert m.verdict is not None and a.verdict is not None
            assert (m.verdict.nc_loads, m.verdict.read, m.verdict.written) == (
                a.verdict.nc_loads, a.verdict.read, a.verdict.written)
            assert m.findings == a.findings
    assert many.findings  # the last, T1, fails; and was checked alone


def test_the_gpuir_target_has_the_property_too() -> None:
    from gpusem.fuzz.gpuir.strategies import kernels
    from gpusem.fuzz.gpuir.target import GpuirTarget

    target = GpuirTarget()
    drawn = draw(kernels(), 12, 3)
    assert target.prefetch(drawn, "ptx")
    results = [target.check(k, "ptx") for k in drawn]
    assert {r.status for r in results} <= {"pass", "invalid"}
    assert sum(r.status == "pass" for r in results) >= 8
    built = [lbl for k in drawn for lbl in target.coverage(k)
             if lbl.endswith(":built")]
    assert len(built) >= 8 * len(find_nvrtc())
    assert set(target.coverage_labels()) >= set(built)


def test_a_program_without_defined_behaviour_is_not_blamed_on_nvvm() -> None:
    """The AST reducer keeps only the signature: a shrunk program once read `st[7]`
    of an `int[1]`. Such a kernel may be compiled any way: invalid, not a finding."""
    text = T1.read_text().replace("out[0] = s[0];", "out[0] = s[(7 % 8 + 8) % 8];")
    out_of_bounds = Generated(parse_program(text, "oob.bundl"), False)
    res = BundlTarget().check(out_of_bounds, "ptx")
    assert (res.status, res.kind) == ("invalid", "undefined"), res
    assert "out of bounds" in res.detail


def test_the_committed_ptx_bundles_are_unobservable_now() -> None:
    """results/toolchain/ptx_bundles: the two NVVM findings of the 10-minute campaign
    (NVRTC 11.8, 12.9, 13.5 of the `nvrtc` extra). Their PTX still breaks the check
    (a `.nc` load of the written scratch), but their stores leave the scratch as it
    began (right on the H200: FINDINGS.md, "Not NVIDIA's"), so the property no longer
    calls them findings: replay says they do not reproduce, and why."""
    from gpusem import api

    bundles = sorted((ROOT / "results/toolchain/ptx_bundles").glob("*/bundle.json"))
    assert len(bundles) == 2
    for meta in bundles:
        replay = api.replay(meta.parent)
        assert not replay.reproduces, meta.parent.name
        assert replay.now.kind == "unobservable", replay.now
        report = check_cuda((meta.parent / "kernel.cu").read_text())
        assert {f.check for f in report.findings} == {"ld.nc-read-only"}


def test_a_ptx_campaign_without_nvrtc_is_bad_input(tmp_path) -> None:
    """Exit 2 with the one-line reason before any program (it was exit 3: every
    round's `internal` finding)."""
    import os
    import subprocess
    import sys

    for target in ("bundl", "gpuir"):
        res = subprocess.run(
            [sys.executable, "-m", "gpusem.cli.main", "fuzz", "--target", target,
             "--property", "ptx", "--budget", "5s", "--out", str(tmp_path / target)],
            capture_output=True, text=True, timeout=300, check=False,
            env=os.environ | {"GPUSEM_NVRTC_PATH": str(tmp_path),
                              "PYTHONPATH": str(ROOT / "src")})
        assert res.returncode == 2, res.stderr
        assert res.stderr.strip().splitlines() == [
            next(ln for ln in res.stderr.splitlines() if "no NVRTC installed" in ln)]


def test_a_finding_whose_store_changes_nothing_is_not_kept() -> None:
    """Observability (toolchain item 4): T1 stores 5 into the scratch that the `.nc`
    load reads; storing 0, what the scratch already holds, would make the stale read
    invisible on a GPU (the two committed ptx bundles right on the H200), so the
    property calls it `unobservable` and the reducer, which keeps the signature only,
    cannot shrink a finding into it."""
    target = BundlTarget()
    zero = T1.read_text().replace("  s[0] = 5;", "  s[0] = 0;")
    assert zero != T1.read_text()
    res = target.check(Generated(parse_program(zero, str(T1)), False), "ptx")
    assert (res.status, res.kind) == ("invalid", "unobservable"), res
    assert target.check(_t1(), "ptx").status == "finding"
    for bundle in sorted((ROOT / "results/toolchain/ptx_bundles").glob("*/")):
        text = (bundle / "program.bundl").read_text()
        res = target.check(Generated(parse_program(text, "p.bundl"), False), "ptx")
        assert (res.status, res.kind) == ("invalid", "unobservable"), (bundle, res)


def test_a_reducers_batch_checks_a_failing_program_alone_only_when_read(
        monkeypatch) -> None:
    """`prefetch_until(defer=True)` (the AST reducer's batches): a program the round's
    screen fails is checked alone (`check_cuda`) when `check` reads it, not before; a
    shrink step reads a batch only up to its first failure. Read, its verdict is the
    one the undeferred round gives."""
    from gpusem.fuzz.bundl import ptx_property

    alone: list[str] = []
    real = ptx_property.check_cuda
    monkeypatch.setattr(ptx_property, "check_cuda",
                        lambda src, nvrtcs: alone.append(src) or real(src, nvrtcs))
    memcpy = ROOT / "examples/bundl/memcpy_global.bundl"
    ok = Generated(parse_program(memcpy.read_text(), str(memcpy)), False)
    deferred = BundlTarget()
    assert deferred.prefetch_until([_t1(), ok], "ptx", None, defer=True) == 2
    assert deferred.check(ok, "ptx").status == "pass" and alone == []
    res = deferred.check(_t1(), "ptx")
    assert res.status == "finding" and len(alone) == 1
    at_once = BundlTarget()
    assert at_once.prefetch([_t1(), ok], "ptx") and len(alone) == 2
    assert at_once.check(_t1(), "ptx") == res and len(alone) == 2
