"""Generated Prism programs (the prism fuzz target): surface text that elaborates,
type-checks and compiles, in the fragment `interpreter/prism/sequential.py` reads.

A program is a kernel that narrows an output `O` to one cell per thread and computes
it with scalar code drawn here. The scaffolding varies (plain block/thread, a warp
level, an n-ary split whose cases pick the threads that write) and so does the body
(declarations, assignment and `op=`, `for range` with `break`, `if`, ternaries, input
reads, device functions with results). `constructs` names what a program uses, for
the campaign's coverage table.

For the compiler properties (`programs(exchange=True)`), the warp shape may also
exchange values between threads through a shared array: write partitions, read
partitions and reads of a neighbour's cell in thread code, as siblings in warp code
(thread[32]), maybe in a loop. The exchange exists for Prism's Sec. 5 rules: the
elaboration puts every partition that `with group` reaches across a level into a
destruct of its own, whose barrier ends that destruct's statement list and is placed
there whatever the rules say; only warp code (a group within one level) keeps
partitions and thread groups side by side in one list, where rule 1 (a read after a
write) and rule 2 (a write after reads) decide whether the barrier goes before the
next node. Without it the `prism-drop-rule-*` faults cannot be seen. The surface
reading of the elaboration property reads one thread at a time, so it is not drawn
there.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

EXCHANGE = ("shared", "write-partition", "read-partition", "neighbour-read",
            "exchange-loop")
CONSTRUCTS = ("decl", "assign", "augassign", "for", "break", "if", "ternary",
              "call", "input", "split", "warp", "partition", "id", "group", "launch",
              *EXCHANGE)


@dataclass(frozen=True)
class PrismProgram:
    text: str
    constructs: frozenset[str]

    def __str__(self) -> str:
        return self.text


def _expr(draw, names: list[str], depth: int) -> str:
    if depth <= 0 or draw(st.integers(0, 2)) == 0:
        if names and draw(st.booleans()):
            return draw(st.sampled_from(names))
        return str(draw(st.integers(-9, 9)))
    kind = draw(st.sampled_from(["+", "-", "*", "/", "%", "input"]))
    a = _expr(draw, names, depth - 1)
    if kind in ("/", "%"):
        return f"({a} {kind} {draw(st.integers(1, 5))})"
    if kind == "input":
        return f"A[(({a}) % 16 + 16) % 16]"
    return f"({a} {kind} {_expr(draw, names, depth - 1)})"


def _cond(draw, names: list[str]) -> str:
    op = draw(st.sampled_from(["<", "<=", ">", ">=", "==", "!="]))
    return f"{_expr(draw, names, 1)} {op} {_expr(draw, names, 1)}"


def _body(draw, names: list[str], used: set[str], depth: int, pad: str,
          fns: list[str], loop: bool) -> list[str]:
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["decl", "assign", "augassign", "for", "if",
                                     "ternary", "call", "break"]))
        mine = [n for n in names if n.startswith("v")]  # the body's own variables
        if kind in ("assign", "augassign", "ternary") and not mine:
            kind = "decl"
        if kind == "decl":
            v = f"v{len(names)}"
            lines.append(f"{pad}{v} : int @ thread[1] = {_expr(draw, names, 2)}")
            names.append(v)
            used.add("decl")
            if "A[" in lines[-1]:
                used.add("input")
        elif kind == "assign":
            lines.append(f"{pad}{draw(st.sampled_from(mine))} = "
                         f"{_expr(draw, names, 2)}")
            used.add("assign")
        elif kind == "augassign":
            op = draw(st.sampled_from(["+=", "-=", "*="]))
            lines.append(f"{pad}{draw(st.sampled_from(mine))} {op} "
                         f"{_expr(draw, names, 1)}")
            used.add("augassign")
        elif kind == "for" and depth > 0:
            i = f"i{len(names)}"
            lines.append(f"{pad}for {i} in range({draw(st.integers(0, 2))}, "
                         f"{draw(st.integers(0, 5))}, {draw(st.integers(1, 2))}):")
            inner = [*names, i]
            lines += _body(draw, inner, used, depth - 1, pad + "    ", fns, True)
            names.append(i)
            used.add("for")
        elif kind == "if" and depth > 0:
            lines.append(f"{pad}if {_cond(draw, names)}:")
            lines += _body(draw, list(names), used, depth - 1, pad + "    ", fns,
                           loop)
            lines.append(f"{pad}else:")
            lines += _body(draw, list(names), used, depth - 1, pad + "    ", fns,
                           loop)
            used.add("if")
        elif kind == "ternary":
            lines.append(f"{pad}{draw(st.sampled_from(mine))} = "
                         f"{_expr(draw, names, 1)} if {_cond(draw, names)} else "
                         f"{_expr(draw, names, 1)}")
            used.add("ternary")
        elif kind == "call" and fns:
            v = f"v{len(names)}"
            lines.append(f"{pad}{v} : int @ thread[1] = {draw(st.sampled_from(fns))}"
                         f"({_expr(draw, names, 1)})")
            names.append(v)
            used.add("call")
        elif kind == "break" and loop:
            lines.append(f"{pad}if {_cond(draw, names)}:")
            lines.append(f"{pad}    break")
            used.update(("break", "if"))
    return lines or [f"{pad}pass"]


def _exchange(draw, names: list[str], used: set[str], pad: str) -> list[str]:
    """Warp code (thread[32]) that passes values between the warp's threads through
    `S_w`, the warp's piece of a shared array: a sequence of write partitions (W:
    each thread its own cell), read partitions (R) and neighbour reads (G: thread
    code reads another lane's cell, no barrier of its own). Every partition ends in
    a barrier (S-Partition), so the sequence is race-free when no W follows a G
    directly (also round a loop's back edge): an R is put between them."""
    kinds = draw(st.lists(st.sampled_from("GWR"), min_size=2, max_size=5))
    loop = draw(st.booleans())
    seq: list[str] = []
    for k in kinds:
        if k == "W" and seq and seq[-1] == "G":
            seq.append("R")
        seq.append(k)
    if loop and seq[-1] == "G" and seq[0] == "W":
        seq.append("R")
    xs = ["x0", "x1"]
    lines = [f"{pad}{x} : int @ thread[1] = {draw(st.integers(-3, 3))}" for x in xs]
    inner = pad
    if loop:
        lines.append(f"{pad}for j in range(0, {draw(st.integers(1, 3))}, 1):")
        inner = pad + "    "
        used.add("exchange-loop")
    scope = ["b", "s", "l", *xs]
    for n, k in enumerate(seq):
        x = draw(st.sampled_from(xs))
        if k == "G":
            d = draw(st.integers(1, 31))
            lines += [f"{inner}with group(thread[1]):",
                      f"{inner}    {x} = {x} * {draw(st.integers(-2, 2))} + "
                      f"S_w[(l + {d}) % 32]"]
            used.add("neighbour-read")
            continue
        lines += [f"{inner}with partition(S_w, dimension=thread[1], offset=l) "
                  f"as S_{n}:", f"{inner}    with group(thread[1]):"]
        if k == "W":
            lines.append(f"{inner}        S_{n}[0] = {_expr(draw, scope, 1)}")
            used.add("write-partition")
        else:
            lines.append(f"{inner}        {x} += S_{n}[0] * "
                         f"{draw(st.integers(1, 3))}")
            used.add("read-partition")
    names += xs
    return lines


@st.composite
def programs(draw, exchange: bool = False) -> PrismProgram:
    used = {"partition", "id", "group", "launch"}
    # hypothesis leans to the first choice: the exchange's shape first when drawn
    shapes = ["warp", "plain", "warp", "split"] if exchange else ["plain", "warp",
                                                                  "split"]
    shape = draw(st.sampled_from(shapes))
    blocks = draw(st.integers(1, 2))
    threads = 64 if shape == "warp" else draw(st.sampled_from([2, 4, 8]))
    shares = exchange and shape == "warp" and draw(st.integers(0, 3)) < 3
    n = blocks * threads
    fns: list[str] = []
    head = [f"# launch: k blocks={blocks} threads={threads}",
            "# arg A = int[16] iota", f"# arg O = int[{n}]",
            f"# arg s = {draw(st.integers(-5, 5))}"]
    for k in range(draw(st.integers(0, 2))):
        c, d = draw(st.integers(-3, 3)), draw(st.integers(-3, 3))
        head += ['@prism("device")', "@requires(thread[1])",
                 f"def f{k}(x : int @ thread[1]):", f"    return x * {c} + {d}", ""]
        fns.append(f"f{k}")
    smem = f", smem={4 * threads}" if shares else ""
    head += ['@prism("global")', f"@requires(grid[1], block[1], thread[1]{smem})",
             "def k(A: ptr(const(int)) @ grid[1], O: ptr(int) @ grid[1], "
             "s : int @ grid[1]):",
             "    with group(grid[1]):",
             "        b : int @ block[1] = id()",
             f"        with partition(O, dimension=block[1], offset=b * {threads}) "
             "as O_b:",
             "            with group(block[1]):"]
    names = ["b", "t", "s"]
    pad = " " * 16
    if shape == "warp":
        used.add("warp")
        head.append(f"{pad}w : int @ warp[1] = id()")
        if shares:
            used.add("shared")
            head += [f"{pad}S : shared(int[{threads}]) @ block[1]",
                     f"{pad}with partition(S, dimension=warp[1], offset=w * 32) "
                     "as S_w:"]
            pad += "    "
        head += [f"{pad}with partition(O_b, dimension=warp[1], offset=w * 32) as O_w:",
                 f"{pad}    with group(warp[1]):",
                 f"{pad}        l : int @ thread[1] = id()"]
        if shares:
            head += _exchange(draw, names, used, pad + " " * 8)
        head += [f"{pad}        with partition(O_w, dimension=thread[1], offset=l) "
                 "as O_t:",
                 f"{pad}            with group(thread[1]):",
                 f"{pad}                t : int @ thread[1] = w * 32 + l"]
        body = _body(draw, list(names), used, 2, pad + " " * 16, fns, False)
        out = _expr(draw, names, 2)
        if shares:  # what the exchange computed reaches the output
            out = f"{out} + x0 * 7 + x1"
        tail = [f"{pad}                O_t[0] = {out}"]
        return PrismProgram("\n".join(head + body + tail) + "\n", frozenset(used))
    head += [f"{pad}t : int @ thread[1] = id()",
             f"{pad}with partition(O_b, dimension=thread[1], offset=t) as O_t:"]
    if shape == "plain":
        head.append(f"{pad}    with group(thread[1]):")
        body = _body(draw, list(names), used, 2, pad + " " * 8, fns, False)
        tail = [f"{pad}        O_t[0] = {_expr(draw, names, 2)}"]
        return PrismProgram("\n".join(head + body + tail) + "\n", frozenset(used))
    used.add("split")
    first = draw(st.sampled_from([c for c in (1, 2, 4) if c < threads]))
    cases = [first] + ([first] if draw(st.booleans()) and 2 * first <= threads else [])
    head.append(f"{pad}    match split(thread):")
    for c in cases:
        head += [f"{pad}        case {c}:", f"{pad}            with group(thread[1]):"]
        head += _body(draw, list(names), used, 1, pad + " " * 16, fns, False)
        head.append(f"{pad}                O_t[0] = {_expr(draw, names, 2)}")
    return PrismProgram("\n".join(head) + "\n", frozenset(used))
