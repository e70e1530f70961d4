"""``python -m server.cli``: the ``podviews`` command."""

import sys

from server.cli.main import main

sys.exit(main())
