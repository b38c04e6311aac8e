"""Adopting perfbot in an existing repository, `perfbot init`: the kernel read from the project's
source, never imported (kernel_source.py); the Triton commit to pin, the files planned whole and
then written where nothing stands, from templates/ (scaffold.py)."""
