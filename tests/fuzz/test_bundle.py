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
    assert read_bundle(a).files["program.py"] == "v2"
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
