"""The characters no name or one-line text perfbot reads may hold, in one definition
(docs/files.md, "Control characters"): what a terminal or a page would act on or reorder rather
than show, and what breaks a line.

- C0 (U+0000-001F), DEL (U+007F) and C1 (U+0080-009F): line breaks, tabs, escapes; a C1 CSI
  (U+009B) starts a terminal escape sequence as ESC [ does, and NEL (U+0085) breaks a line.
- The line and paragraph separators U+2028 and U+2029: `str.splitlines` and editors break there.
- The bidirectional controls (U+061C, U+200E-200F, U+202A-202E, U+2066-2069): they reorder
  what follows on screen, so a name could show as another ("Trojan Source").
- Lone surrogates (U+D800-DFFF), which JSON's `\\ud800` can give: no UTF-8 terminal or file
  can take them.

Invisible characters that only join or separate (U+200B-200D, U+FEFF) are allowed: emoji and
some scripts need them, they move nothing, and perfbot compares names exactly.
"""

from __future__ import annotations

import re

CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")

# How a refusal names them.
DESCRIBED = "control characters (line breaks, tabs, escapes, C1 and bidirectional controls)"


def has_control(text: str) -> bool:
    return CONTROL.search(text) is not None


def blanked(text: str) -> str:
    """`text` with each control character a space: for text from other programs that perfbot
    keeps or shows (an exception's message, a compiler's error)."""
    return CONTROL.sub(" ", text)


def escaped(text: str) -> str:
    """`text` with each control character written as its escape (`\\x9b`, `\\u202e`): for a line
    that names what was refused, so that the reader sees the character and the terminal does not act on it."""
    return CONTROL.sub(lambda found: found.group().encode("unicode_escape", "backslashreplace").decode(), text)
