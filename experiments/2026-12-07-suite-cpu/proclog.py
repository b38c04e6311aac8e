"""Every Python process of a test run, logged as it ends: its CPU-seconds, whether it imported
PyTorch, and the test it ran under. Installed into the venv that runs the suite, it logs while
/tmp/proclog.on exists:

    cp proclog.py $SITE/_proclog.py; echo "import _proclog" > $SITE/_proclog.pth; touch /tmp/proclog.on

census.py sums /tmp/proclog/*.json. Forked children are logged too (os._exit is wrapped);
processes of other environments (the wheel's fresh venvs) and non-Python ones are not."""

import atexit
import json
import os
import sys
import time

_started = time.time()
_kind = "start"


def _log() -> None:
    try:
        times = os.times()
        record = {
            "pid": os.getpid(),
            "argv": sys.argv[:6],
            "kind": _kind,
            "torch": "torch" in sys.modules,
            "scipy": "scipy" in sys.modules,
            "cpu": times.user + times.system,
            "wall": time.time() - _started,
            "test": os.environ.get("PYTEST_CURRENT_TEST", ""),
        }
        os.makedirs("/tmp/proclog", exist_ok=True)
        with open(f"/tmp/proclog/{os.getpid()}-{int(_started * 1000)}.json", "w") as out:
            json.dump(record, out)
    except OSError:
        pass


def _forked() -> None:
    global _started, _kind
    _started, _kind = time.time(), "fork"


if os.path.exists("/tmp/proclog.on"):
    atexit.register(_log)
    _exit = os._exit

    def _logged_exit(code: int) -> None:
        _log()
        _exit(code)

    os._exit = _logged_exit  # type: ignore[assignment]
    os.register_at_fork(after_in_child=_forked)
