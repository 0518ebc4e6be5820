"""What the robustness campaign feeds `gpusem` (issue 15): hypothesis strategies of
`harness.Input`s, over every verb that reads a program (check, run, synccheck, compile,
exec, step; on .bundl, .gpuir and APPy .py files; fuzz and replay read campaign
directories and bundles: their robustness is the campaign's and the bundle store's,
tests/fuzz).

Programs come from
  - `from_lark` on both grammars of ours (syntactically plausible, semantically
    anything; APPy is Python, mutants only);
  - mutants of every example and conformance program: truncation, byte flips, lines
    deleted / duplicated / swapped / re-indented, grammar tokens inserted, splices of
    two programs, non-UTF-8 bytes, integer literals made huge or boundary values, and
    literals wrapped in deep parentheses;
  - special paths: a directory, a FIFO, /dev/zero and /dev/urandom behind a program's
    suffix, a missing file, an empty file, a file past the source_bytes budget.
Options come with each verb, now and then out of range (--blocks 0, --max-steps -1,
-D N=x, --schedule nonsense, budget flags of 0 ...).

An input is marked invalid (`why`) only where its invalidity is certain (a non-UTF-8
byte, a literal of 2^31 or more outside a comment, nesting past the budget, an option
out of range, a path that is not a regular file); exit 0 on it is then a failure.
"""

from __future__ import annotations

import functools
import os
import random
import re
from pathlib import Path

from hypothesis import strategies as st

from .harness import Input

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("examples", "tests/bundl/semantics", "tests/gpuir/conformance",
           "tests/compiler/programs", "tests/bundl/conformance", "tests/appy/conformance")
VERBS = {".bundl": ("check", "run", "compile", "exec", "step"),
         ".gpuir": ("check", "synccheck", "compile", "exec", "step"),
         ".py": ("check", "run", "exec")}
# exec builds C++ with g++ (a second a program): rarer than the rest
VERB_WEIGHTS = {"check": 6, "run": 5, "synccheck": 5, "compile": 5, "step": 3,
                "exec": 1}
COMMENT = {".bundl": "//", ".gpuir": "#", ".py": "#"}
TOKENS = {".bundl": ["{", "}", "(", ")", ";", "[", "]", ",", "=", "==", "-", "!",
                     "main", "let", "x", ":", "int", "@", "thread[1]", "grid[1]",
                     "block[2]", "split(1, 1)", "group 2", "destruct", "partition",
                     "lower", "claim", "into", "by", "at", "while", "if", "else",
                     "alloc", "free 1", "init", "dec", "wait", "fma(", "memcpy(",
                     "async_memcpy(", "partition_id", "1e39", "0.5", "2147483647",
                     "-2147483648", "machine blocks = 0, threads = 1;", "fn f() at "],
          ".gpuir": ["(", ")", "[", "]", ":", ",", "=", "+=", ">>", "-", "/", "%",
                     "\n", "    ", "\t", "for", "in", "seq(0, 4)", "cuda_tasks(0, 2)",
                     "cuda_threads(0, 32, unit=cuda_thread)", "with", "if", "True",
                     "not", "and", "proc", "size", "index", "f32", "barrier",
                     "@ CudaRmem", "@ CudaSmemLinear",
                     "Fence(cuda_in_order, cuda_in_order)",
                     "Arrive(cuda_in_order, 1) >> z", "Await(z, cuda_in_order, 0)",
                     "CudaDeviceFunction(blockDim=0)", "free x",
                     "1e400", "2147483647", "-2147483648", "N", "x[:, 0]"],
          ".py": ["(", ")", "[", "]", ":", ",", "=", "+=", "\n", "    ", "for", "in",
                  "range(", "if", "else", "while", "return", "#pragma parallel for",
                  "#pragma simd", "#pragma parallel for simd", "#pragma atomic",
                  "#pragma sequential for", "# inputs: A=float32[99999999999]",
                  "# inputs: N=1e999", "lambda", "import os", "def f():", "0.5",
                  "2147483647", "N", "A[i]", "i"]}
INT_LITERAL = re.compile(rb"(?<![A-Za-z0-9_.\"])[0-9]+(?![A-Za-z0-9_.\"])")
HUGE = [b"2147483648", b"4294967296", b"1099511627776", b"1" + b"0" * 30,
        b"9" * 5000]
BOUNDARY = [b"0", b"1", b"2147483647", b"65536", b"1048576", b"3"]


@functools.cache
def programs() -> tuple[tuple[str, bytes], ...]:
    found = []
    for folder in FOLDERS:
        for suffix in VERBS:
            for p in sorted((ROOT / folder).rglob(f"*{suffix}")):
                found.append((suffix, p.read_bytes()))
    return tuple(found)


def code_spans(content: bytes, suffix: str) -> list[tuple[int, int]]:
    """(start, end) of the integer literals outside comments."""
    mark, out, pos = COMMENT[suffix].encode(), [], 0
    for line in content.split(b"\n"):
        code = line.split(mark, 1)[0]
        out.extend((pos + m.start(), pos + m.end())
                   for m in INT_LITERAL.finditer(code))
        pos += len(line) + 1
    return out


def chance(r: random.Random, p: float) -> bool:
    return r.random() < p


# ------------------------------------------------------------------- mutators
# Each returns (new content, why it is invalid or "").


def m_truncate(r: random.Random, c: bytes, suffix: str) -> tuple[bytes, str]:
    return c[:r.randint(0, len(c))], ""


def m_flip(r: random.Random, c: bytes, suffix: str) -> tuple[bytes, str]:
    b = bytearray(c)
    for _ in range(r.randint(1, 8)):
        if b:
            b[r.randint(0, len(b) - 1)] = r.randint(0, 255)
    return bytes(b), ""


def m_non_utf8(r: random.Random, c: bytes, suffix: str) -> tuple[bytes, str]:
    bad = r.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\x80",
                                b"\xf8\x88\x80\x80\x80", b"\xc0\xaf"])
    at = r.randint(0, len(c))
    return c[:at] + bad + c[at:], "a byte that is not UTF-8"


def m_number(r: random.Random, c: bytes, suffix: str) -> tuple[bytes, str]:
    spans = code_spans(c, suffix)
    if not spans:
        return c, ""
    a, b = r.choice(spans)
    if r.random() < 0.5:
        new = r.choice(HUGE)
        if suffix == ".py" and len(new) < 100:  # Python's ints are unbounded
            return c[:a] + new + c[b:], ""
        return c[:a] + new + c[b:], f"integer literal {new[:12]!r}... of 2^31 or more"
    return c[:a] + r.choice(BOUNDARY) + c[b:], ""


def m_nesting(r: random.Random, c: bytes, suffix: str) -> tuple[bytes, str]:
    spans = code_spans(c, suffix)
    if not spans:
        return c, ""
    a, b = r.choice(spans)
    depth = r.choice([20, 90, 150, 199, 201, 400, 3000])
    wrapped = b"(" * depth + c[a:b] + b")" * depth
    return c[:a] + wrapped + c[b:], ("nesting past the budget" if depth > 200 else "")


def m_lines(r: random.Random, c: bytes, suffix: str) -> tuple[bytes, str]:
    lines = c.split(b"\n")
    i, j = (r.randint(0, len(lines) - 1) for _ in range(2))
    match r.choice(["delete", "duplicate", "swap", "indent", "dedent"]):
        case "delete":
            del lines[i]
        case "duplicate":
            lines.insert(i, lines[j])
        case "swap":
            lines[i], lines[j] = lines[j], lines[i]
        case "indent":
            lines[i] = b" " * r.randint(1, 7) + lines[i]
        case "dedent":
            lines[i] = lines[i][r.randint(1, 6):]
    return b"\n".join(lines), ""


def m_token(r: random.Random, c: bytes, suffix: str) -> tuple[bytes, str]:
    at = r.randint(0, len(c))
    token = r.choice(TOKENS[suffix]).encode()
    return c[:at] + b" " + token + b" " + c[at:], ""


def m_splice(r: random.Random, c: bytes, suffix: str) -> tuple[bytes, str]:
    other = r.choice([p for s, p in programs() if s == suffix])
    a, b = r.randint(0, len(c)), r.randint(0, len(other))
    return c[:a] + other[b:], ""


MUTATORS = [m_truncate, m_flip, m_non_utf8, m_number, m_nesting, m_lines, m_token,
            m_splice]


# ------------------------------------------------------------------ options

def _verb_options(r: random.Random, verb: str, suffix: str) -> tuple[list[str], str]:
    """Options for `verb`, and why they make the command invalid (or "")."""
    opts: list[str] = []
    why = ""

    def maybe(p: float = 0.3) -> bool:
        return chance(r, p)

    if verb in ("run", "step"):
        cap = r.choice(["20000", "20000", "1000", "0", "-5"])
        opts += ["--max-steps", cap]
        why = why or ("--max-steps out of range" if int(cap) <= 0 else "")
    if verb == "run" and suffix == ".bundl":  # (APPy's run has one reading)
        opts += ["--schedule", r.choice(
            ["rr", "random:1", "greedy", "greedy-reverse", "exhaustive", "random:x",
             "nonsense"])]
        if opts[-1] in ("random:x", "nonsense"):
            why = why or "an unknown schedule"
        if opts[-1] == "exhaustive" and int(cap) > 0:
            # a transition snapshots the whole configuration: ~20 ms at 256 threads
            opts[opts.index("--max-steps") + 1] = "1000"
        for flag in ("--big-step", "--check-preservation", "--json"):
            if maybe(0.15):
                opts.append(flag)
    if verb in ("run", "step") and suffix == ".bundl" and maybe():
        b, t = (r.choice(["1", "2", "4", "0", "-1", "65537", "2147483648"])
                for _ in range(2))
        opts += ["--blocks", b, "--threads", t]
        if int(b) <= 0 or int(t) <= 0 or int(b) * int(t) > 65536:
            why = why or "--blocks/--threads out of range"
    if verb == "synccheck":
        # an AMIR statement records a whole window: ~0.5 ms at N = 1024 (the step
        # budget bounds work, and the campaign's deadline time)
        opts += ["--max-steps", "20000"]
        for flag in ("--print-amir", "--json"):
            if maybe(0.15):
                opts.append(flag)
    if verb == "step":
        cmds = [r.choice(
            ["step", "step 7", "continue", "next", "back 3", "threads", "mem global",
             "mem local 0", "mem shared 0", "sync", "where", "records", "break 5",
             "break S-Assn", "break write out[0]", "break CheckReads", "delete",
             "step -1", "step 99999999999", "back 999", "mem local 99", "bogus",
             "break [/b]", "schedule random:3", "schedule nonsense"])
            for _ in range(r.randint(1, 6))]
        opts += ["--commands", "; ".join(cmds)]
    if verb == "exec" and suffix != ".py":
        opts += ["--schedules", r.choice(["0", "0,1", "x"])]
        why = why or ("bad --schedules" if opts[-1] == "x" else "")
    if suffix == ".py" and maybe(0.2):
        spec = r.choice(["A=float32[8] N=8", "A=float32[0] N=0", "N=x", "A=int8[4]",
                         "A=float32[99999999999]", "N=" + "9" * 5000])
        opts += ["--inputs", spec]
        if spec in ("N=x", "A=int8[4]", "A=float32[99999999999]", "N=" + "9" * 5000):
            why = why or f"--inputs {spec[:20]}"
    if verb in ("check", "run", "step") and maybe(0.2):
        opts += ["--rules", "paper"]
    if suffix == ".gpuir" and verb != "run" and maybe():
        value = r.choice(["N=64", "N=1024", "N=-1", "N=x", "=3",
                                      "N=99999999999", "M=8", "T=1", "K=64"])
        opts += ["-D", value]
        if value in ("N=x", "=3", "N=99999999999"):
            why = why or f"-D {value}"
    return opts, why


def _global_options(r: random.Random) -> tuple[list[str], str]:
    if not chance(r, 0.1):
        return ["--max-memory", "1024"], ""
    name = r.choice(["--max-nesting", "--max-elements", "--max-threads",
                                 "--max-iterations", "--max-literal-digits",
                                 "--max-source-bytes", "--max-memory"])
    value = r.choice(["0", "-3", "1", "16", "4096", "x"])
    why = f"{name} {value}" if value in ("0", "-3", "x") else ""
    return ["--max-memory", "1024", name, value], why


# ------------------------------------------------------------------- programs

@functools.cache
def _lark_strategy(suffix: str):
    """`from_lark` on the grammar; the ignored terminals (whitespace, comments) drawn
    from a few short strings: drawn from their regular expressions they are mostly
    long runs of arbitrary Unicode, which costs ~80 ms an input and tests nothing
    the mutants do not (non-UTF-8 bytes, odd characters in comments)."""
    from hypothesis.extra.lark import from_lark

    from gpusem.calculus.grammar_cache import built_lark

    if suffix == ".bundl":  # the parsers as built from their grammars (`built_lark`)
        from gpusem.calculus.bundl.parser import _lark
        _lark()
        return from_lark(built_lark("bundl"), start="start_program", explicit={
            "WS": st.sampled_from([" ", "\n", "\t", "\r\n"]),
            "COMMENT": st.sampled_from(["// c\n", "// \\\n", "//\n"])})
    from gpusem.calculus.gpuir.parser import _lark as gpuir_lark
    gpuir_lark()
    return from_lark(built_lark("gpuir"), start="start", explicit={
        "_INDENT": st.sampled_from(["    ", "        ", "\t"]),
        "_DEDENT": st.just(""),
        "_NL": st.sampled_from(["\n", "\n    ", "\n        ", "  # c\n"]),
        "__IGNORE_0": st.just(" "), "__IGNORE_1": st.just("\\\n"),
        "COMMENT": st.just("# c")})


def program(draw, r: random.Random, suffix: str) -> tuple[bytes, str, str]:
    """(content, why invalid, origin)."""
    if suffix != ".py" and chance(r, 0.15):  # APPy is Python: no grammar of ours
        text = draw(_lark_strategy(suffix))
        return text.encode("utf-8", "surrogatepass"), "", "from_lark"
    content = r.choice([p for s, p in programs() if s == suffix])
    why, names = "", []
    for _ in range(r.randint(0, 3)):
        mutate = r.choice(MUTATORS)
        content, reason = mutate(r, content, suffix)
        names.append(mutate.__name__[2:])
        # a later mutator may undo an earlier one's invalidity; only the last counts
        why = reason
    return content, why, "+".join(names) or "example"


@st.composite
def inputs(draw) -> Input:
    """One input. Hypothesis draws its seed and, for `from_lark` programs, the
    program; the mutators and options use a random.Random of that seed (hypothesis
    draws bounded integers and floats biased toward their bounds, which would skew
    every weighted choice here)."""
    r = random.Random(draw(st.integers(0, 2**63)))
    suffix = r.choice(list(VERBS))
    verb = r.choice([v for v in VERBS[suffix] for _ in range(VERB_WEIGHTS[v])])
    opts, why_opt = _verb_options(r, verb, suffix)
    gopts, why_g = _global_options(r)
    if chance(r, 0.04):
        out = special(r, suffix, [*gopts, verb, "FILE", *opts])
        out.verb = verb
        return out
    content, why, origin = program(draw, r, suffix)
    return Input([*gopts, verb, "FILE", *opts], content, suffix,
                 why=why or why_opt or why_g, origin=origin, verb=verb)


def special(r: random.Random, suffix: str, argv: list[str]) -> Input:
    kind = r.choice(["directory", "fifo", "zero", "urandom", "missing",
                                 "empty", "too-large"])
    workdir = Path(os.environ.get("GPUSEM_ROBUST_DIR", "/tmp"))
    path = workdir / f"special-{kind}{suffix}"
    match kind:
        case "directory":
            path.mkdir(exist_ok=True)
        case "fifo":
            if not path.exists():
                os.mkfifo(path)
        case "zero" | "urandom":
            if not path.is_symlink():
                path.symlink_to(f"/dev/{kind}")
        case "missing":
            path = workdir / "no-such-dir" / f"missing{suffix}"
        case "empty":
            path.write_bytes(b"")
        case "too-large":
            path.write_bytes(b" " * 5000)
            argv = ["--max-source-bytes", "4096", *argv]
    return Input(argv, b"", suffix, path=str(path), why=f"{kind} file",
                 origin=f"special:{kind}")
