import gc, os, time, json
import pytest
_state = {"t0": 0.0, "total": [0.0, 0.0, 0.0], "count": [0, 0, 0]}
def _cb(phase, info):
    if phase == "start":
        _state["t0"] = time.process_time()
    else:
        g = info["generation"]
        _state["total"][g] += time.process_time() - _state["t0"]
        _state["count"][g] += 1
gc.callbacks.append(_cb)
FREEZE = os.environ.get("GC_FREEZE_AFTER_COLLECT") == "1"
def pytest_collection_finish(session):
    if FREEZE:
        gc.collect(); gc.freeze()
@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session):
    with open(f"/tmp/gcstat/{os.getpid()}.json", "w") as f:
        json.dump({**_state, "cpu": time.process_time(), "frozen": gc.get_freeze_count()}, f)
