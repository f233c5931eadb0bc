"""tfjob's version: its own module, so the modules that name it need not import the package."""

__version__ = "0.1.0"
