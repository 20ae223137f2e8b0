"""`python3 bench SUBCOMMAND ...` (or `python3 -m bench ...` from the checkout's root): bench/haloex_bench.py."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from haloex_bench import main  # noqa: E402

sys.exit(main())
