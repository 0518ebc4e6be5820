"""Counterexample bundles: write, read back, README, atomic replacement, bad input."""

from __future__ import annotations

import json

import pytest
from gpusem.calculus.errors import BadInput
from gpusem.fuzz.bundle import bundle_name, list_bundles, read_bundle, write_bundle

META = {"target": "appy", "backend": "cpu", "property": "compile",
        "signature": "wrong:parallel for simd/store", "kind": "wrong",
        "detail": "C[1]: expected 1, got 2", "size": 2, "shrunk": True,
        "versions": {"appyc": "0.2.0", "triton": "3.6.0"}}


def test_roundtrip(tmp_path) -> None:
    files = {"program.py": "def k(A):\n    A[0] = 1\n", "inputs.json": "{}\n"}
    path = write_bundle(tmp_path, META, files)
    b = read_bundle(path)
    assert b.target == "appy" and b.signature == META["signature"]
    assert b.files["program.py"] == files["program.py"]
    assert json.loads((path / "bundle.json").read_text())["size"] == 2
    readme = b.files["README.md"]
    assert "gpusem replay" in readme and "appyc 0.2.0" in readme
    assert "`compile`" in readme and "`cpu`" in readme and "(shrunk)" in readme


def test_one_folder_per_signature(tmp_path) -> None:
    a = write_bundle(tmp_path, META, {"program.py": "v1"})
    b = write_bundle(tmp_path, META, {"program.py": "v2"})
    other = write_bundle(tmp_path, META | {"signature": "hang:x", "kind": "hang"}, {})
    assert a == b and a != other
    assert read_bundle(a).files["program.py"] == "v1"  # never overwritten
    write_bundle(tmp_path, META, {"program.py": "v3"}, replace=True)  # on purpose
    assert read_bundle(a).files["program.py"] == "v3"
    assert [x.path.name for x in list_bundles(tmp_path)] == sorted([a.name, other.name])
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temp left


def test_names_are_stable_and_safe() -> None:
    n1 = bundle_name("appy", "wrong", "wrong:a/b")
    assert n1 == bundle_name("appy", "wrong", "wrong:a/b")
    assert n1 != bundle_name("appy", "wrong", "wrong:a/c")
    assert "/" not in bundle_name("x", "we/ird kind", "s")


def test_missing_metadata_is_refused(tmp_path) -> None:
    with pytest.raises(ValueError, match="signature"):
        write_bundle(tmp_path, {k: v for k, v in META.items() if k != "signature"}, {})


def test_not_a_bundle_is_bad_input(tmp_path) -> None:
    with pytest.raises(BadInput) as err:
        read_bundle(tmp_path)
    assert err.value.prefix == "not a bundle"
    (tmp_path / "bundle.json").write_text("{oops")
    with pytest.raises(BadInput) as err:
        read_bundle(tmp_path)
    assert err.value.prefix == "malformed bundle"


def test_claim_is_atomic_across_processes(tmp_path) -> None:
    """Eight processes write the same signature at once: one bundle, one owner."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with ctx.Pool(8) as pool:
        owners = pool.starmap(_claim, [(str(tmp_path), i) for i in range(8)])
    assert sum(created for _, created in owners) == 1
    assert len({path for path, _ in owners}) == 1
    (b,) = list_bundles(tmp_path)
    assert b.files["program.py"] == f"v{owners.index((owners[0][0], True))}"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def _claim(out: str, i: int) -> tuple[str, bool]:
    from gpusem.fuzz.bundle import BundleStore

    path, created = BundleStore(out).claim(META, {"program.py": f"v{i}"})
    return str(path), created


def test_update_in_place_and_sightings(tmp_path) -> None:
    from gpusem.fuzz.bundle import BundleStore

    store = BundleStore(tmp_path)
    path, created = store.claim(META | {"state": "shrinking"},
                                {"program.py": "big", "extra.txt": "x"})
    assert created
    store.update(path, META | {"state": "done", "size": 1}, {"program.py": "small"})
    b = read_bundle(path)
    assert b.files["program.py"] == "small" and "extra.txt" not in b.files
    assert b.meta["state"] == "done" and b.sightings == 1
    store.sighting(path, {"seed": 1})
    store.sighting(path, {"seed": 2})
    assert read_bundle(path).sightings == 3 and "seen.jsonl" not in b.files


@pytest.mark.parametrize(("meta", "why"), [
    ("[1, 2]", "not a JSON object"), ("{}", "'target' missing"),
    ('{"target": "x", "backend": "cpu", "property": "p", "signature": 3, "kind": "k"}',
     "'signature' missing or not a string"),
    (b"\xff\xfe{}", "not UTF-8"), (b"{\x00}", "binary file"),
])
def test_corrupt_metadata_is_one_line_of_bad_input(tmp_path, meta, why) -> None:
    (tmp_path / "bundle.json").write_bytes(meta if isinstance(meta, bytes)
                                           else meta.encode())
    with pytest.raises(BadInput) as err:
        read_bundle(tmp_path)
    assert why in str(err.value) and "\n" not in err.value.one_line()


def test_binary_or_non_utf8_files_are_bad_input(tmp_path) -> None:
    path = write_bundle(tmp_path, META, {"program.py": "ok"})
    (path / "program.py").write_bytes(b"\x80\x81")
    with pytest.raises(BadInput, match="not UTF-8"):
        read_bundle(path)
    (path / "program.py").write_bytes(b"a\x00b")
    with pytest.raises(BadInput, match="binary"):
        read_bundle(path)


def test_a_cuda_bundles_readme_has_the_compute_sanitizer_commands() -> None:
    """Issue 32.10: racecheck, synccheck, initcheck and memcheck on the reproducer
    tell a race or barrier misuse from a miscompile on hardware; a cpu bundle gets
    the cpu reproducer's command instead."""
    from gpusem.fuzz.bundle import readme

    meta = {"target": "bundl", "kind": "compile disagree", "property": "compile",
            "signature": "s", "backend": "cuda"}
    text = readme(meta, ["README.md", "repro.cu", "repro_cpu.cpp"])
    for tool in ("racecheck", "synccheck", "initcheck", "memcheck"):
        assert f"`compute-sanitizer --tool {tool} --error-exitcode 99 ./repro`" in text
    assert "`./repro_cpu`" in text
    cpu = readme(meta | {"backend": "cpu"}, ["repro.cu", "repro_cpu.cpp"])
    assert "compute-sanitizer" not in cpu and "repro_cpu.cpp" in cpu
