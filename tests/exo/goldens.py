"""Golden files of the Exo-GPU translation (issue 16), and the recorded Exo answers the
CI tests classify. Tests only compare; these commands write (from the repository root):

    python -m tests.exo.goldens --update          # emit / read goldens (no Exo needed)
    GPUSEM_EXO_PYTHON=PY python -m tests.exo.goldens --record
        # Exo-GPU's raw worker answers on tests/exo/programs/*.gpuir, for the branch
        # PY has: tests/exo/data/answers_<dialect>.json (needs that Exo installed)
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PROGRAMS = HERE / "programs"
GOLDEN = HERE / "goldens"
DATA = HERE / "data"
DIALECTS = ("pldi26", "endgame")


def gpuir_files() -> list[Path]:
    return sorted(PROGRAMS.glob("*.gpuir")) + sorted(
        (ROOT / "examples" / "gpuir").glob("*.gpuir"))


def emitted(path: Path, dialect: str) -> str:
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.gpuir_exo.emit import Unexpressible, emit_proc
    from gpusem.typing_rules.gpuir.frontend import header_defines

    src = path.read_text()
    proc = parse_module(src, path.name).procs[-1]
    try:
        return emit_proc(proc, header_defines(src), dialect).standalone()  # type: ignore
    except Unexpressible as err:
        return f"# {err.one_line()}\n"


def read_text(path: Path) -> str:
    from gpusem.compiler.gpuir_exo.read import read_file

    out = []
    for r in read_file(path.read_text(), path.name):
        out.append(f"# {r.test} -> {r.name} (call at line {r.call_line}; expects "
                   f"{'error' if r.expects_error else 'ok'} of {r.runs}; defines "
                   f"{r.defines}; {r.dropped} tracing call(s) dropped)")
        out.append(r.text if r.read else f"# not read: {r.reason}\n")
    return "\n".join(out)


def golden_cases() -> dict[Path, str]:
    """golden path -> current text."""
    cases = {}
    for p in gpuir_files():
        for d in DIALECTS:
            cases[GOLDEN / "emit" / d / (p.stem + ".py.txt")] = emitted(p, d)
    for p in sorted(PROGRAMS.glob("*.txt")):
        cases[GOLDEN / "read" / (p.stem + ".gpuir.txt")] = read_text(p)
    return cases


def record() -> Path:
    """Exo's raw answers (check, and explain for a hazard) on every program."""
    from gpusem.calculus.gpuir.parser import parse_module
    from gpusem.compiler.gpuir_exo.driver import ExoDriver
    from gpusem.compiler.gpuir_exo.emit import Unexpressible, emit_proc

    out: dict = {}
    with ExoDriver() as d:
        install = d.install
        for p in sorted(PROGRAMS.glob("*.gpuir")):
            proc = parse_module(p.read_text(), p.name).procs[-1]
            try:
                es = emit_proc(proc, {}, install.dialect)
            except Unexpressible as err:
                out[p.stem] = {"unexpressible": err.construct}
                continue
            answer, why = d.raw({"op": "check", "source": es.text, "proc": es.proc,
                                 "sizes": es.sizes, "compile": True, "stem": es.proc})
            for a in (answer or {},):
                a.pop("seconds", None), a.pop("wall", None), a.pop("id", None)
                a.pop("where", None)
            item = {"answer": answer, "failure": why}
            if answer and answer.get("exc_class") == "CamsporkError":
                log = d.explain(es.text, es.proc, es.sizes).splitlines()
                k = next((i for i, ln in enumerate(log) if "HAZARD" in ln), 0)
                item["explain"] = "\n".join(log[max(0, k - 30):k + 30])
            out[p.stem] = item
    path = DATA / f"answers_{install.dialect}.json"
    DATA.mkdir(exist_ok=True)
    path.write_text(json.dumps({"install": install.as_json(), "answers": out},
                               indent=1, sort_keys=True) + "\n")
    return path


def main(argv: list[str]) -> None:
    if "--record" in argv:
        print(f"wrote {record()}")
        return
    if "--update" not in argv:
        raise SystemExit(__doc__)
    cases = golden_cases()
    for path, text in cases.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    print(f"wrote {len(cases)} goldens under {GOLDEN}")


if __name__ == "__main__":
    main(sys.argv[1:])
