"""The lambda-cu -> CUDA compiler (compiler/lambdacu_cuda, issue 29 item 5): golden
code, and test_compile_correct on the cpu backend (the SIMT harness) for the examples,
the multi-pass folds and the traps."""

from pathlib import Path

import pytest
from gpusem.calculus.lambdacu.parser import parse_program
from gpusem.fuzz.lambdacu.compile_check import differential

from tests.lambdacu.cuda_goldens import EXAMPLES, emitted, golden

ROOT = Path(__file__).resolve().parents[2]
ALL = sorted(p.stem for p in (ROOT / "examples" / "lambdacu").glob("*.lcu"))


@pytest.mark.parametrize("name", EXAMPLES)
def test_golden_code(name):
    assert emitted(name) == golden(name).read_text(), (
        "emitted CUDA changed; if intended: python -m tests.lambdacu.cuda_goldens "
        "--update")


@pytest.mark.parametrize("name", ALL)
def test_compile_correct_examples(name):
    path = ROOT / "examples" / "lambdacu" / f"{name}.lcu"
    p = parse_program(path.read_text(), str(path))
    v = differential(p, "cpu", block=4)  # small blocks: every fold is multi-pass
    assert v.kind == "agree", (v.detail, v.reference, v.compiled)


MULTIPASS = """
kernel k(xs: [int], fs: [float]) -> (int, [int], int, [float], float, [int], [int]) {
  let s = REDUCE { i => xs[i] using xs } (iadd) #xs
  let p = SCAN { i => xs[i] using xs } (imax) #xs
  let m = REDUCE { i => xs[i] using xs } (imax) #xs
  let q = SCAN { i => fs[i] using fs } (fadd) #fs
  let f = REDUCE { i => fs[i] using fs } (fadd) #fs
  let ev, od = PARTITION { i => xs[i] using xs } { x => let r = mod x 3 in eq r 0 } #xs
  ret s, p, m, q, f, ev, od
}
function main() -> (int, [int], int, [float], float, [int], [int]) {
  let (xs) = [XS] in let (fs) = [FS] in run k(xs, fs)
}
"""


@pytest.mark.parametrize("n", [0, 1, 4, 5, 17, 70])
def test_multipass_folds(n):
    xs = [(i * 7919) % 23 - 30 for i in range(n)]  # all negative: imax's identity
    fs = [0.1 * (i + 1) for i in range(n)]
    text = MULTIPASS.replace("[XS]", f"[{', '.join(map(str, xs))}]" if xs
                             else "[:int]")
    text = text.replace("[FS]", f"[{', '.join(map(repr, fs))}]" if fs
                        else "[:float]")
    v = differential(parse_program(text, "multipass.lcu"), "cpu", block=4)
    assert v.kind == "agree", (v.detail, v.reference, v.compiled)


TRAPS = {
    "div": "let ys = MAP { i => let z = sub i 2 in div 10 z } 4",
    "subscript": "let ys = MAP { i => xs[i] using xs } 5",
    "permute-bounds": "let ys = PERMUTE { i => xs[i] using xs } { i => add i 1 } 4",
    "permute-1to1": "let ys = PERMUTE { i => xs[i] using xs } { i => div i 2 } 4",
}


@pytest.mark.parametrize("what", sorted(TRAPS))
def test_traps_are_the_interpreters(what):
    text = (f"kernel k(xs: [int]) -> [int] {{\n  {TRAPS[what]}\n  ret ys\n}}\n"
            "function main() -> [int] { let (xs) = [1, 2, 3, 4] in run k(xs) }\n")
    v = differential(parse_program(text, f"{what}.lcu"), "cpu", block=4)
    assert v.compiled.startswith("trap: ") and v.kind == "agree", v


def test_min_and_max_of_signed_zeros_compile_to_the_interpreters():
    # lc_min/lc_max are written out (-0.0 < +0.0), not fminf/fmaxf, whose answer for
    # two zeros is the platform's: glibc, x86's minss and the GPU's min.f32 differ
    from tests.lambdacu.test_interpreter import SIGNED_ZEROS

    v = differential(parse_program(SIGNED_ZEROS, "zeros.lcu"), "cpu", block=4)
    assert v.kind == "agree", (v.detail, v.reference, v.compiled)
    assert "main = ([-0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [-0.0, 0.0], -0.0, 0.0)" \
        in v.reference


def test_a_nan_of_either_sign_agrees_and_signed_zeros_still_differ():
    # The H200's `lambdacu:compile:mismatch` (seed 3, results/lambdacu/INDEX.toml):
    # `sqrt -5.0` is 0xffc00000 in numpy on x86 and 0x7fffffff on the GPU; both print
    # `nan` and no operation reads a NaN's sign, so the comparator was wrong (errata L13)
    import numpy as np

    from gpusem.calculus.lambdacu.values import F32, Arr
    from gpusem.fuzz.lambdacu.compile_check import agree

    def bits(word: int) -> F32:
        return F32(float(np.array([word], dtype=np.uint32).view(np.float32)[0]))

    x86_nan, gpu_nan = bits(0xFFC00000), bits(0x7FFFFFFF)
    assert np.float32(x86_nan.value).tobytes() != np.float32(gpu_nan.value).tobytes()
    want = (Arr("float", (x86_nan, F32(1.5))), x86_nan)
    assert agree(want, (Arr("float", (gpu_nan, F32(1.5))), gpu_nan), approx=False)
    assert not agree(want, (Arr("float", (gpu_nan, F32(2.5))), gpu_nan), approx=False)
    assert not agree((F32(-0.0),), (F32(0.0),), approx=False)
    assert not agree((x86_nan,), (F32(0.0),), approx=False)
