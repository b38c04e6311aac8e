"""Markdown that perfbot writes, safe by construction, and the templates it is written with.

Every value a template prints goes through `markdown_escape` (jinja2's `finalize`), except the
few strings perfbot formats itself and marks `Markdown` (numbers, verdict names, the marker). So
no file perfbot reads can put live HTML, an HTML comment, a forged marker, a live @mention, a bare
URL that GitHub would link, or a broken table into what it writes. Text shown as one (a suite and
its case) is joined before it is escaped: two halves escaped apart can still make a link between
them ("https:" and "/evil.example").
"""

from __future__ import annotations

import re

import jinja2

from ..characters import blanked
from ..deciding.comparison import label, shape_text

# The hidden line by which the bot finds its own PR comment again. Rendered text can never
# contain it: every value from a file is escaped ("<" becomes "&lt;").
MARKER = "<!-- perfbot-report -->"
# The longest a single value is shown in markdown; a longer one is cut with "…".
MAX_SHOWN = 300


class Markdown(str):
    """Markdown that perfbot itself wrote (a formatted number, a fixed word): printed as is."""


def markdown_escape(value: object, limit: int = MAX_SHOWN) -> str:
    """Any value as inert inline markdown: on one line, at most `limit` characters, no HTML (so
    no comment opened and no marker forged), no table cell ended, no emphasis, link, heading or
    code span started, no live @mention (a zero-width joiner follows every @, and GitHub
    notifies no one for "@\u200duser") and no bare URL that GitHub's autolinks would make a
    link of (one follows the ":" of every "://" and the "www" of every "www.")."""
    if value is None:
        return "—"
    text = " ".join(blanked(str(value)).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"([\\`*_\[\]|#!~])", r"\\\1", text)
    text = text.replace("://", ":\u200d//")
    text = re.sub(r"(?i)(www)\.", "\\1\u200d.", text)
    return text.replace("@", "@\u200d")


def _finalize(value: object) -> str:
    return value if isinstance(value, Markdown) else markdown_escape(value)


def number(value: float | None, spec: str, suffix: str = "") -> Markdown:
    """A number as perfbot formats it, printed as is; None as an empty cell."""
    return Markdown("" if value is None else f"{value:{spec}}{suffix}")


TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("perfbot.output", "templates"),
    autoescape=False,
    finalize=_finalize,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
    undefined=jinja2.StrictUndefined,
)
TEMPLATES.filters.update(label=label, shape=shape_text, number=number)
TEMPLATES.globals.update(marker=Markdown(MARKER), Markdown=Markdown)
