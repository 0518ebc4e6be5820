"""Perspectives on data: T-Partition, T-Claim, T-Lower (Sec 3.4.2, 4.1.2, Figure 14)
and asynchrony: T-Async-Partition, T-Async-Memcpy, T-Memcpy (Sec 3.7, A.2.2).

A mixin of `bundl.StmtChecker` (it uses `self.j`, `self.attempt`, `self.bind`,
`self.stmt`); split out to keep the judgment module short.

Conventions (paper -> Python): x -> `s.source`, y -> `s.target`, c -> `s.by`,
n' -> `s.at`, π = (h, n) -> `persp`, ↓π -> `destruct(persp, shape)`.
Every partition-like rule drops x from its premise context: x stays in Γ, hidden
(`Context.hide`), so a use names the rule and the new name.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from gpusem.calculus.bundl.ast import (
    ArrayType,
    BaseType,
    AsyncMemcpy,
    AsyncPartition,
    AsyncType,
    Claim,
    Lower,
    Memcpy,
    MemKind,
    Partition,
    Stmt,
    Type,
)
from gpusem.calculus.bundl.perspective import (
    BLOCK1,
    GRID1,
    THREAD1,
    Perspective,
    destruct,
)
from gpusem.calculus.span import Span
from gpusem.typing_rules.bundl.context import Context, show_type
from gpusem.typing_rules.bundl.expr import Judge, require, type_expr, visible

R = TypeVar("R")


class DataRules:
    if TYPE_CHECKING:  # what the mixin uses of `bundl.StmtChecker`
        j: Judge

        def attempt(self, fn: Callable[[], R], default: R) -> R: ...

        def bind(self, ctx: Context, name: str, persp: Perspective, ty: Type,
                 rule: str, span: Span) -> Context: ...

        def stmt(self, ctx: Context, persp: Perspective, s: Stmt) -> int: ...

    def shared_source(self, ctx: Context, persp: Perspective, name: str, rule: str,
                      span: Span) -> ArrayType:
        """The premise `x :^π τ[]^l, l ≠ Local` of T-Partition / T-Claim / T-Lower."""
        b = visible(ctx, name, rule, span)
        require(isinstance(b.type, ArrayType), rule, span,
                lambda: f"not an array: {name} has type {show_type(b.type)}")
        assert isinstance(b.type, ArrayType)  # require raised otherwise
        require(b.type.mem is not MemKind.LOCAL, rule, span,
                lambda: f"local array: {name} is Local; only Shared or Global arrays "
                        "have a perspective to narrow")
        require(b.persp == persp, rule, span,
                lambda: f"perspective mismatch: {name} at {b.persp} can only be "
                        f"narrowed by code at {b.persp}; code is at {persp}")
        return b.type

    def t_partition(self, ctx: Context, persp: Perspective, s: Partition) -> int:
        # T-Partition: Γ, y :^(h,n/c) τ[]^l ⊢^(h,n) s,  c | n,  l ≠ Local
        def head() -> Context:
            ty = self.shared_source(ctx, persp, s.source, "T-Partition", s.span)
            require(s.by >= 1 and persp.n % s.by == 0, "T-Partition", s.span,
                    lambda: f"bad partition: {s.by} does not divide {persp.n}, the "
                            f"size of {s.source}'s perspective {persp}")
            y_persp = Perspective(persp.level, persp.n // s.by)
            if s.offset is not None:
                self.t_partition_offset(ctx, y_persp, s)
            hidden = ctx.hide(s.source, "T-Partition", s.target)
            return self.bind(hidden, s.target, y_persp, ty, "T-Partition", s.span)

        body_ctx = self.attempt(head, poisoned(ctx, s.source, s.target))
        return self.stmt(body_ctx, persp, s.body)

    def t_partition_offset(self, ctx: Context, piece: Perspective,
                           s: Partition) -> None:
        # T-Partition-Offset (our extension, errata "Extension: partition at an
        # offset"): the premises of T-Partition and Γ ⊢^(h,n/c) e : int. The offset
        # is typed at the piece's perspective: every unit of a piece reads the same
        # value (read up), so the piece is one view, as T-Partition's k·chunk is.
        assert s.offset is not None  # the caller's guard
        ty = type_expr(self.j, ctx, piece, s.offset)
        require(ty == BaseType.INT, "T-Partition-Offset", s.offset.span,
                lambda: f"type mismatch: a partition offset must be int, got "
                        f"{show_type(ty)}")

    def t_claim(self, ctx: Context, persp: Perspective, s: Claim) -> int:
        # T-Claim: Γ, y :^(h,n') τ[]^l ⊢^(h,n') s,  n' ≤ n,  l ≠ Local
        sub = Perspective(persp.level, max(s.at, 1))

        def head() -> Context:
            ty = self.shared_source(ctx, persp, s.source, "T-Claim", s.span)
            if self.j.rules.claim_divides:
                # Note: the claimed threads p < n' form an aligned (h, n') unit only
                # when n' | n (as for split). See errata ("T-Claim n' <= n").
                ok, why = s.at >= 1 and persp.n % s.at == 0, "divide"
            else:
                ok, why = 1 <= s.at <= persp.n, "be at most"
            require(ok, "T-Claim", s.span,
                    lambda: f"bad claim: claim at {s.at} must {why} {persp.n}, the "
                            f"size of code at {persp}")
            hidden = ctx.hide(s.source, "T-Claim", s.target)
            return self.bind(hidden, s.target, sub, ty, "T-Claim", s.span)

        body_ctx = self.attempt(head, poisoned(ctx, s.source, s.target))
        return self.stmt(body_ctx, sub, s.body)

    def t_lower(self, ctx: Context, persp: Perspective, s: Lower) -> int:
        # T-Lower: Γ, y :^↓π τ[]^l ⊢^π s,  l ≠ Local
        def head() -> Context:
            ty = self.shared_source(ctx, persp, s.source, "T-Lower", s.span)
            require(persp in (BLOCK1, GRID1), "T-Lower", s.span,
                    lambda: f"bad lower: lower needs code at {GRID1} or {BLOCK1}; code "
                            f"is at {persp}")
            hidden = ctx.hide(s.source, "T-Lower", s.target)
            down = destruct(persp, self.j.shape)
            return self.bind(hidden, s.target, down, ty, "T-Lower", s.span)

        body_ctx = self.attempt(head, poisoned(ctx, s.source, s.target))
        return self.stmt(body_ctx, persp, s.body)

    # --------------------------------------------------------------- asynchrony

    def at_thread1(self, persp: Perspective, what: str, rule: str,
                   span: Span) -> None:
        require(persp == THREAD1, rule, span,
                lambda: f"perspective mismatch: {what} needs code at {THREAD1}; code "
                        f"is at {persp}")

    def t_async_partition(self, ctx: Context, persp: Perspective,
                          s: AsyncPartition) -> int:
        # T-Async-Partition: x :^(Thread,1) τ[]^l  gives  y :^(Thread,1) async τ[]^l
        rule = "T-Async-Partition"

        def head() -> Context:
            self.at_thread1(persp, "async_partition", rule, s.span)
            ty = self.array_at(ctx, s.source, THREAD1, rule, s.span)
            hidden = ctx.hide(s.source, rule, s.target)
            return self.bind(hidden, s.target, THREAD1, AsyncType(ty), rule, s.span)

        body_ctx = self.attempt(head, poisoned(ctx, s.source, s.target))
        return self.stmt(body_ctx, persp, s.body)

    def array_at(self, ctx: Context, name: str, data_persp: Perspective, rule: str,
                 span: Span, async_ok: bool = False) -> ArrayType:
        """x :^π' τ[]^l ∈ Γ at exactly π' (the async ↔ memcpy rules), as ArrayType."""
        b = visible(ctx, name, rule, span)
        ty = b.type.inner if async_ok and isinstance(b.type, AsyncType) else b.type
        require(isinstance(ty, ArrayType), rule, span,
                lambda: f"not an array: {name} has type {show_type(b.type)}")
        assert isinstance(ty, ArrayType)  # require raised otherwise
        require(b.persp == data_persp, rule, span,
                lambda: f"perspective mismatch: {rule} needs {name} at exactly "
                        f"{data_persp}; {name} is at {b.persp}")
        return ty

    def t_async_memcpy(self, ctx: Context, persp: Perspective, s: AsyncMemcpy) -> int:
        # T-Async-Memcpy: x :^(Thread,1) async τ[]^l,  y :^(Thread,1) τ[]^l'
        rule = "T-Async-Memcpy"
        self.at_thread1(persp, "async_memcpy", rule, s.span)
        b = visible(ctx, s.dst, rule, s.span)
        require(isinstance(b.type, AsyncType), rule, s.span,
                lambda: "not async: async_memcpy writes an async_partition target; "
                        f"{s.dst} has type {show_type(b.type)}")
        dst = self.array_at(ctx, s.dst, THREAD1, rule, s.span, async_ok=True)
        src = self.array_at(ctx, s.src, THREAD1, rule, s.span)
        self.same_elem(dst, src, s, rule)
        return 0

    def t_memcpy(self, ctx: Context, persp: Perspective, s: Memcpy) -> int:
        # T-Memcpy: x :^π τ[]^l,  y :^π τ[]^l'
        rule = "T-Memcpy"
        # Note: fixed also accepts an async destination: S-Async-Memcpy defers exactly
        # memcpy(x, y) with x async, and Γ ⊢ Φ needs it typed. See errata.
        async_ok = self.j.rules.memcpy_async_dst
        dst = self.array_at(ctx, s.dst, persp, rule, s.span, async_ok=async_ok)
        src = self.array_at(ctx, s.src, persp, rule, s.span)
        self.same_elem(dst, src, s, rule)
        return 0

    def same_elem(self, dst: ArrayType, src: ArrayType, s: AsyncMemcpy | Memcpy,
                  rule: str) -> None:
        require(dst.elem == src.elem, rule, s.span,
                lambda: f"type mismatch: cannot copy {show_type(src)} {s.src} into "
                        f"{show_type(dst)} {s.dst}")


def poisoned(ctx: Context, source: str, target: str) -> Context:
    """The body context after a failed partition-like head: y bound at x's type, so
    that the body reports its own errors rather than a cascade of "unbound y"."""
    b = ctx.lookup(source)
    if b is None:
        return ctx
    return ctx.extend(target, b.persp, b.type)
