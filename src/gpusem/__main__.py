"""`python -m gpusem ...`: the same as the `gpusem` command."""

from gpusem.cli.main import main

main()
