"""Hand-written CKernel programs shared by the tests, with a helper to run them."""

from __future__ import annotations

from gpusem.calculus.ckernel.parser import parse_kernel

HEAD = """kernel k grid 1 block 32 inputs 0
param x0 ro i32
param st rw i32
param acc atomic i32
shared s0 i32
"""

# Each statement stores one value per thread into its own cell of `st` (slot 0), so
# st[gid * 4] is the value under test.
def one(expr: str, extra: str = "", head: str = HEAD) -> object:
    return parse_kernel(head + "{\n" + extra + f"  store st (own 0) = {expr};\n}}\n",
                        "t.ck")


T1 = HEAD + """{
  store st (own 1) = (* tid 3:i32);
  let v : i32 = 0:i32;
  if (& tid 1:i32) { v = (ldg x0 (own 1)); } else { v = (load st (own 1)); }
  store st (own 0) = v;
  let w : i32 = (psel (< tid 4:i32) x0 st (own 1));
  store st (own 2) = w;
}
"""

EXCHANGE = HEAD + """{
  store s0 (own 2) = (* tid 10:i32);
  sync;
  let n : i32 = (load s0 (nbr 1 2));
  store st (own 0) = n;
}
"""
