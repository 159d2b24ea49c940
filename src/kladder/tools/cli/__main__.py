"""`python -m kladder.tools.cli ...`: the package's __init__ installed the early signal handlers before its imports."""
import sys

from . import main

sys.exit(main())
