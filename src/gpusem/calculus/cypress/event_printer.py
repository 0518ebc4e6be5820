"""Print the event IR (calculus/cypress/events.py) in the notation of Fig. 8b.
`event_parser.parse_events` reads it back (parse . print = id, a test)."""

from __future__ import annotations

from gpusem.calculus.cypress import events as E
from gpusem.calculus.cypress.machine import Processor


def expr(e: E.IExpr) -> str:
    match e:
        case E.INum(value):
            return str(value)
        case E.IVar(name):
            return name
        case E.IBin(op, left, right):
            sides = [f"({expr(x)})" if isinstance(x, E.IBin) else expr(x)
                     for x in (left, right)]
            return f"{sides[0]} {op} {sides[1]}"


def ev(r: E.EvRef) -> str:
    back = f"@-{r.back}" if r.back else ""
    if not r.index:
        return r.name + back
    index = ", ".join(":" if i is None else expr(i) for i in r.index)
    return f"{r.name}[{index}]{back}"


def role(r: E.Role) -> str:
    return f" on {r}" if r else ""


def pre(p: tuple[E.EvRef, ...]) -> str:
    return "{" + ", ".join(ev(r) for r in p) + "}"


def ref(r: E.Ref) -> str:
    return r.name if r.index is None else f"{r.name}[{', '.join(map(expr, r.index))}]"


def etype(t: E.EventType) -> str:
    return "()" if not t else "[" + ", ".join(f"({n}, {p.name})" for n, p in t) + "]"


def proc_id(proc: Processor) -> str:
    """`warp_id` and its kin: the processor index a vectorised loop binds (Fig. 9)."""
    return f"{proc.name.lower()}_id"


def print_ops(ops: tuple[E.Op, ...], depth: int, flat: bool) -> list[str]:
    pad = "  " * depth
    lines: list[str] = []
    for op in ops:
        match op:
            case E.Alloc(name, shape, mem, at):
                place = "" if at is None else f" @ smem[{at}]"
                lines.append(f"{pad}{name} = tensor([{', '.join(map(str, shape))}], "
                             f"{mem.name}){place}")
            case E.Alias(name, r):
                lines.append(f"{pad}{name} = {ref(r)}")
            case E.PartBlocks(name, source, blocks):
                sizes = ", ".join("None" if s is None else str(s) for s in blocks)
                comma = "," if len(blocks) == 1 else ""
                lines.append(f"{pad}{name} = partition_by_blocks({source}, "
                             f"({sizes}{comma}))")
            case E.PartMma(name, source, instr, _, proc, operand):
                lines.append(f"{pad}{name} = partition_by_mma({source}, {instr}(), "
                             f"{proc.name}, \"{operand}\")")
            case E.Copy(event, t, src, dst, p, who):
                lines.append(f"{pad}{event}: {etype(t)} = copy({ref(src)}, "
                             f"{ref(dst)}), {pre(p)}{role(who)}")
            case E.Call(event, t, fn, args, p, who):
                lines.append(f"{pad}{event}: {etype(t)} = call({fn}, "
                             f"{', '.join(map(ref, args))}), {pre(p)}{role(who)}")
            case E.Loop(event, t, parallel, var, lo, hi, p, body, pipe):
                kw = "pfor" if parallel else "for"
                depth_ = f" pipeline {pipe}" if pipe else ""
                lines.append(f"{pad}{event}: {etype(t)} = {kw} {var} in [{expr(lo)}, "
                             f"{expr(hi)}){depth_}, {pre(p)} do")
                lines.extend(print_block(body, depth + 1, flat))
            case E.Vec(var, proc, extent, inner):
                if flat:  # Fig. 9's notation: the binding, then the ops unindented
                    lines.append(f"{pad}{var} = {proc_id(proc)}()")
                    lines.extend(print_ops(inner, depth, flat))
                else:
                    lines.append(f"{pad}{var} = {proc_id(proc)}({extent}) do")
                    lines.extend(print_ops(inner, depth + 1, flat))
    return lines


def print_block(b: E.Block, depth: int = 0, flat: bool = False) -> list[str]:
    pad = "  " * depth
    lines = print_ops(b.ops, depth, flat)
    one = len(b.yields) == 1
    lines.append(f"{pad}yield {ev(b.yields[0]) if one else pre(b.yields)}")
    return lines


def print_events(p: E.EventProgram, flat: bool = False) -> str:
    """`flat`: vectorised loops as Fig. 9 prints them (lossy: not read back)."""
    return "\n".join([f"# params: {', '.join(p.params)}",
                      *print_block(p.body, 0, flat)]) + "\n"
