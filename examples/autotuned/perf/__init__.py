"""What perfbot measures in this repository: two kernel families, each a subject of its own with
its inputs, reference, tolerance and suites (perfbot's docs/subject.md, "Several kernels").

perfbot finds this package through `[tool.perfbot] kernels` in pyproject.toml and reads
`subjects` from it.
"""

from .gelu import subject as gelu
from .softmax import subject as softmax

subjects = [softmax, gelu]
