"""Regenerate the README's tour (real output of real commands) and its fault list.

    python scripts/readme_tour.py          # rewrites the TOUR / FAULTS sections in place
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(cmd: str, lines: int | None = None) -> str:
    env = dict(os.environ, COLUMNS="100")
    out = subprocess.run(cmd, shell=True, capture_output=True, text=True, env=env,
                         cwd=ROOT)
    text = (out.stdout + out.stderr).rstrip()
    return "\n".join(text.splitlines()[:lines]) if lines else text


STEPS = [
    ("Type-check a program (Appendix A.2). Every rule is one clause named after it; a "
     "rejection names the rule, the span and both perspectives:",
     "gpusem check examples/bundl/block_reduce_shared.bundl; "
     "gpusem check examples/bundl/fig12_write_down.bundl", None),
    ("Run it on the small-step machine (A.3): round-robin, seeded random or exhaustive:",
     "gpusem run examples/bundl/block_reduce_shared.bundl", None),
    ("Where the appendix is unsound, `--rules paper` runs it as printed: this program "
     "type-checks under the paper's rules and gets stuck (`examples/bundl/paper_unsound/`):",
     "gpusem run examples/bundl/paper_unsound/alloc_shared_below_block.bundl --rules paper",
     None),
    ("Step through the meaning rule by rule (interactive without `--commands`):",
     'gpusem step examples/bundl/block_reduce_shared.bundl --commands '
     '"step; break write out[1]; continue; mem global"', 30),
    ("Compile to CUDA and compare the kernel with the interpreter on the CPU SIMT "
     "harness, under three fibre schedules:",
     "gpusem compile examples/bundl/block_reduce_shared.bundl -o /tmp/k.cu; "
     "gpusem exec examples/bundl/block_reduce_shared.bundl --backend cpu", None),
    ("Check a GPU IR program's synchronisation through AMIR (Exo-GPU Sec. 5); a "
     "rejection shows both conflicting accesses:",
     "gpusem synccheck examples/gpuir/fence_broadcast_missing_fence.gpuir", 14),
]

FUZZ = '''Fuzz the compiler. With a seeded fault switched on (here C division miscompiled as
floor division), the campaign finds it, writes a bundle the moment it sees it, shrinks
it in place to one statement, and exits 1 (0 when it finds nothing, 3 when gpusem
itself fails):

```
$ GPUSEM_FAULT=floor-division gpusem fuzz --target bundl --budget 60s --out fuzz-out
bundl:compile ━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━╸   200 programs 1 findings 211/min 0:00:56
200 programs, 1 finding classes (1 new), 191/min, 14 not compared (illegal, racy or unsupported), 0 not runnable on this backend
compile disagree	compile:disagree:disagree:out:int:value	4->1 stmts	shrunk	7s	x10	new	fuzz-out/bundl-compile-disagree-88ee4cd7c9
exit 1
bundles in fuzz-out: 1
$ cat fuzz-out/bundl-compile-disagree-88ee4cd7c9/program.bundl
machine blocks = 1, threads = 1;

global out : int[1];

main {
  out[0] = -5 / 2;
}
$ gpusem replay fuzz-out/bundl-compile-disagree-88ee4cd7c9
reproduces: compile:disagree:disagree:out:int:value: disagree: out[0] is -3 on the backend (schedule 0), the interpreter says -2
```

`-5 / 2` is -2 in C and in Bundl, -3 under floor division. The signature says where it
diverged (a wrong `value` in the `int` array `out`; the trace names the construct: a
store that divides); the bundle holds the
program, the kernel, `repro.cu` (a standalone CUDA program that `nvcc -arch=sm_90a
repro.cu` builds, exiting 1 while the bug reproduces), the inputs, the expected and
actual memories, the trace and a README with the tool versions. `replay` exits 1 while
the bug reproduces (`git bisect run gpusem replay DIR`). `gpusem fuzz --target gpuir`
runs the AMIR seq = par property the same way, and `--target appy` aims at APPy's
compiler.
'''


def tour() -> str:
    blocks = []
    for title, cmd, lines in STEPS:
        blocks.append(f"{title}\n\n```\n$ {cmd}\n{run(cmd, lines)}\n```\n")
    return "\n".join(blocks) + "\n" + FUZZ


def faults() -> str:
    from gpusem.compiler.bundl_cuda.faults import FAULTS as BUNDL
    from gpusem.compiler.gpuir_cuda.faults import FAULTS as GPUIR

    rows = [f"- `GPUSEM_FAULT={name}`: {text}" for name, text in {**BUNDL, **GPUIR}.items()]
    return "\n".join(rows)


def main() -> None:
    readme = (ROOT / "README.md").read_text()
    for marker, text in (("TOUR", tour()), ("FAULTS", faults())):
        pattern = re.compile(rf"<!-- {marker} -->.*?<!-- /{marker} -->", re.S)
        block = f"<!-- {marker} -->\n{text}\n<!-- /{marker} -->"
        if pattern.search(readme):
            readme = pattern.sub(lambda _: block, readme)
        else:
            readme = readme.replace(marker, block, 1)
    (ROOT / "README.md").write_text(readme)


if __name__ == "__main__":
    main()
