"""What a subject may not change in its process (perfbot/measuring/untouched.py): each kind of
change is named, and nothing else is."""

import sys
import time

import pytest

from perfbot.measuring import correctness, measure, untouched
from perfbot.measuring.untouched import Untouched


@pytest.fixture
def noted() -> Untouched:
    return Untouched()


def test_nothing_changed_is_no_refusal(noted: Untouched):
    assert noted.changed() == [] and noted.refusal() is None
    assert noted.refusal(clocks_only=True) is None


def test_a_function_of_perfbots_replaced_is_named(noted: Untouched, monkeypatch):
    monkeypatch.setattr(correctness, "check", lambda *args, **kwargs: None)
    assert noted.refusal() == "the subject changed what it may not: perfbot.measuring.correctness.check"
    assert noted.refusal(clocks_only=True) is None  # after a round, the clocks alone are looked at


def test_a_functions_code_replaced_is_named(noted: Untouched, monkeypatch):
    monkeypatch.setattr(correctness.check, "__code__", (lambda *args, **kwargs: None).__code__)
    assert noted.changed() == ["perfbot.measuring.correctness.check"]


def test_a_classs_member_replaced_is_named(noted: Untouched, monkeypatch):
    monkeypatch.setattr(untouched.Untouched, "refusal", lambda self, clocks_only=False: None)
    assert noted.changed() == ["perfbot.measuring.untouched.Untouched.refusal"]


def test_a_module_replaced_or_removed_is_named(noted: Untouched, monkeypatch):
    monkeypatch.setitem(sys.modules, "perfbot.measuring.measure", type(sys)("perfbot.measuring.measure"))
    assert noted.changed() == ["perfbot.measuring.measure"]
    monkeypatch.setitem(sys.modules, "perfbot.measuring.measure", measure)
    monkeypatch.delitem(sys.modules, "perfbot.measuring.measure")
    assert noted.changed() == ["perfbot.measuring.measure"]


def test_a_patched_clock_is_named_in_either_look(noted: Untouched, monkeypatch):
    monkeypatch.setattr(time, "perf_counter", lambda: 0.0)
    assert noted.changed(clocks_only=True) == ["time.perf_counter"] == noted.changed()


def test_more_than_five_changes_are_counted_not_listed(noted: Untouched, monkeypatch):
    names = sorted(name for name in vars(correctness) if callable(getattr(correctness, name)))
    defined = [
        name for name in names if getattr(getattr(correctness, name), "__module__", None) == correctness.__name__
    ]
    assert len(defined) >= 6
    for name in defined[:7]:
        monkeypatch.setattr(correctness, name, lambda: None)
    refusal = noted.refusal()
    assert refusal is not None and refusal.endswith(f" and {min(7, len(defined)) - 5} more"), refusal
    assert refusal.count("perfbot.measuring.correctness.") == 5


def test_a_removal_is_seen_whatever_the_subject_sets_in_the_module(noted: Untouched, monkeypatch):
    """A missing key is told by KeyError: no sentinel of the module's that a subject could set to
    the removed object (a review's bypass of e21b557)."""
    removed = vars(untouched.Untouched)["refusal"]
    monkeypatch.setattr(untouched, "_MISSING", removed, raising=False)
    monkeypatch.delattr(untouched.Untouched, "refusal")
    assert noted.changed() == ["perfbot.measuring.untouched.Untouched.refusal"]


def test_a_module_is_looked_for_in_the_sys_modules_of_now(noted: Untouched, monkeypatch):
    """sys.modules rebound to a copy holding a stand-in: the stand-in is what imports find now."""
    copy = dict(sys.modules)
    copy["perfbot.measuring.measure"] = type(sys)("perfbot.measuring.measure")
    monkeypatch.setattr(sys, "modules", copy)
    assert noted.changed() == ["perfbot.measuring.measure"]
