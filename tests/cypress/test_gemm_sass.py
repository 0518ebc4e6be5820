"""scripts/cypress_gemm_sass.py's register-bank count (cyperf4): under the model
published for Volta and Turing (register r in bank r % 2, one read a bank a cycle,
the reuse cache serving an operand flagged `.reuse` on the instruction before in the
same slot), what it charges an FFMA / FMUL and what it does not."""

from __future__ import annotations

from tests.script_module import load_script


def test_two_sources_in_one_bank_cost_a_cycle_three_cost_two() -> None:
    stalls = load_script("cypress_gemm_sass").bank_stalls
    assert stalls(["FFMA R1, R8, R12, R3"]) == (1, 0)  # 8, 12 even; 3 odd
    assert stalls(["FFMA R1, R8, R12, R4"]) == (2, 0)  # all three even
    assert stalls(["FFMA R1, R8, R13, R3"]) == (1, 0)  # 13, 3 odd
    assert stalls(["FFMA R1, R8, R13, RZ"]) == (0, 0)  # RZ is no read
    assert stalls(["FMUL R1, R8, R12"]) == (1, 0)
    assert stalls(["FADD R1, R8, R13"]) == (0, 0)
    assert stalls(["LDS.128 R8, [R2+0x40]", "IADD3 R1, R2, R4, RZ"]) == (0, 0)


def test_a_reused_operand_is_read_from_the_cache_in_its_slot_only() -> None:
    stalls = load_script("cypress_gemm_sass").bank_stalls
    # R8 flagged .reuse in slot 0, read again in slot 0: one read less, no conflict
    assert stalls(["FFMA R1, R8.reuse, R13, R3", "FFMA R5, R8, R12, R7"]) == (1, 1)
    # the same register in another slot is read from the file
    assert stalls(["FFMA R1, R8.reuse, R13, R3", "FFMA R5, R12, R8, R7"]) == (2, 0)
    # without the flag, no cache
    assert stalls(["FFMA R1, R8, R13, R3", "FFMA R5, R8, R12, R7"]) == (2, 0)
    # a 4-bank reading of the same instruction: 8 and 12 share bank 0 there too
    assert stalls(["FFMA R1, R8, R12, R3"], banks=4) == (1, 0)
    assert stalls(["FFMA R1, R8, R10, R3"], banks=4) == (0, 0)


def test_a_loads_lead_counts_the_multiply_adds_before_its_first_use() -> None:
    """`lds_lead`: the LDS.128 into R4..R7 is read by the third FFMA (R6): two
    multiply-adds ahead; the LDS.64 into R20, R21 one: the FFMA between writes R21
    without reading it, which does not end the count."""
    lead = load_script("cypress_gemm_sass").lds_lead
    body = ["LDS.128 R4, [R2]", "FFMA R8, R0, R1, R8", "FFMA R9, R0, R1, R9",
            "FFMA R10, R6, R1, R10", "LDS.64 R20, [R2+0x10]", "FFMA R21, R0, R1, R0",
            "FFMA R11, R20, R1, R11"]
    assert lead(body) == {"min": 1, "median": 2, "under_8": 2}
