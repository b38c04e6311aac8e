"""The commands of `perfbot`, one module per family; importing one registers its commands."""
