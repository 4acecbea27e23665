"""A stand-in for the user's browser in the MCP OAuth tests (run through a wrapper named by
``BROWSER``, which Python's ``webbrowser`` calls with the URL).

Appends the URL to the file ``TEST_BROWSER_LOG``, then, by ``TEST_BROWSER_MODE``:
``follow`` (default) GETs it following redirects (the test server's ``/authorize`` approves at
once and redirects to hookcode's callback); ``wrong-state`` visits the callback the server
redirected to with another ``state``; ``none`` does nothing more (nobody logs in).
"""

from __future__ import annotations

import os
import sys
import urllib.error
import urllib.request
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

TIMEOUT = 60


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _get(url: str) -> None:
    try:
        with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
            response.read()
    except urllib.error.HTTPError as exc:  # the callback's error pages
        exc.read()


def main() -> int:
    url = sys.argv[1]
    with open(os.environ["TEST_BROWSER_LOG"], "a", encoding="utf-8") as log:
        log.write(url + "\n")
    mode = os.environ.get("TEST_BROWSER_MODE", "follow")
    if mode == "follow":
        _get(url)
    elif mode == "wrong-state":
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            opener.open(url, timeout=TIMEOUT)
            raise SystemExit("the authorization server did not redirect")
        except urllib.error.HTTPError as exc:
            location = exc.headers["Location"]
        parts = urlsplit(location)
        query = [(k, "forged-state" if k == "state" else v) for k, v in parse_qsl(parts.query)]
        _get(urlunsplit(parts._replace(query=urlencode(query))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
