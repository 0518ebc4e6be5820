"""Pin divergences as bundles: check given GPU IR programs (minimal ones, written by
hand or by the reducer) with both checkers and write a bundle for each finding, as a
campaign would (`gpusem replay DIR` re-runs it). results/exo/findings_<branch>/ is made
this way from tests/exo/programs/*.gpuir:

    python -m gpusem.fuzz.exo.pin --exo-python PY --out DIR FILE.gpuir ...
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from gpusem.calculus.errors import GpusemError


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exo-python")
    ap.add_argument("--out", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    if a.exo_python:
        os.environ["GPUSEM_EXO_PYTHON"] = a.exo_python
    from gpusem.fuzz.bundle import write_bundle
    from gpusem.fuzz.exo.checking import check_text
    from gpusem.fuzz.exo.findings import result_of
    from gpusem.fuzz.exo.target import ExoTarget
    from gpusem.typing_rules.gpuir.frontend import header_defines

    try:
        target = ExoTarget()
    except GpusemError as err:
        raise SystemExit(f"gpusem: {err.one_line()}") from None
    try:
        for f in a.files:
            src = Path(f).read_text()
            c = check_text(target.driver, src, header_defines(src))
            if c.unexpressible:
                print(f"{f}: not expressible: {c.unexpressible}")
                continue
            res = result_of(c)
            if res.status != "finding":
                print(f"{f}: agree ({c.exo.verdict.short() if c.exo else '?'})")
                continue
            meta = {"target": "exo", "backend": "cpu", "property": "verdict",
                    "signature": res.signature, "kind": res.kind, "detail": res.detail,
                    "size": res.size, "shrunk": True, "source": Path(f).name}
            meta |= target.finding_meta(res)
            print(f"{f}: {res.signature} -> {write_bundle(a.out, meta, res.files)}")
    finally:
        target.close()


if __name__ == "__main__":
    main()
