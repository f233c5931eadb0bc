"""The tfjob command-line interface (``tfjob``)."""
