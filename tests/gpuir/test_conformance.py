"""Conformance: every `.gpuir` under tests/gpuir/conformance and examples/gpuir carries
its verdict in a header, and `gpusem check` (the front end: parsing, collective and
distributed memory analyses) must agree with it.

Headers:
  `# expect: accepted`
  `# expect: rejected <Rule> <message prefix>`: for the front end's rules the check
      must fail with that rule and prefix; for the sync checks of Figure 7
      (CheckReads, CheckMutates, CheckBarrier) the front end must accept (the AMIR
      sync checker rejects; tests/amir runs it)
  `# expect: badinput <message prefix>`: exit 2.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from gpusem.calculus.errors import BadInput, IllTyped
from gpusem.typing_rules.gpuir.frontend import check_file

ROOT = Path(__file__).parents[2]
FILES = sorted((Path(__file__).parent / "conformance").glob("*.gpuir")) + \
    sorted((ROOT / "examples" / "gpuir").glob("*.gpuir"))
SYNC_CHECKS = {"CheckReads", "CheckMutates", "CheckBarrier"}


def expectation(path: Path) -> tuple[str, str, str]:
    m = re.search(r"^# expect: (accepted|rejected|badinput)\s*(.*)$", path.read_text(),
                  re.MULTILINE)
    assert m, f"{path.name} has no '# expect:' header"
    verdict, rest = m.group(1), m.group(2).strip()
    if verdict == "rejected":
        rule, _, text = rest.partition(" ")
        return verdict, rule, text.split(":")[0].strip()
    return verdict, "", rest.split(":")[0].strip()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_front_end_verdict(path: Path) -> None:
    verdict, rule, prefix = expectation(path)
    if verdict == "accepted" or rule in SYNC_CHECKS:
        check_file(str(path))
    elif verdict == "rejected":
        with pytest.raises(IllTyped) as err:
            check_file(str(path))
        assert err.value.rule == rule, err.value.one_line()
        assert err.value.message.startswith(prefix), err.value.one_line()
    else:
        with pytest.raises(BadInput) as err:
            check_file(str(path))
        assert err.value.prefix == prefix, err.value.one_line()
        assert err.value.one_line().startswith(f"{path}:"), "bad input names file:line:col"


def test_examples_cover_the_brief() -> None:
    """Section 2.1 and 2.2 programs each come with a corrected version."""
    names = {p.stem for p in FILES}
    for pair in (("fence_broadcast", "fence_broadcast_missing_fence"),
                 ("multicast_race", "multicast_cluster_sync"),
                 ("wgmma_unwaited", "wgmma_waited"),
                 ("wgmma_cluster_sync_race", "wgmma_cluster_sync"),
                 ("cp_async_pipeline", "cp_async_pipeline_unwaited"),
                 ("tmp_broadcast", "tmp_vector_copy")):
        assert set(pair) <= names
    assert {"mbarrier_broadcast", "producer_consumer", "gemv_shfl", "gemm_tiled"} <= names
