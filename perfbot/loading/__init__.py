"""The subject a repository declares (subject.py), loaded with each checkout's own code
(isolation.py), a record of which files ran (provenance.py), every call into it guarded
(guard.py), and what two checkouts declare differently (declarations.py)."""
