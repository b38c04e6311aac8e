"""Run argv[2:] in a process group of its own, send SIGINT to the whole group after argv[1]
seconds (as a terminal's Ctrl-C does), and exit with the command's own exit code."""

import os
import signal
import subprocess
import sys
import time

command = subprocess.Popen(sys.argv[2:], start_new_session=True)
time.sleep(float(sys.argv[1]))
os.killpg(command.pid, signal.SIGINT)
started = time.monotonic()
code = command.wait()
print(f"exit {code}, {time.monotonic() - started:.1f} s after the SIGINT", file=sys.stderr)
sys.exit(code)
