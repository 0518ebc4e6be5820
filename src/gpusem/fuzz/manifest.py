"""A campaign directory's own records, beside its bundles (for `--resume`):

  OUT/.gpusem/campaign.json          the campaign's parameters (target, backend,
                                     properties, seed, shard, jobs, round size)
  OUT/.gpusem/progress/PROP-I-N.json one per shard: the next round to run and the
                                     counts so far, replaced atomically after each
                                     round (a kill loses at most the round under way,
                                     whose findings are already bundles)

A resumed shard starts at its next round with its counts, so a campaign killed and
resumed checks the same programs, in the same order, as one that ran through.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from gpusem.calculus.errors import BadInput

VERSION = 1
FOLDER = ".gpusem"


def _folder(out_dir: str | Path) -> Path:
    return Path(out_dir) / FOLDER


def _atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    os.replace(tmp, path)


def write_campaign(out_dir: str | Path, params: dict[str, Any]) -> None:
    _atomic(_folder(out_dir) / "campaign.json", {"version": VERSION} | params)


def read_campaign(out_dir: str | Path) -> dict[str, Any]:
    """The parameters of the campaign in `out_dir` (BadInput when there is none)."""
    path = _folder(out_dir) / "campaign.json"
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise BadInput(f"cannot resume: {out_dir} holds no campaign "
                       f"({FOLDER}/campaign.json)") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadInput(f"cannot resume: {path}: {err}") from None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        raise BadInput(f"cannot resume: {path}: not a version {VERSION} campaign record")
    return data


def progress_path(out_dir: str | Path, prop: str, shard: tuple[int, int]) -> Path:
    return _folder(out_dir) / "progress" / f"{prop}-{shard[0]}-{shard[1]}.json"


def save_progress(out_dir: str | Path, prop: str, shard: tuple[int, int],
                  data: dict[str, Any]) -> None:
    _atomic(progress_path(out_dir, prop, shard), data)


def load_progress(out_dir: str | Path, prop: str,
                  shard: tuple[int, int]) -> dict[str, Any] | None:
    path = progress_path(out_dir, prop, shard)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise BadInput(f"cannot resume: {path}: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("next_round"), int):
        raise BadInput(f"cannot resume: {path}: no next_round")
    return data
