import os, sys, time
import pytest
def _log(what):
    with open('/tmp/endlog.txt', 'a') as f:
        f.write(f"{time.time():.3f} {os.getpid()} {os.environ.get('PYTEST_XDIST_WORKER','ctl')} {what}\n")
@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    _log('sessionfinish-first')
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    _log('sessionfinish-last')
def pytest_unconfigure(config):
    _log('unconfigure')
def pytest_runtest_logfinish(nodeid, location):
    _log('logfinish ' + nodeid[-30:])
def pytest_terminal_summary():
    _log('terminal_summary')
import atexit
atexit.register(lambda: _log('atexit-last'))
def pytest_configure(config):
    atexit.register(lambda: _log('atexit-first'))
