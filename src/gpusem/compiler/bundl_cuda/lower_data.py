"""Pass `lower_data_perspectives`: partition / claim / lower -> pointer offsets + barriers.

The fixed S-Partition (errata): at code perspective (h, n) a thread with perspective id
p sees piece k = p div (n/c) of x, of length len div c, through y = x + k·(len div c).
S-Claim (fixed): threads with p < n' run the body at (h, n') with y = x. S-Lower: y = x
at ↓π. Each ends with the barrier of `init_ψ; s; dec_ψ; wait_ψ` over the perspective
instance that executed the construct (`KBarrier`), which `place_sync` may move or drop.
"""

from __future__ import annotations

from gpusem.calculus.bundl.ast import BaseType
from gpusem.compiler.bundl_cuda import kir as K
from gpusem.compiler.bundl_cuda.faults import active
from gpusem.compiler.bundl_cuda.paths import note
from gpusem.compiler.bundl_cuda.traverse import map_bodies, rewrite_program

INT = BaseType.INT


def _view(target: str, elem: BaseType, pointer: K.KExpr, length: K.KExpr, span):
    ctype = K.CTYPE[elem]
    return (K.KDecl(target + "_len", "int", length, span),
            K.KDecl(target, ctype + "*", pointer, span))


def lower_stmts(stmts: tuple) -> tuple:
    out: list = []
    for s in stmts:
        out.extend(_lower(map_bodies(s, lower_stmts)))
    return tuple(out)


def _lower(s: K.KStmt) -> tuple:
    match s:
        case K.KPartition(src, tgt, c, src_len, elem, persp, body, span, at) if at:
            note("compile:lower_data:partition at an offset")
            # S-Partition-Offset: y = x + e, bounds to the array's end
            length = K.KBin("-", src_len, at, INT)
            header = (K.KComment(f"partition {src} into {tgt} by {c} at an offset "
                                 "(S-Partition-Offset)", span),
                      *_view(tgt, elem, K.KPtrAdd(K.KVar(src), at), length, span))
            sync = K.KBarrier(persp, K.KPerspId(), f"partition {tgt}", span)
            return (K.KBlock((*header, *body), span), sync)
        case K.KPartition(src, tgt, c, src_len, elem, persp, body, span):
            note("compile:lower_data:partition")
            chunk = K.KBin("/", src_len, K.KConst(c, INT), INT)
            piece = K.KBin("/", K.KPerspId(), K.KConst(persp.n // c, INT), INT)
            offset = K.KBin("*", piece, K.KVar(tgt + "_len"), INT)
            if active("partition-offset-c-times-p"):
                offset = K.KBin("*", K.KConst(c, INT), K.KPerspId(), INT)
            pointer = K.KPtrAdd(K.KVar(src), offset)
            header = (K.KComment(f"partition {src} into {tgt} by {c} (S-Partition)",
                                 span), *_view(tgt, elem, pointer, chunk, span))
            sync = K.KBarrier(persp, K.KPerspId(), f"partition {tgt}", span)
            if active("drop-partition-barrier"):
                return (K.KBlock((*header, *body), span),)
            return (K.KBlock((*header, *body), span), sync)
        case K.KClaim(src, tgt, at, src_len, elem, persp, body, span):
            note("compile:lower_data:claim")
            cond: K.KExpr = K.KBin("<", K.KPerspId(), K.KConst(at, INT), INT)
            if active("claim-all-threads"):
                cond = K.KConst(True, BaseType.BOOL)
            guarded = K.KIf(cond, (*_view(tgt, elem, K.KVar(src), src_len, span), *body),
                            (), span)
            return (K.KComment(f"claim {src} into {tgt} at {at} (S-Claim)", span),
                    guarded, K.KBarrier(persp, K.KPerspId(), f"claim {tgt}", span))
        case K.KLower(src, tgt, src_len, elem, persp, body, span):
            note("compile:lower_data:lower")
            header = (K.KComment(f"lower {src} into {tgt} (S-Lower)", span),
                      *_view(tgt, elem, K.KVar(src), src_len, span))
            return (K.KBlock((*header, *body), span),
                    K.KBarrier(persp, K.KPerspId(), f"lower {tgt}", span))
    return (s,)


def lower_data_perspectives(prog: K.KProgram) -> K.KProgram:
    from dataclasses import replace

    return rewrite_program(prog, lambda f: replace(f, body=lower_stmts(f.body)))
