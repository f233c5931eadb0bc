"""``python -m tfjob.cli``: the same as the ``tfjob`` command."""

from tfjob.cli.main import run

run()
