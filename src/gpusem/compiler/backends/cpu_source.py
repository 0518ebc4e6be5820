"""Turning `.cu` texts into one g++ translation unit for the cpu backend.

The cpu backend amortises g++ by building many kernels in ONE translation unit: the
runtime header is parsed once, and each kernel's text is wrapped in its own namespace
`gs_k<i>` so that helpers of different kernels never collide. The text a user wrote is
the text that runs; only these line-preserving rewrites happen (so `#line` keeps g++'s
diagnostics pointing at the user's own line numbers, in a file named `k<i>_<name>.cu`):

- `extern "C"` is dropped (an `extern "C" {` block becomes an anonymous namespace):
  C linkage would merge same-named kernels of different namespaces;
- `extern __shared__ T name[];` becomes `T* const name = <the dynamic smem buffer of
  the thread's CTA>`, because an `extern` declaration has no CPU definition to bind to;
- `static __shared__` becomes `__shared__` (the harness's `__shared__` is static);
- system `#include <...>` lines are hoisted out of the namespace;
- every macro a kernel `#define`s is `#undef`-ed after it, so none leaks into the next.

Raw inline `asm` (outside `GS_PTX_ONLY(...)`) has no CPU meaning: `raw_asm` finds it so
the backend reports the kernel "unsupported" instead of failing the whole build.
"""

from __future__ import annotations

import re

from gpusem.compiler.backends.kernel import KernelSpec

_EXTERN_C_BLOCK = re.compile(r'extern[ \t]*"C"[ \t]*\{')
_EXTERN_C = re.compile(r'extern[ \t]*"C"')
_EXTERN_SHARED = re.compile(
    r"extern[ \t]+__shared__[ \t]+(?:__align__[ \t]*\([ \t]*\d+[ \t]*\)[ \t]*)?"
    r"([A-Za-z_][\w:<>, \t]*?[\w>])[ \t]+(\w+)[ \t]*\[[ \t]*\][ \t]*"
    r"(?:__align__[ \t]*\([ \t]*\d+[ \t]*\)[ \t]*)?;"
)
_STATIC_SHARED = re.compile(r"\bstatic[ \t]+__shared__\b")
_SYS_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include[ \t]*<[^>\n]+>[^\n]*$", re.MULTILINE)
_DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.MULTILINE)
_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_STRING = re.compile(r'"(?:\\.|[^"\\\n])*"')
_ASM = re.compile(r"\b(?:asm|__asm__|__asm)\b")

HEADER_INCLUDE = '#include "gpusem_rt.cuh"\n'


def _strip_ptx_only(text: str) -> str:
    """Remove every `GS_PTX_ONLY( ... )` with balanced parentheses."""
    out, i = [], 0
    while (j := text.find("GS_PTX_ONLY", i)) >= 0:
        out.append(text[i:j])
        k = text.find("(", j)
        if k < 0:
            break
        depth, pos = 0, k
        while pos < len(text):
            c = text[pos]
            if c == '"':
                m = _STRING.match(text, pos)
                pos = m.end() if m else pos + 1
                continue
            depth += (c == "(") - (c == ")")
            pos += 1
            if depth == 0:
                break
        i = pos
    out.append(text[i:])
    return "".join(out)


def raw_asm(source: str) -> bool:
    """Whether the kernel text has inline assembly the cpu backend cannot run."""
    code = _STRING.sub('""', _COMMENT.sub(" ", source))
    return bool(_ASM.search(_strip_ptx_only(code)))


def rewrite(source: str, *, for_cpu: bool = True) -> tuple[str, list[str], list[str]]:
    """(rewritten text, hoisted include lines, macro names to #undef after it).

    `for_cpu=False` keeps `extern __shared__` and `static __shared__` (the nvcc check
    batches kernels the same way but compiles real CUDA).
    """
    includes = [m.group(0).strip() for m in _SYS_INCLUDE.finditer(source)]
    text = _SYS_INCLUDE.sub("", source)
    text = _EXTERN_C_BLOCK.sub("namespace {", text)
    text = _EXTERN_C.sub("", text)
    if for_cpu:
        text = _EXTERN_SHARED.sub(
            lambda m: (
                f"{m.group(1)}* const {m.group(2)} = "
                f"reinterpret_cast<{m.group(1)}*>(::gs::dyn_smem());"
            ),
            text,
        )
        text = _STATIC_SHARED.sub("__shared__", text)
    defines = sorted(set(_DEFINE.findall(source)))
    return text, includes, defines


def launcher(index: int, spec: KernelSpec, prebuilt_runtime: bool = False) -> str:
    """`gs_launch_<i>`: unpack the argument vector and hand the kernel to the harness:
    through `gs_rt_launch` where the library links the prebuilt runtime object (the
    cpu backend: simt_sched.h says why), else `gs::launch` itself (the unit stands
    alone: standalone_cpu.py's reproducer)."""
    entry = "::gs_rt_launch" if prebuilt_runtime else "::gs::launch"
    args = ", ".join(f"*({p.c_type}*)a[{k}]" for k, p in enumerate(spec.params))
    types = ", ".join(p.c_type for p in spec.params)
    check = (
        f"static_assert(::gs::signature_matches(&gs_k{index}::{spec.name}, "
        f'(void (*)({types})) nullptr), "kernel parameters differ from '
        f'KernelSpec.params ({spec.signature()})");\n'
    )
    return check + (
        f'extern "C" int gs_launch_{index}(const ::gs::LaunchCfg* cfg, void** args, '
        f"char* msg, int len) {{\n"
        f"  return {entry}(cfg, [](void** a) {{ (void)a; gs_k{index}::{spec.name}"
        f"({args}); }}, args, msg, len);\n}}\n"
    )


def file_stem(index: int, spec: KernelSpec) -> str:
    return f"k{index}_{spec.name}"


RUNTIME_UNIT = HEADER_INCLUDE + (
    'extern "C" int gs_rt_launch(const ::gs::LaunchCfg* cfg, void (*thunk)(void**), '
    "void** args, char* msg, int msglen) {\n"
    "  return ::gs::launch(cfg, thunk, args, msg, msglen);\n}\n"
)


def translation_unit(kernels: list[tuple[int, KernelSpec]],
                     prebuilt_runtime: bool = False) -> str:
    """One g++ translation unit holding every (index, spec) with its launcher;
    `prebuilt_runtime`: the library links RUNTIME_UNIT's object (see `launcher`)."""
    return namespaced_unit(
        [(i, file_stem(i, s), s.source, launcher(i, s, prebuilt_runtime))
         for i, s in kernels],
        for_cpu=True,
    )


def namespaced_unit(items: list[tuple[int, str, str, str]], *, for_cpu: bool) -> str:
    """Sources `(index, file stem, text, epilogue)` each in namespace `gs_k<index>`."""
    head, body = [HEADER_INCLUDE], []
    for index, stem, source, epilogue in items:
        text, includes, defines = rewrite(source, for_cpu=for_cpu)
        head.extend(f"{inc}\n" for inc in includes)
        body.append(f'namespace gs_k{index} {{\n#line 1 "{stem}.cu"\n{text}\n}}\n')
        body.extend(f"#undef {name}\n" for name in defines)
        if epilogue:
            body.append(f'#line 1 "{stem}.launch"\n{epilogue}')
    return "".join(head) + "".join(body)


_DIAG_FILE = re.compile(r"\bk(\d+)_\w+\.(?:cu|launch)[:(]\d+")


def blamed_kernels(stderr: str) -> set[int]:
    """Indices of kernels that g++'s diagnostics point at (errors and their context)."""
    return {int(m.group(1)) for m in _DIAG_FILE.finditer(stderr)}
