"""`python -m xpusim ARGS...`: the same as the `xpusim` console script (xpusim/_cli.py)."""
import sys

from xpusim._cli import main

sys.exit(main())
