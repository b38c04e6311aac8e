"""The subject a repository declares (subject.py) and its suites (suites.py), imported from its
package (package.py) with each checkout's own code (isolation.py) and checked as it loads
(checks.py), a package's kernel families combined into one subject (families.py), a record of
which files ran (provenance.py), every call into it guarded (guard.py), what two checkouts
declare differently (declarations.py), and which suites, cases and implementations a name means
(selection.py)."""
