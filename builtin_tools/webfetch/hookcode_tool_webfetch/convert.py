"""HTML to visible text (streamed, no tree) and HTML to markdown (markdownify).

Imported by the tool on first use; BeautifulSoup and markdownify only when markdown is asked for.
"""

from __future__ import annotations

import codecs
import io
from html.parser import HTMLParser

#: elements whose content is not visible text (``embed`` is void: it has none to skip)
HIDDEN = frozenset({"script", "style", "noscript", "iframe", "object"})
#: elements the markdown conversion drops with their content
DROPPED = ("script", "style", "meta", "link")


class VisibleText(HTMLParser):
    """The text nodes of an HTML document outside script, style, noscript, iframe, object and
    embed, concatenated as they come and trimmed at the end (as the reference does).

    Fed UTF-8 bytes chunk by chunk (:meth:`write`): memory holds the text found so far plus
    the parser's unfinished tail, never the document or a tree.
    """

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self._decoder = codecs.getincrementaldecoder("utf-8-sig")(errors="replace")
        self._out = io.StringIO()
        self._hidden = 0

    def write(self, chunk: bytes) -> None:
        self.feed(self._decoder.decode(chunk))

    def result(self) -> str:
        self.feed(self._decoder.decode(b"", final=True))
        self.close()
        return self._out.getvalue().strip()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in HIDDEN:
            self._hidden += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        pass  # <script/>, <iframe/>: nothing inside to hide

    def handle_endtag(self, tag: str) -> None:
        if tag in HIDDEN and self._hidden:
            self._hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self._out.write(data)


def html_to_markdown(html: str) -> str:
    """Markdown with ATX headings, fenced code, ``-`` bullets, ``*`` emphasis and ``---`` rules;
    script, style, meta and link elements dropped with their content."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    del html
    for element in soup(DROPPED):
        element.decompose()
    converter = MarkdownConverter(
        heading_style="ATX", bullets="-", strong_em_symbol="*", code_language=""
    )
    try:
        markdown = converter.convert_soup(soup)
    except RecursionError:
        from hookcode import ToolError

        raise ToolError(
            "The page is nested too deeply to convert to markdown; "
            'fetch it with format "text" or "html" instead'
        ) from None
    return _squeeze_blank_lines(markdown).strip()


def _squeeze_blank_lines(markdown: str) -> str:
    """Runs of blank lines become one, except inside fenced code blocks."""
    out: list[str] = []
    fenced = blank = False
    for line in markdown.split("\n"):
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and not line.strip():
            if blank:
                continue
            blank = True
        else:
            blank = False
        out.append(line)
    return "\n".join(out)
