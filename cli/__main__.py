"""``python -m tfjob.cli``: the same as the ``tfjob`` command."""

import sys

from tfjob.cli.main import main

sys.exit(main())
