"""`python -m pgq_teach.cli`: the pgq-teach command, as the worker processes and the tests start it."""

import sys

from . import main

sys.exit(main())
