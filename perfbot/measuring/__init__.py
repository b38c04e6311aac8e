"""The engine on the GPU: checking each implementation, timing it in interleaved rounds,
sampling until decided, sharing a run out across GPUs and workers, the environment record, the
selftest of the decision, and Triton builds."""
