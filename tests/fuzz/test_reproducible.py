"""A round's programs depend on its seed alone, not on the process that draws them
(fuzz/reproducible.py): the Dask engine, --jobs and --resume run rounds wherever a
worker is free. The engine generation mode here; the direct mode's alike in
tests/fuzz/test_direct_generation.py."""

from __future__ import annotations

import hashlib
import subprocess
import sys

from gpusem.fuzz.reproducible import stable_constants

ROUND = """
import hashlib, sys
from gpusem.calculus.bundl.printer import print_program
from gpusem.fuzz.bundl.generated import as_generated
from gpusem.fuzz.bundl.target import BundlTarget
from gpusem.fuzz.campaign import round_seed
from gpusem.fuzz.hunt import generate_round

def digest(r):
    drawn = generate_round(BundlTarget().strategy("compile"), round_seed(2, r), 20,
                           generation="engine")
    text = "".join(print_program(as_generated(d.program).program) for d in drawn)
    return hashlib.sha256(text.encode()).hexdigest()
"""


def test_a_round_is_the_same_fresh_and_after_checking_another():
    """Round 1 drawn by a fresh process, and drawn here after round 0 was batch-checked
    (which imports the compiler, the backends, the race analysis: local modules whose
    constants hypothesis would otherwise draw from)."""
    fresh = subprocess.run([sys.executable, "-c", ROUND + "print(digest(1))"],
                           capture_output=True, text=True, check=True).stdout.strip()
    scope: dict = {}
    exec(ROUND, scope)  # noqa: S102 - the same code, in this process
    from gpusem.fuzz.bundl.target import BundlTarget
    from gpusem.fuzz.campaign import round_seed
    from gpusem.fuzz.hunt import generate_round

    target = BundlTarget()
    round0 = generate_round(target.strategy("compile"), round_seed(2, 0), 20,
                            generation="engine")
    assert target.prefetch([d.program for d in round0], "compile")
    assert scope["digest"](1) == fresh
    assert len(hashlib.sha256(b"").hexdigest()) == len(fresh)


def test_this_hypothesis_has_a_pool_to_pin():
    """If hypothesis renames its local-constant pool, pinning silently does nothing:
    fail here instead, so the patch is brought up to date."""
    with stable_constants() as pinned:
        assert pinned


def test_this_hypothesis_has_every_internal_gpusem_uses():
    """gpusem reaches into hypothesis's internals in one module (fuzz/reproducible.py);
    on a hypothesis that moved one of them, fail here, naming it."""
    from gpusem.fuzz.reproducible import missing_internals

    assert missing_internals() == []


def test_generating_leaves_no_hypothesis_folder_in_the_working_folder(tmp_path):
    """Issue 32.12: hypothesis's unicode tables went to `./.hypothesis/`; while gpusem
    generates they go to gpusem's cache."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "HYPOTHESIS_STORAGE_DIRECTORY"}
    env |= {"GPUSEM_CACHE_DIR": str(tmp_path / "cache"),
            "PYTHONPATH": str(root / "src")}
    work = tmp_path / "work"
    work.mkdir()
    code = ("from hypothesis import strategies as st\n"
            "from gpusem.fuzz.hunt import generate_round\n"
            "s = st.text(alphabet=st.characters(categories=['L']), min_size=1)\n"
            "assert len(generate_round(s, 3, 10)) == 10\n")
    subprocess.run([sys.executable, "-c", code], cwd=work, env=env, check=True,
                   timeout=300)
    assert not (work / ".hypothesis").exists()
    assert list((tmp_path / "cache" / "hypothesis").rglob("charmap*"))


def test_numpy_random_is_left_alone_while_generating_and_managed_after():
    """generate_round does not have hypothesis save and reseed numpy's global random
    state around each example (issue 31.3: ~0.1 ms an example); the state is the same
    after a round, and hypothesis manages it again for everything else."""
    import numpy as np
    from hypothesis import strategies as st
    from hypothesis.internal import entropy

    from gpusem.fuzz.hunt import generate_round
    from gpusem.fuzz.reproducible import numpy_random_left_alone

    def managed() -> bool:
        return any(isinstance(r, entropy.NumpyRandomWrapper)
                   for r in list(entropy.RANDOMS_TO_MANAGE.values()))

    generate_round(st.integers(0, 9), 0, 3)  # numpy's registered by now
    assert managed()
    with numpy_random_left_alone():
        assert not managed()
    assert managed()
    np.random.seed(123)
    before = np.random.get_state()[1].copy()
    seen = []
    generate_round(st.integers(0, 9).map(lambda x: seen.append(managed()) or x), 1, 5)
    assert seen and not any(seen)
    assert (np.random.get_state()[1] == before).all() and managed()
