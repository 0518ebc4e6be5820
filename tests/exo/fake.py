"""A stand-in for the Exo worker that answers from recorded Exo-GPU output
(tests/exo/data/answers_<dialect>.json, written by `python -m tests.exo.goldens
--record` with that Exo installed), so CI exercises everything after Exo's answer."""

from __future__ import annotations

import json

from gpusem.calculus.gpuir.parser import parse_module
from gpusem.compiler.gpuir_exo.driver import ExoAnswer, ExoInstall
from gpusem.compiler.gpuir_exo.emit import emit_proc
from gpusem.compiler.gpuir_exo.verdict import ExoVerdict, classify

from tests.exo.goldens import DATA, PROGRAMS


class RecordedExo:
    """Answers `check`/`explain` for the emitted text of tests/exo/programs/*."""

    def __init__(self, dialect: str):
        d = json.loads((DATA / f"answers_{dialect}.json").read_text())
        info = d["install"]
        self.install = ExoInstall(info["python"], info["exo_file"], info["fingerprint"],
                                  info["branch"], info["commit"], info["dialect"],
                                  info["version"])
        self.by_text: dict[str, dict] = {}
        for stem, item in d["answers"].items():
            if "answer" not in item:
                continue
            src = (PROGRAMS / f"{stem}.gpuir").read_text()
            proc = parse_module(src, f"{stem}.gpuir").procs[-1]
            self.by_text[emit_proc(proc, {}, dialect).text] = item  # type: ignore

    def check(self, source, proc, sizes, *, compile=True, code=False) -> ExoAnswer:
        item = self.by_text[source]
        return ExoAnswer(classify(item["answer"], item["failure"]), item["answer"], 0.0)

    def explain(self, source, proc, sizes) -> str:
        return self.by_text[source].get("explain", "")

    def close(self) -> None:
        pass


class BundleExo(RecordedExo):
    """`RecordedExo` for a committed bundle: Exo's answer recorded in
    tests/exo/data when the bundle's program is one of tests/exo/programs, else the
    verdict the bundle itself recorded (`verdicts.json`), so `gpusem replay` of a
    campaign's bundle runs gpusem's side live without Exo. Such a recorded verdict
    carries no debug log: a bundle whose Exo side is a hazard needs the first kind."""

    def __init__(self, dialect: str, recorded: dict | None = None):
        super().__init__(dialect)
        self.recorded = recorded

    def check(self, source, proc, sizes, *, compile=True, code=False) -> ExoAnswer:
        if source in self.by_text or self.recorded is None:
            return super().check(source, proc, sizes, compile=compile, code=code)
        return ExoAnswer(ExoVerdict(**self.recorded), None, 0.0)

    def explain(self, source, proc, sizes) -> str:
        return self.by_text[source].get("explain", "") if source in self.by_text else ""
