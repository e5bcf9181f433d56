"""`python -m kraftpy` runs the `kraftpy` command."""

import sys

from kraftpy.cli.main import main

sys.exit(main())
