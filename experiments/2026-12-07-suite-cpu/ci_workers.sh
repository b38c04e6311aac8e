# `.ci/run` from fresh clones of main's HEAD, with N pytest-xdist workers instead of the README's
# three (the clone's .ci/run edited; test_docs then fails, as it checks the command verbatim),
# timed with cpuplug.py (copied to /tmp/plug). Chromium removed first, as CI's machine has none.
# Run as root: nohup setsid bash ci_workers.sh > /tmp/ci-workers.out 2>&1 &
set -u
one() {  # NAME WORKERS
  apt-get remove -y -qq chromium chromium-driver chromium-common >/dev/null 2>&1; apt-get autoremove -y -qq >/dev/null 2>&1
  rm -rf /tmp/ci-$1 /tmp/cpu-$1; git clone -q /work/main /tmp/ci-$1; git -C /tmp/ci-$1 checkout -q $(git -C /work/main rev-parse HEAD)
  cd /tmp/ci-$1
  sed -i "s/pytest -n 3 /pytest -n $2 /" .ci/run; grep -c "pytest -n $2 " .ci/run > /tmp/ci-$1.workers
  date -u +%s.%N > /tmp/ci-$1.start
  ( export PYTHONPATH=/tmp/plug CPU_OUT=/tmp/cpu-$1 PYTEST_ADDOPTS="-p cpuplug"; { time bash .ci/run ; } > /tmp/ci-$1.log 2>&1; echo "exit $?" >> /tmp/ci-$1.log )
  date -u +%s.%N > /tmp/ci-$1.end
  cd /tmp
}
one w4a 4
one w3b 3
