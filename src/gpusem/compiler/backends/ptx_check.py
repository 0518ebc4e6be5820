"""The static PTX oracle (issue 23, item 3): what the PTX ISA requires of a kernel's
loads and stores, decided on the PTX alone, with no GPU.

A pipeline of small named checks over one kernel's facts (`KernelFacts`):

    ld.nc-read-only     no `ld.global.nc` may read a buffer the kernel writes
    state-space-window  a `.global` / `.shared` / `.local` access takes an address of
                        that state space
    const-written       no store into a pointer parameter the `.cu` declares `const`
                        (our compiler's promise, not the ISA's: attributed `ours`)

Conventions: `fn` a `ptx_reader.Function`, `pts` the may-point-to map (register ->
bases), a base `param:NAME` (the buffer a kernel pointer parameter points to: global
memory, each parameter its own allocation, as `launch.kernel_spec` and the cuda backend
pass them), `shared:VAR`, `local:VAR`, `global:VAR`, `const:VAR`, or `?` (a pointer
loaded from memory: any buffer).

Note: the points-to analysis is flow-insensitive (the join of every definition of a
register, to a fixpoint): that covers branches, `selp` and loops at once, and loses
precision only where a register is redefined, which NVVM's virtual registers rarely
are. Pointer parameters are assumed not to alias one another: the launch gives each its
own allocation (and our kernels declare them `__restrict__`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from gpusem.compiler.backends.ptx_reader import (
    REGISTER,
    Function,
    Instruction,
    Module,
    read_ptx,
)

ANY = "?"
# Opcodes whose first operand is not a register they define.
_NO_DEF = {"st", "red", "bra", "ret", "exit", "bar", "barrier", "membar", "fence",
           "prefetch", "prefetchu", "cp", "trap", "brkpt", "griddepcontrol", "stmatrix",
           "multimem", "wgmma", "tensormap", "discard", "applypriority",
           "createpolicy"}
_WRITES = {"st", "atom", "red"}  # first operand: the address written
_SPACES = ("global", "shared", "local", "const", "param")
_WIDE = {"u64", "b64", "s64"}


@dataclass(frozen=True, slots=True)
class CuParam:
    """A kernel parameter as the `.cu` declares it."""

    name: str
    pointer: bool
    const: bool  # the pointee is const: `const T*`
    restrict: bool


@dataclass(frozen=True, slots=True)
class PtxFinding:
    """One violated check: where in the PTX, which buffer, and the store that writes
    it (`store_line` 0 where the check needs none)."""

    check: str
    toolchain: str
    kernel: str
    line: int
    text: str
    param: str
    store_line: int = 0
    store_text: str = ""
    attribution: str = "nvvm"
    why: str = ""

    def one_line(self) -> str:
        store = (f"; written at PTX line {self.store_line}: {self.store_text}"
                 if self.store_line else "")
        return (f"{self.check}: {self.toolchain}: kernel {self.kernel}: PTX line "
                f"{self.line}: {self.text} ({self.why} {self.param}{store})")


@dataclass(frozen=True, slots=True)
class KernelFacts:
    """What the checks read: the function, its module, the may-point-to map, each
    PTX parameter's `.cu` declaration (None where the `.cu` is not known), and the
    stores that may write each base."""

    fn: Function
    module: Module
    pts: dict[str, frozenset[str]]
    cu: dict[str, CuParam | None]  # PTX parameter name -> declaration
    writes: dict[str, tuple[Instruction, ...]]  # base -> the stores into it
    toolchain: str

    def c_name(self, base: str) -> str:
        if base.startswith("param:"):
            decl = self.cu.get(base[6:])
            return decl.name if decl is not None else base[6:]
        return base.split(":", 1)[-1]  # a variable's name


# ------------------------------------------------------------------ .cu signatures
def cu_params(source: str, kernel: str) -> tuple[CuParam, ...] | None:
    """The parameters of `__global__ void kernel(...)` in a `.cu` text, or None."""
    match = re.search(r"__global__\s+void\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?"
                      rf"{re.escape(kernel)}\s*\(([^)]*)\)", source)
    if match is None:
        return None
    out = []
    for decl in filter(None, (d.strip() for d in match.group(1).split(","))):
        name = re.findall(r"[A-Za-z_]\w*", decl)[-1]
        star = decl.find("*")
        out.append(CuParam(name, star >= 0, star >= 0 and bool(
            re.search(r"\bconst\b", decl[:star])), "__restrict__" in decl))
    return tuple(out)


# ------------------------------------------------------------------ points-to
_OFFSET = re.compile(r"[+\-]")
_TOKEN = re.compile(r"%[\w$]+|[A-Za-z_$][\w$]*")  # a register or a symbol


def address(operand: str) -> str | None:
    """The base token of a `[base+offset]` operand, or None for a non-address."""
    if not (operand.startswith("[") and operand.endswith("]")):
        return None
    return _OFFSET.split(operand[1:-1].strip(), maxsplit=1)[0].strip()


def _symbol_base(token: str, fn: Function, module: Module) -> frozenset[str]:
    space = fn.variables.get(token) or module.variables.get(token)
    if space is not None:
        return frozenset({f"{space}:{token}"})
    if token in fn.params:
        return frozenset({f"param:{token}"})
    return frozenset()


def bases(token: str, fn: Function, module: Module,
          pts: dict[str, frozenset[str]]) -> frozenset[str]:
    """What a register or symbol operand may point to."""
    if token.startswith("%"):
        return pts.get(token, frozenset())
    return _symbol_base(token, fn, module)


def _defined(ins: Instruction) -> list[str]:
    """The registers `ins` defines (its first operand, a vector `{...}` or a call's
    `(retval)`), none for stores, branches and barriers."""
    if not ins.operands:
        return []
    first = ins.operands[0]
    if ins.op == "call":
        return REGISTER.findall(first) if first.startswith("(") else []
    if ins.op in _NO_DEF:
        return []
    return REGISTER.findall(first) if first[:1] in "%{" else []


def _transfer(ins: Instruction, fn: Function, module: Module,
              pts: dict[str, frozenset[str]]) -> frozenset[str]:
    """What the registers `ins` defines may point to."""
    if ins.op == "call":
        return frozenset({ANY})
    if ins.op in ("ld", "atom", "ldu"):
        addr = next((a for a in map(address, ins.operands[1:]) if a), None)
        if ins.has("param") and addr is not None:
            return _symbol_base(addr, fn, module)  # a kernel parameter's value
        # a 64-bit value read from memory may be a pointer; narrower ones are data
        return frozenset({ANY}) if _WIDE & set(ins.opcode) else frozenset()
    out: set[str] = set()
    for operand in ins.operands[1:]:
        for token in _TOKEN.findall(operand):
            out |= bases(token, fn, module, pts)
    return frozenset(out)


def points_to(fn: Function, module: Module) -> dict[str, frozenset[str]]:
    """register -> the bases it may point into: every definition joined, iterated to
    a fixpoint (a loop's back edge is one more definition of its register)."""
    pts: dict[str, frozenset[str]] = {}
    changed = True
    while changed:
        changed = False
        for ins in fn.instructions:
            regs = _defined(ins)
            if not regs:
                continue
            new = _transfer(ins, fn, module, pts)
            for reg in regs:
                if not new <= pts.get(reg, frozenset()):
                    pts[reg] = pts.get(reg, frozenset()) | new
                    changed = True
    return pts


def access_bases(ins: Instruction, facts: KernelFacts) -> frozenset[str]:
    """What the first address operand of `ins` may point into."""
    for operand in ins.operands:
        if (token := address(operand)) is not None:
            return bases(token, facts.fn, facts.module, facts.pts)
    return frozenset()


def is_write(ins: Instruction) -> bool:
    """st/atom/red, and the copies (`cp.*`) whose first operand is their target."""
    return ins.op in _WRITES or (ins.op in ("cp", "multimem")
                                 and address(ins.operands[0] if ins.operands else "")
                                 is not None and not ins.has("prefetch"))


def kernel_facts(fn: Function, module: Module, toolchain: str,
                 cu: tuple[CuParam, ...] | None = None) -> KernelFacts:
    pts = points_to(fn, module)
    decls = {p: (cu[i] if cu is not None and len(cu) == len(fn.params) else None)
             for i, p in enumerate(fn.params)}
    writable = [f"param:{p}" for p, d in decls.items()
                if d is None or (d.pointer and not d.const)]
    facts = KernelFacts(fn, module, pts, decls, {}, toolchain)
    writes: dict[str, list[Instruction]] = {}
    for ins in fn.instructions:
        if not is_write(ins):
            continue
        hit = access_bases(ins, facts)
        # a store through a pointer read from memory may write any buffer the .cu
        # lets the kernel write (every pointer parameter without a .cu)
        for base in (hit - {ANY}) | (set(writable) if ANY in hit else set()):
            writes.setdefault(base, []).append(ins)
    return KernelFacts(fn, module, pts, decls,
                       {b: tuple(v) for b, v in writes.items()}, toolchain)


# ------------------------------------------------------------------ the checks
def check_nc_read_only(facts: KernelFacts) -> list[PtxFinding]:
    """ld.nc-read-only. PTX ISA, `ld.global.nc`: the load goes through the
    non-coherent (texture / read-only) cache, and the CUDA C++ Programming Guide
    (`__ldg`, the read-only data cache) requires such data to be read-only for the
    lifetime of the kernel: a thread that stores to a buffer and then reads it through
    the non-coherent path may see the value from before its own store. A store
    anywhere in the kernel counts, before or after the load ("for the lifetime").
    Note: a `.nc` load through a pointer read from memory (`?`) names no buffer and
    is not judged; our compilers' kernels read no pointers from memory. The ISA and
    Guide sentences are paraphrased here, not quoted."""
    out = []
    for ins in facts.fn.instructions:
        if not (ins.op in ("ld", "ldu") and ins.has("nc")):
            continue
        for base in sorted(access_bases(ins, facts) - {ANY}):
            if stores := facts.writes.get(base):
                decl = facts.cu.get(base[6:]) if base.startswith("param:") else None
                out.append(PtxFinding(
                    "ld.nc-read-only", facts.toolchain, facts.fn.name, ins.line,
                    ins.text, facts.c_name(base), stores[0].line, stores[0].text,
                    "ours" if decl is not None and decl.const else "nvvm",
                    "non-coherent load may read the written buffer"))
    return out


def check_state_space_window(facts: KernelFacts) -> list[PtxFinding]:
    """state-space-window. PTX ISA, "State Spaces" and "Generic Addressing": .shared,
    .local and .global are distinct state spaces (windows of the generic space that
    `cvta` converts between); an instruction naming one takes an address in that
    space. A `.global` access to a `.shared` variable's address, or a `.shared` one to
    a kernel buffer's, addresses memory the instruction does not reach."""
    out = []
    for ins in facts.fn.instructions:
        if ins.op not in ("ld", "st", "atom", "red", "ldu"):
            continue
        space = next((p.split("::")[0] for p in ins.opcode[1:]
                      if p.split("::")[0] in ("global", "shared", "local")), None)
        if space is None:
            continue  # generic addressing: any window
        for base in sorted(access_bases(ins, facts) - {ANY}):
            kind = "global" if base.startswith("param:") else base.split(":")[0]
            if kind in ("global", "shared", "local") and kind != space:
                out.append(PtxFinding(
                    "state-space-window", facts.toolchain, facts.fn.name, ins.line,
                    ins.text, facts.c_name(base), why=f".{space} access to {kind} "
                    "memory:"))
    return out


def check_const_written(facts: KernelFacts) -> list[PtxFinding]:
    """const-written: a store into a parameter the `.cu` declares `const T*` (with
    `__restrict__`, NVVM may then read it through `ld.global.nc`). Not an ISA rule:
    a finding against the compiler that emitted the `.cu` (ours)."""
    out = []
    for base, stores in sorted(facts.writes.items()):
        decl = facts.cu.get(base[6:]) if base.startswith("param:") else None
        if decl is not None and decl.const:
            out.append(PtxFinding(
                "const-written", facts.toolchain, facts.fn.name, stores[0].line,
                stores[0].text, decl.name, stores[0].line, stores[0].text, "ours",
                "store into the const parameter"))
    return out


CHECKS: tuple[tuple[str, Callable[[KernelFacts], list[PtxFinding]]], ...] = (
    ("ld.nc-read-only", check_nc_read_only),
    ("state-space-window", check_state_space_window),
    ("const-written", check_const_written),
)


@dataclass(frozen=True, slots=True)
class PtxVerdict:
    """The checks over one PTX module: its kernels and what failed."""

    toolchain: str
    kernels: tuple[str, ...]
    findings: tuple[PtxFinding, ...]
    nc_loads: int  # `ld.global.nc` instructions seen (what the main check weighed)
    read: frozenset[str] = frozenset()  # pointer parameters some load may read
    written: frozenset[str] = frozenset()  # ... and some store may write

    @property
    def reads_one_writes_another(self) -> bool:
        """A kernel that reads one buffer and writes another: where a `.nc` load of
        the one beside a store to the other can go wrong (the campaign's measure of
        non-trivial kernels)."""
        return any(r != w for r in self.read for w in self.written)


def check_kernel(fn: Function, module: Module, toolchain: str,
                 cu: tuple[CuParam, ...] | None = None, kernel: str = "") -> PtxVerdict:
    """Every check over one kernel of `module`; `cu` its `.cu` declaration, `kernel`
    its name there (default: its PTX name)."""
    facts = kernel_facts(fn, module, toolchain, cu)
    name = kernel or fn.name
    findings = [f for _, check in CHECKS for f in check(facts)]
    nc = sum(1 for i in fn.instructions if i.op in ("ld", "ldu") and i.has("nc"))
    read = {f"{name}.{facts.c_name(b)}" for ins in fn.instructions
            if ins.op in ("ld", "ldu") and not ins.has("param")
            for b in access_bases(ins, facts) if b.startswith("param:")}
    written = {f"{name}.{facts.c_name(b)}" for b in facts.writes
               if b.startswith("param:")}
    return PtxVerdict(toolchain, (name,), tuple(findings), nc, frozenset(read),
                      frozenset(written))


def merged(toolchain: str, verdicts: list[PtxVerdict]) -> PtxVerdict:
    """The verdicts of several kernels of one module as one."""
    return PtxVerdict(toolchain, tuple(k for v in verdicts for k in v.kernels),
                      tuple(f for v in verdicts for f in v.findings),
                      sum(v.nc_loads for v in verdicts),
                      frozenset().union(*(v.read for v in verdicts)),
                      frozenset().union(*(v.written for v in verdicts)))


def check_ptx(ptx: str, toolchain: str, cu_source: str = "") -> PtxVerdict:
    """Every check over every kernel of `ptx`; `cu_source` (the `.cu` it was compiled
    from) gives the parameters' declarations."""
    module = read_ptx(ptx)
    return merged(toolchain, [
        check_kernel(fn, module, toolchain,
                     cu_params(cu_source, fn.name) if cu_source else None)
        for fn in module.kernels])
