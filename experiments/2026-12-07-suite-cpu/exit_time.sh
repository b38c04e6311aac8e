#!/usr/bin/env bash
# How long `perfbot suites` spends after its atexit hooks, with and without gc.freeze first
# (the 0.90-1.16 s against 0.33-0.35 s of README.md, "the exit's collections"), from a clone's root:
#   bash experiments/2026-12-07-suite-cpu/exit_time.sh
for freeze in 0 1 0 1 0 1; do .venv/bin/python -c "
import atexit, gc, time
if $freeze: atexit.register(gc.freeze)
atexit.register(lambda: open('/tmp/t0','w').write(repr(time.time())))
from perfbot.cli import perfbot
try:
    perfbot(['suites'], prog_name='perfbot')
except SystemExit: pass
" > /dev/null; python3 -c "import time; print('freeze $freeze: exit %.2f s' % (time.time() - float(open('/tmp/t0').read())))"; done
