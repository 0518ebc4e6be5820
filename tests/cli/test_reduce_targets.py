"""`gpusem reduce` for every target (issue 32.8): a bundle folder of any target (a
plugin's through the target interface: `load_program` and `minimise`), or a program
file of another language (`.gpuir`), shrunk by the target's own reducer while the
finding's signature stays, with progress lines on stderr; before, `reduce` took
Bundl programs only and said nothing for minutes."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from gpusem.cli.main import cli
from gpusem.fuzz.targets import CheckResult, Target, register_target
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]


class Sums(Target):
    """A team's plugin: lists of ints; a "miscompile" when the list holds a 7 and sums
    to >= 50. Its reducer drops one element at a time while the finding stays."""

    name = "sums"
    properties = ("compile",)

    def strategy(self, prop):
        return st.lists(st.integers(0, 60), max_size=10)

    def size(self, program) -> int:
        return len(program)

    def check(self, program, prop="compile") -> CheckResult:
        xs = list(program)
        if 7 in xs and sum(xs) >= 50:
            return CheckResult("finding", "wrong:big7", "wrong", f"sum {sum(xs)}",
                               {"program.json": json.dumps(xs)}, len(xs))
        return CheckResult("pass")

    def replay(self, files, meta) -> CheckResult:
        return self.check(self.load_program(files, meta), meta["property"])

    def load_program(self, files, meta):
        return json.loads(files["program.json"])

    def minimise(self, program, result, prop, budget_s=None):
        xs, best = list(program), result
        changed = True
        while changed:
            changed = False
            for i in range(len(xs)):
                res = self.check(xs[:i] + xs[i + 1:], prop)
                if res.signature == result.signature:
                    xs, best, changed = xs[:i] + xs[i + 1:], res, True
                    break
        return best


register_target("sums", Sums)


def test_a_plugin_targets_bundle_is_reduced_through_the_target_interface(
        tmp_path, monkeypatch):
    monkeypatch.setenv("GPUSEM_PROGRESS_EVERY_S", "0")  # a line for every check
    bundle = tmp_path / "sums-wrong"
    bundle.mkdir()
    (bundle / "bundle.json").write_text(json.dumps({
        "target": "sums", "backend": "cpu", "property": "compile",
        "signature": "wrong:big7", "kind": "wrong"}))
    (bundle / "program.json").write_text(json.dumps([3, 9, 7, 1, 30, 2, 40, 5]))
    res = CliRunner().invoke(cli, ["reduce", str(bundle), "--budget", "60s"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "sums-wrong.reduced"
    assert json.loads((out / "program.json").read_text()) == [7, 40, 5]
    assert "8 -> 3 (sums:compile, wrong:big7;" in res.output
    progress = [ln for ln in res.stderr.splitlines() if ln.startswith("reduce: ")]
    assert progress and progress[-1].endswith("smallest 8 -> 3")


def test_a_target_without_a_reducer_says_so(tmp_path):
    class NoReducer(Sums):
        minimise = Target.minimise

    register_target("sums-plain", NoReducer)
    bundle = tmp_path / "b"
    bundle.mkdir()
    (bundle / "bundle.json").write_text(json.dumps({
        "target": "sums-plain", "backend": "cpu", "property": "compile",
        "signature": "wrong:big7", "kind": "wrong"}))
    (bundle / "program.json").write_text("[7, 50]")
    res = CliRunner().invoke(cli, ["reduce", str(bundle)])
    assert "target sums-plain cannot reduce a program" in str(res.exception)


def test_a_gpuir_program_file_is_reduced_with_progress_lines(tmp_path, monkeypatch):
    """GPU IR's line reducer on a user's file that a seeded fault miscompiles (the
    fence dropped: the broadcast reads stale shared memory)."""
    from gpusem.fuzz.gpuir.target import GpuirTarget, SourceKernel

    monkeypatch.setenv("GPUSEM_FAULT", "gpuir-fence-dropped")
    monkeypatch.setenv("GPUSEM_PROGRESS_EVERY_S", "0")
    src = tmp_path / "fb.gpuir"
    src.write_text((ROOT / "examples" / "gpuir" / "fence_broadcast.gpuir").read_text())
    res = CliRunner().invoke(cli, ["reduce", str(src), "--budget", "20s"])
    assert res.exit_code == 0, res.output + res.stderr
    small = (tmp_path / "fb.reduced.gpuir").read_text()
    assert small.count("\n") < src.read_text().count("\n")
    assert "(gpuir:seqpar, seqpar:" in res.output
    assert [ln for ln in res.stderr.splitlines() if ln.startswith("reduce: ")]
    again = GpuirTarget().check(SourceKernel(small), "seqpar")
    assert again.status == "finding" and again.signature.startswith("seqpar:")


def test_ckernel_and_appy_read_their_bundles_back():
    """`load_program` of the committed bundles gives the programs they hold."""
    from gpusem.calculus.appy.printer import print_program
    from gpusem.calculus.ckernel.printer import print_kernel
    from gpusem.fuzz.appy.target import AppyTarget
    from gpusem.fuzz.ckernel.target import CkernelTarget

    for target, folder, show in (
            (CkernelTarget(), "toolchain/ckernel_cuda_bundles/ckernel-mismatch-46671d2b2a",
             lambda k: print_kernel(k)),
            (AppyTarget(), "appy/h100/bundles/appy-wrong-5a195b361d",
             lambda p: print_program(p.fn))):
        d = ROOT / "results" / folder
        files = {p.name: p.read_text() for p in d.iterdir() if p.is_file()}
        program = target.load_program(files, json.loads(files["bundle.json"]))
        name = "program.ck" if "program.ck" in files else "program.py"
        assert show(program) == files[name]
        target.close()
