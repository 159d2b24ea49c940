"""`python -m kladder ...`: the command line (tools/cli/), its signal handlers installed first."""
import sys

from .core.interrupts import install_early

install_early()         # before the CLI's imports: a Ctrl-C or SIGTERM meanwhile ends it at once

from .tools.cli import main  # noqa: E402 - after the handlers, on purpose

sys.exit(main())
