"""The commands of `perfbot`, one module per family; cli.py registers them."""
