"""lambda-cu printer: AST -> the concrete syntax of `grammar.lark`, so that
parse(print(p)) == p (tests/lambdacu/test_syntax.py, a hypothesis property).

One case per AST class (STYLE 9). Thread and CPU `let`s print one per line, indented
by nesting, so that printed programs read as the kernels of Sec 7 do.
"""

from __future__ import annotations

from typing import assert_never

from gpusem.calculus.lambdacu import ast
from gpusem.calculus.lambdacu.values import Arr, show_scalar, show_type

IND = "  "


def print_program(p: ast.Program) -> str:
    parts = [print_kernel(k) for k in p.kernels]
    parts += [print_function(f) for f in p.functions]
    return "\n".join(parts)


def _params(ps: tuple[ast.Param, ...]) -> str:
    return ", ".join(f"{p.name}: {show_type(p.type)}" for p in ps)


def print_kernel(k: ast.Kernel) -> str:
    head = f"kernel {k.name}({_params(k.params)}) -> {show_type(k.ret)} {{\n"
    return head + print_kexp(k.body, IND) + "}\n"


def print_function(f: ast.Function) -> str:
    head = f"function {f.name}({_params(f.params)}) -> {show_type(f.ret)} {{\n"
    return head + IND + print_cexp(f.body, IND) + "\n}\n"


def print_kexp(e: ast.KExp, ind: str) -> str:
    match e:
        case ast.KLet(names, app, body):
            return (f"{ind}let {', '.join(names)} = {print_soac(app, ind)}\n"
                    + print_kexp(body, ind))
        case ast.KRet(names):
            return f"{ind}ret {', '.join(names)}\n"
        case _:
            assert_never(e)


def print_soac(app: ast.SoacApp, ind: str) -> str:
    parts = [app.soac, *(print_arg(a, ind + IND) for a in app.args)]
    if app.size is not None:
        parts.append(print_size(app.size))
    return " ".join(parts)


def print_arg(a: ast.Arg, ind: str) -> str:
    match a:
        case ast.Thunk(params, body, using):
            uses = f" using {', '.join(using)}" if using else ""
            return f"{{ {', '.join(params)} => {print_gexp(body, ind)}{uses} }}"
        case ast.Rops(ops):
            return f"({', '.join(ops)})"
        case _:
            assert_never(a)


def print_size(s: ast.Size) -> str:
    match s:
        case ast.Len(name):
            return f"#{name}"
        case ast.Var() | ast.Lit():
            return print_atom(s)
        case _:
            assert_never(s)


def print_atom(a: ast.Atom) -> str:
    match a:
        case ast.Var(name):
            return name
        case ast.Lit(value):
            if isinstance(value, Arr):
                if not value.items:
                    return f"[: {value.elem}]"
                return "[" + ", ".join(show_scalar(x) for x in value.items) + "]"
            return show_scalar(value)
        case _:
            assert_never(a)


def _atoms(atoms: tuple[ast.Atom, ...], sep: str = ", ") -> str:
    return sep.join(print_atom(a) for a in atoms)


def print_gexp(e: ast.GExp, ind: str) -> str:
    match e:
        case ast.GLet(names, rhs, body):
            return (f"let {', '.join(names)} = {print_gexp(rhs, ind + IND)} in\n"
                    f"{ind}{print_gexp(body, ind)}")
        case ast.GIf(cond, then, else_):
            return (f"if {print_atom(cond)} then {print_gexp(then, ind + IND)} "
                    f"else {print_gexp(else_, ind + IND)}")
        case ast.GRet(atoms):
            return f"ret {_atoms(atoms)}"
        case ast.GPrim(op, args):
            return f"{op} {_atoms(args, ' ')}"
        case ast.GSub(array, index):
            return f"{array}[{print_atom(index)}]"
        case ast.GAtom(atom):
            return print_atom(atom)
        case _:
            assert_never(e)


def print_cexp(e: ast.CExp, ind: str) -> str:
    match e:
        case ast.CLet(names, rhs, body):
            return (f"let ({', '.join(names)}) = {print_cexp(rhs, ind + IND)} in\n"
                    f"{ind}{print_cexp(body, ind)}")
        case ast.CIf(cond, then, else_):
            return (f"if {print_atom(cond)}\n{ind}then {print_cexp(then, ind + IND)}\n"
                    f"{ind}else {print_cexp(else_, ind + IND)}")
        case ast.CCall(fn, args):
            return f"{fn}({_atoms(args)})"
        case ast.CCmd(cmd, args):
            return f"{cmd}({_atoms(args)})"
        case ast.CPrim(op, args):
            return f"{op} {_atoms(args, ' ')}"
        case ast.CTuple(atoms):
            return print_atom(atoms[0]) if len(atoms) == 1 else f"({_atoms(atoms)})"
        case ast.CRun(kernel, args):
            return f"run {kernel}({_atoms(args)})"
        case _:
            assert_never(e)
