"""CPU code (cexp, 5.5) -> host C++: the functions, `main`, and the `run k(..)` of
each kernel invocation (CPU-RUN calls the kernel's host function, soac.py).

Every cexp is a C++ expression; a `let` or an `if` is an immediately invoked lambda
(`[&]() { ..; return ..; }()`), so that only the branch CPU-IF-* picks runs and a
`let` runs its right-hand side before its body, as CPU-LET-EXP and CPU-LET-VAL do.
Tuples are `std::tuple` (a 1-tuple is its element, 6.1); `print` is `lc_print`, which
writes the values in the driver's machine-readable form.
"""

from __future__ import annotations

from typing import assert_never

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import UNIT
from gpusem.compiler.lambdacu_cuda.thread import Scope, c_type, prim_call


def lower_function(f: ast.Function) -> tuple[str, str]:
    """(prototype, definition) of `f` as a host function `fn_<f>`."""
    sc = Scope({})
    params = []
    for p in f.params:
        sc, c = sc.bind(p.name, p.type, "v")
        params.append(f"{c_type(p.type)} {c}")
    head = f"static {c_type(f.ret)} fn_{f.name}({', '.join(params)})"
    return head + ";", f"{head} {{\n  return {cexp(f.body, sc)};\n}}\n"


def _atoms(xs: tuple[ast.Atom, ...], sc: Scope) -> str:
    return ", ".join(sc.atom(a) for a in xs)


def cexp(e: ast.CExp, sc: Scope) -> str:
    match e:
        case ast.CLet(names, rhs, body):  # CPU-LET-EXP, CPU-LET-VAL
            stmts = [f"auto t = {cexp(rhs, sc)};"] if len(names) != 1 else []
            inner = sc
            for k, name in enumerate(names):
                # Note: host binders are `auto`; only thread code reads types.
                inner, c = inner.bind(name, UNIT, "v")
                src = cexp(rhs, sc) if len(names) == 1 else f"std::get<{k}>(t)"
                stmts.append(f"auto {c} = {src};")
            if not names:
                stmts.append("(void)t;")
            return ("[&]() { " + " ".join(stmts)
                    + f" return {cexp(body, inner)}; }}()")
        case ast.CIf(cond, then, else_):  # CPU-IF-TRUE, CPU-IF-FALSE
            return (f"[&]() {{ if ({sc.atom(cond)}) return {cexp(then, sc)}; "
                    f"return {cexp(else_, sc)}; }}()")
        case ast.CCall(fn, args):  # CPU-FUNC-APP
            return f"fn_{fn}({_atoms(args, sc)})"
        case ast.CPrim(op, args):  # CPU-PRIM
            return prim_call(op, args, sc)
        case ast.CTuple(atoms):  # CPU-TUPLE
            if len(atoms) == 1:
                return sc.atom(atoms[0])
            return f"std::make_tuple({_atoms(atoms, sc)})"
        case ast.CRun(k, args):  # CPU-RUN
            return f"run_{k}({_atoms(args, sc)})"
        case ast.CCmd(_, args):  # CPU-CMD (ours, L8)
            return f"lc_print({_atoms(args, sc)})"
        case _:
            assert_never(e)


def main_text(main: ast.Function) -> str:
    """The program's `main`: EVAL-MAIN, then the value, as the driver reads it."""
    del main
    return ("int main(int argc, char** argv) {\n"
            "#if !GS_CUDA\n"
            "  lc_seed = argc > 1 ? strtoull(argv[1], nullptr, 10) : 0ull;\n"
            "#endif\n  (void)argc;\n  (void)argv;\n"
            "  auto value = fn_main();\n  lc_main_at = lc_len_out;\n"
            "  lc_out(\"main\");\n  lc_show(value);\n"
            "  lc_out(\"\\n\");\n  lc_finish();\n}\n")
