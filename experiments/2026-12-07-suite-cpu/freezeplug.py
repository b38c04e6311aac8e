import atexit, gc
atexit.register(gc.freeze)
