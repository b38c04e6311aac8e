"""The engine on the GPU: checking each implementation, timing it in interleaved rounds,
sampling until decided, sharing a run out across GPUs and workers, the environment record, the
selftest of the decision, and Triton builds. The subject's code runs in a process of its own: a
worker that times (worker.py, driven by worker_sides.py) or a child that answers one job
(subject_process.py, its jobs in subject_jobs.py and compiled_sides.py); what it may not change
there is watched (untouched.py, l2_persistence.py)."""
