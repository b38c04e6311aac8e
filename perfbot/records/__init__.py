"""The files perfbot keeps and reads back: the results of a run, the baseline store, and the
schema every file it reads is validated against."""
