"""Children that tests interrupt start with the default SIGINT.

A shell that is not interactive starts a background job (`pytest ... &`) with SIGINT
ignored; children inherit that, and Python installs no KeyboardInterrupt handler where
SIGINT is ignored at its start. The Ctrl-C tests would then measure how the suite was
launched, not gpusem: every process they interrupt is started through this hook."""

from __future__ import annotations

import signal


def default_sigint() -> None:
    """`preexec_fn` for subprocess.Popen and pexpect.spawn."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
