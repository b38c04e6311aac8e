"""What the compiler made of a subject's Triton kernels: which ones a call launched
(launches.py), each read into a record (artifacts.py) from its IR and its cubin's SASS (sass.py)
with the occupancy it gets (occupancy.py); kernels compiled for a named GPU on a machine
without one (offline.py); and what `perfbot explain` found, two sides' kernels and what changed
(explanation.py)."""
