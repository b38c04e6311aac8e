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
    code span started, and none of GitHub's autolinks but a commit's (`unlinked`): a zero-width
    joiner breaks each, since a backslash does not (GitHub reads references in the text that the
    markdown gave: "\\#26" still links)."""
    if value is None:
        return "—"
    text = " ".join(blanked(str(value)).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    text = re.sub(r"([\\`*_\[\]|#!~])", r"\\\1", text)
    return unlinked(text)


def unlinked(text: str) -> str:
    """`text` with a zero-width joiner (U+200D) in each of GitHub's autolinks but a bare commit
    SHA (docs/files.md, "Markdown"): a bare URL (after the ":" of "://" and the "www" of "www.");
    a mention (after every "@": GitHub notifies no one for "@\u200duser", and "user@SHA" or
    "owner/repo@SHA" names no commit); and a reference to an issue or pull request, which GitHub
    also notes in the issue it names (after the "#" of "#26" and "owner/repo#26", and the "GH" of
    "GH-26", in any case). Plain text that GitHub reads the same way can take it too (a title)."""
    text = text.replace("://", ":\u200d//")
    text = re.sub(r"(?i)(www)\.", "\\1\u200d.", text)
    text = text.replace("@", "@\u200d")
    text = re.sub(r"#(?=\d)", "#\u200d", text)
    return re.sub(r"(?i)(gh)(?=-\d)", "\\1\u200d", text)


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
