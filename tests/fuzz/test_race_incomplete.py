"""An incomplete walk proves nothing, whether or not it reached for z3.

`race.analyse` walks a program without a z3 context first and, when the walk reaches
for z3 (a constant `if` condition is simplified by z3), walks it again in a fresh
context. The second path lost the incompleteness check (db8ce6d0): a call chain deeper
than the walk follows (`race_accesses`: depth 8) under `if 1 < 2` was reported
race-free with 0 pairs, the same program without the `if` "incomplete". Found reading
the race analysis (gencost, 2026-11-30); no generated program had met it (53 of 600
general programs took the second path, none incomplete).
"""

from __future__ import annotations

import pytest
from gpusem.calculus.bundl.parser import parse_program
from gpusem.typing_rules.bundl.race import analyse
from gpusem.typing_rules.bundl.race_accesses import Collector
from gpusem.typing_rules.bundl.race_context import NeedsZ3, without_context
from gpusem.typing_rules.bundl.stmt import check_program


def _chain(depth: int, guarded: bool) -> str:
    """main calls f0, f0 calls f1, ... f{depth-1} writes its thread's own cell."""
    fns = [f"fn f{i}(o : Global int[] @ thread[1]) at thread[1] uses 0 {{\n"
           f"  {f'f{i + 1}(o);' if i < depth - 1 else 'o[0] = o[0] + 1;'}\n}}\n"
           for i in reversed(range(depth))]
    call = "if 1 < 2 { f0(o1); }" if guarded else "f0(o1);"
    return ("machine blocks = 1, threads = 2;\n\nglobal out : int[2];\n\n" + "\n".join(fns)
            + "main {\n lower out into ob {\n  destruct {\n   lower ob into ot {\n"
            "    destruct {\n     partition ot into o1 by 2 {\n      group 2 {\n"
            f"       {call}\n      }}\n     }}\n    }}\n   }}\n  }}\n }}\n}}\n")


@pytest.mark.parametrize("guarded", [False, True])
def test_a_call_chain_deeper_than_the_walk_is_not_proved_race_free(guarded: bool):
    prog = parse_program(_chain(10, guarded), "chain.bundl")
    check_program(prog)  # well-typed: the analysis is asked about it in a campaign
    walk = Collector(prog)
    if guarded:  # the case this pins: the walk needs z3, so the second path runs
        with pytest.raises(NeedsZ3), without_context():
            walk.run()
    report = analyse(prog)
    assert not report.race_free, report.describe()
    assert report.races[0].witness.startswith("Call not analysed"), report.describe()


@pytest.mark.parametrize("guarded", [False, True])
def test_a_chain_the_walk_follows_is_proved_race_free_on_either_path(guarded: bool):
    report = analyse(parse_program(_chain(4, guarded), "chain.bundl"))
    assert report.race_free, report.describe()
