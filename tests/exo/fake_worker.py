"""A stand-in Exo worker process for the census machinery's tests (no Exo needed):
the protocol of compiler/gpuir_exo/worker.py with verdicts drawn from a hash of the
emitted source, so one program gets one verdict in any process, job or run.

Run as `python fake_worker.py DIALECT [worker.py]` (a `python` wrapper that the
driver starts with worker.py's path as its argument; tests write the wrapper).
"""

from __future__ import annotations

import hashlib
import json
import sys


def answer(req: dict) -> dict:
    if req.get("op") == "explain":
        return {"stage": "explain", "outcome": "ok", "error": "", "sync_error": ""}
    h = int(hashlib.sha256(req["source"].encode()).hexdigest()[:8], 16) % 5
    if h == 3:
        return {"stage": "sync_check", "outcome": "error", "exc_class": "CamsporkError",
                "mro": ["CamsporkError", "Exception"], "message": "RAW HAZARD"}
    if h == 4:
        return {"stage": "load", "outcome": "error", "exc_class": "ValueError",
                "mro": ["ValueError", "Exception"], "message": "<proc>:3:4: fake"}
    return {"stage": "ok", "outcome": "accept", "seconds": {}}


def main() -> None:
    dialect = sys.argv[1]
    info = {"exo_file": f"fake/{dialect}/exo/__init__.py",
            "fingerprint": f"fake-{dialect}",
            "git": {"commit": "0" * 40, "branch": f"fake-{dialect}"},
            "probes": {"ring_buffer_by": dialect == "endgame"}}
    print(json.dumps({"ready": True, "info": info}), flush=True)
    for line in sys.stdin:
        if line.strip():
            req = json.loads(line)
            print(json.dumps(answer(req) | {"id": req.get("id"), "wall": 0.0}),
                  flush=True)


if __name__ == "__main__":
    main()
