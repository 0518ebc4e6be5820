"""Issue 24: a scripted debugger session (`gpusem step FILE --commands ...`, also
`gpusem replay DIR --step --commands ...`) ends with the house's exit codes
(docs/debugger.md): 0 the program ran to its end or the script stopped it early, 1
stuck / trap / deadlock / a failing check, 2 a budget ran out or a command of the
script was unknown or malformed; a nonzero exit says why in one line on stderr.
Before issue 24 every one of these sessions exited 0."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import pexpect
import pytest

from tests.child_signals import default_sigint

ROOT = Path(__file__).resolve().parents[2]
BUNDL = ROOT / "examples" / "bundl"
GPUIR = ROOT / "examples" / "gpuir"


def step(*args: str) -> tuple[int, str, str]:
    """`gpusem step ARGS` in this process: (exit code, stdout, stderr)."""
    from gpusem.cli.main import main

    out, err = io.StringIO(), io.StringIO()
    argv = sys.argv
    sys.argv = ["gpusem", "step", *args]
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as stop:
        code = stop.code if isinstance(stop.code, int) else int(stop.code is not None)
    finally:
        sys.argv = argv
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize("args", [
    (str(BUNDL / "map_double.bundl"), "--commands", "continue"),
    (str(BUNDL / "map_double.bundl"), "--commands", "step 2; threads"),  # stopped early
    (str(BUNDL / "block_reduce_shared.bundl"), "--commands",
     "break write out[1]; continue; mem global"),                         # a breakpoint
    (str(GPUIR / "fence_broadcast.gpuir"), "--commands", "continue"),
    (str(GPUIR / "fence_broadcast.gpuir"), "--commands", "step 3; quit; step 100"),
])
def test_a_normal_end_or_an_early_stop_exits_0(args):
    code, out, err = step(*args)
    assert (code, err) == (0, ""), out[-2000:]


@pytest.mark.parametrize("args,state,words", [
    ((str(BUNDL / "fig11_read_up.bundl"),), "stuck",
     ["fig11_read_up.bundl:14:8:", "[E-Var]", "perspective mismatch"]),
    ((str(BUNDL / "paper_unsound" / "partition_offset_c_times_p.bundl"), "--rules",
      "paper"), "trap", ["[S-Arr-Assn]", "out of bounds"]),
    ((str(BUNDL / "paper_unsound" / "psi_indexed_by_p.bundl"), "--rules", "paper"),
     "deadlock", ["psi_indexed_by_p.bundl:", "deadlock: every live thread spins"]),
    ((str(GPUIR / "fence_broadcast_missing_fence.gpuir"),), "rejected",
     ["fence_broadcast_missing_fence.gpuir:15:21:", "CheckMutates failed at step"]),
])
def test_stuck_trap_deadlock_and_a_failing_check_exit_1(args, state, words):
    code, out, err = step(*args, "--commands", "continue")
    assert code == 1, (state, out[-2000:], err)
    assert len(err.splitlines()) == 1 and all(w in err for w in words), err


@pytest.mark.parametrize("args,words", [
    ((str(BUNDL / "map_double.bundl"), "--max-steps", "5"),
     ["step budget exhausted: 5 steps", "map_double.bundl:"]),
    ((str(GPUIR / "fence_broadcast.gpuir"), "--max-steps", "10"),
     ["step budget exhausted: more than 10 statements", "fence_broadcast.gpuir:"]),
])
def test_an_exhausted_step_budget_exits_2(args, words):
    code, out, err = step(*args, "--commands", "continue")
    assert code == 2, (out[-2000:], err)
    assert len(err.splitlines()) == 1 and all(w in err for w in words), err


@pytest.mark.parametrize("commands,words", [
    ("frobnicate; continue", "unknown command: frobnicate"),
    ("step x; continue", "usage: step [N]"),
    ("continue; mem local 99", "no thread 99"),
])
def test_a_bad_command_in_the_script_exits_2_though_the_program_ends(commands, words):
    """The script is the input: a command it gets wrong is bad input, even when the
    rest of the script runs the program to its end (the session still runs it)."""
    code, out, err = step(str(BUNDL / "map_double.bundl"), "--commands", commands)
    assert code == 2 and "terminated" in out, (out[-2000:], err)
    assert len(err.splitlines()) == 1 and "--commands: " + words in err, err


def test_replay_step_scripted_exits_as_step_does(tmp_path):
    """`replay --step --commands` is a scripted session of the same debugger."""
    import json

    from gpusem.cli.main import main
    from gpusem.fuzz.bundle import write_bundle

    meta = {"target": "bundl", "backend": "cpu", "property": "compile",
            "signature": "compile:disagree:disagree", "kind": "compile disagree"}
    files = {"program.bundl": (BUNDL / "block_reduce_shared.bundl").read_text(),
             "expected.json": json.dumps({"A": list(range(8)), "out": [6, 22]}),
             "actual.json": json.dumps({"A": list(range(8)), "out": [6, 0]})}
    bundle = write_bundle(tmp_path, meta, files)
    codes = []
    for commands in ("continue", "bogus"):
        sys.argv, argv = ["gpusem", "replay", str(bundle), "--step", "--commands",
                          commands], sys.argv
        try:
            with contextlib.redirect_stdout(io.StringIO()), \
                    contextlib.redirect_stderr(io.StringIO()):
                main()
            codes.append(0)
        except SystemExit as stop:
            codes.append(stop.code)
        finally:
            sys.argv = argv
    assert codes == [0, 2]


def test_an_interactive_session_exits_0_whatever_the_machine_did():
    """Its person saw every answer: only a script needs the exit code."""
    gpusem = str(Path(sys.executable).parent / "gpusem")
    child = pexpect.spawn(gpusem, ["step", str(BUNDL / "fig11_read_up.bundl")],
                          env=dict(os.environ, COLUMNS="120", TERM="dumb"),
                          encoding="utf-8", timeout=30, preexec_fn=default_sigint)
    child.expect(r"\(gpusem\) ")
    child.sendline("continue")
    child.expect("stuck")
    child.expect(r"\(gpusem\) ")
    child.sendline("quit")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0


@pytest.mark.parametrize(("command", "says"), [
    ("break 999", "no statement on line 999 of "),
    ("break 1", "no statement on line 1 of "),  # a comment: a step never stops there
    ("break S-Nope", "unknown rule: S-Nope (rules like it: "),
    ("break E-Nope", "unknown rule: E-Nope"),
    ("break thread 99", "no thread 99 (threads 0..7)"),
    ("print nope", "no variable nope"),
    ("print out[7]", "index out of range: out[7] (length 2)"),
])
def test_a_breakpoint_or_print_that_cannot_be_is_rejected(command, says):
    """Issue 32.12: `break 999` and `break S-Nope` were accepted and never fired; now
    rejected with a message (a script: exit 2, one line)."""
    code, out, err = step(str(BUNDL / "block_reduce_shared.bundl"), "--commands",
                          command)
    assert code == 2, (out, err)
    assert says in err and len(err.strip().splitlines()) == 1, err
    assert "breakpoint 1" not in out


def test_where_list_and_print_in_bundl_mode_as_in_amir_mode():
    """Issue 32.12: the Bundl debugger has `where`, `list` and `print`, as the AMIR
    debugger has `where` and `list`."""
    code, out, err = step(str(BUNDL / "block_reduce_shared.bundl"), "--commands",
                          "where; list 1; break S-Arr-Assn; break 25; continue; where; "
                          "list 1; print b; print A; print A[5]; print out[1]")
    assert code == 0, (out, err)
    assert "step 0, running: no thread has stepped yet" in out
    assert "=>   14 |   lower out into ob {" in out  # before a step: main's first line
    assert "breakpoint 2: line 25" in out
    assert "thread 0 (t=0, b=0, p=0) at " in out
    assert "=>   25 |                   s1[0] = A[4 * b + t];" in out
    assert "b @ block[1] = 0" in out
    assert "A = [0, 1, 2, 3, 4, 5, 6, 7]" in out and "A[5] = 5" in out
    assert "out[1] = 0" in out
