"""`python -m tools` runs the `kraftpy` command."""

import sys

from tools.cli.main import main

sys.exit(main())
