"""The viz release: written into every saved document's environment and the HTML report."""

__version__ = "0.1.0"
