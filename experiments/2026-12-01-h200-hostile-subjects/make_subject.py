"""A small subject on the GPU whose implementation `mine` does what argv[2] says, written as a
project at argv[1]: `quits` (sys.exit(0) in the implementation), `nan` (a reference holding a
NaN), or `fine`."""

import sys
from pathlib import Path

root, behaviour = Path(sys.argv[1]), sys.argv[2]
body = {
    "quits": "    sys.exit(0)\n",
    "nan": "",
    "fine": "",
}[behaviour]
reference = "    out = x.double() * 2\n" + ("    out[0] = float('nan')\n" if behaviour == "nan" else "") + "    return out\n"
(root / "pk").mkdir(parents=True, exist_ok=True)
(root / "pyproject.toml").write_text(
    '[tool.perfbot]\ntriton-commit = "7c56a5e40f7fd928dfd5c72902d5def0097db73a"\nkernels = "pk"\n'
)
(root / "pk" / "__init__.py").write_text(
    "import sys, time\nimport torch\nfrom perfbot import Case, Subject, Suite\n\n"
    "def inputs(case, generator):\n"
    "    return (torch.randn(case.n, generator=generator, device=generator.device),)\n\n"
    f"def reference(x):\n{reference}\n"
    "subject = Subject('hostile', inputs, reference, {'float32': 1e-5},\n"
    "    suites={'quick': Suite('quick', '', ('mine', 'torch'), (Case('quick', 'c', {'n': 1 << 20}, 'float32'),))})\n\n"
    "@subject.implementation('mine', under_test=True)\n"
    f"def mine(x):\n{body}    return x * 2\n\n"
    "@subject.implementation('torch')\n"
    "def torch_double(x):\n    return torch.mul(x, 2)\n"
)
