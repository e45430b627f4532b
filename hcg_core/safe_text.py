"""Corpus text made safe for where it is shown: a terminal, XML (GraphML, GEXF), Mermaid.

Any text of a corpus (a PDF's control bytes, an ESC sequence, markup) may reach a variable
name, a mechanism or a chunk. These functions are the one place that decides how it is written
out, so no output format is left with raw control characters or raw HTML.
"""

from __future__ import annotations

import re

# C0 controls (bar tab and newline), DEL, C1 controls, and the bidirectional overrides and
# isolates that reorder what a terminal shows ("Trojan Source"): written as visible escapes. So
# are lone surrogates (no UTF-8 stream can write them) and the noncharacters U+FFFE and U+FFFF.
_TERMINAL_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ud800-\udfff\ufffe\uffff]"
)


def _escape(match: re.Match[str]) -> str:
    cp = ord(match.group())
    return f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}"


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate (U+D800-U+DFFF): not Unicode text, it cannot be
    written as UTF-8 (a name the file system could not decode, Python's surrogateescape, too).

    >>> has_lone_surrogate("caf\\u00e9"), has_lone_surrogate("x\\udcff")
    (False, True)
    """
    if text.isascii():  # the common case, checked in C without encoding
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def visible(text: str) -> str:
    r"""``text`` for a terminal: control characters written as ``\xNN`` / ``\uNNNN``.

    An ESC sequence from the corpus can recolour, clear or retitle a terminal; shown this way
    it is just text.

    >>> visible("a\x1b[2Jb\u202ec")
    'a\\x1b[2Jb\\u202ec'
    """
    return _TERMINAL_UNSAFE.sub(_escape, text)


# What XML 1.0 cannot hold at all, escaped or not: C0 controls bar tab, LF and CR; lone
# surrogates; U+FFFE and U+FFFF.
_XML_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_text(text: str) -> str:
    r"""``text`` with every character XML 1.0 forbids written as a visible ``\xNN`` escape.

    The serializer then escapes ``<``, ``&`` and quotes as usual; these characters it cannot
    escape, so a GraphML or GEXF file holding one is not well-formed.

    >>> xml_text("a\x01b\tc")
    'a\\x01b\tc'
    """
    return _XML_ILLEGAL.sub(_escape, text)


# Mermaid reads "#name;" and "#123;" as entity codes and renders a label as HTML: every character
# that could start markup, an entity, a Markdown string or end the label is written as a code.
_MERMAID_CODES = {
    "#": "#35;",
    '"': "#quot;",
    "<": "#lt;",
    ">": "#gt;",
    "&": "#amp;",
    "`": "#96;",
    "|": "#124;",
    "[": "#91;",
    "]": "#93;",
    "{": "#123;",
    "}": "#125;",
}
_MERMAID_UNSAFE = re.compile('[#"<>&`|\\[\\]{}]')


def mermaid_text(text: str) -> str:
    """``text`` for a Mermaid ``["..."]`` label: markup and quotes as entity codes, controls
    visible, on one line.

    >>> mermaid_text('<img src=x onerror="alert(1)">')
    '#lt;img src=x onerror=#quot;alert(1)#quot;#gt;'
    """
    one_line = " ".join(visible(text).split())
    return _MERMAID_UNSAFE.sub(lambda m: _MERMAID_CODES[m.group()], one_line)


# ---------------------------------------------------------------- secrets

# user:password@ in a URL; an Authorization header or bearer token a provider echoed back;
# OpenAI-style keys (sk-..., sk-proj-...) wherever they appear.
_URL_CREDENTIALS = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@]+@")
_AUTH_HEADER = re.compile(
    r"(?i)\b(authorization\s*[:=]\s*['\"]?)(?:bearer\s+|basic\s+)?[^\s'\",}]+"
)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9._~+/=-]{4,}")
_KEY_LIKE = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")
MASK = "***"


def redact(text: str, secrets: tuple[str | None, ...] = ()) -> str:
    """``text`` with credentials masked: the given ``secrets`` (an API key), URL user:password,
    Authorization headers and bearer tokens, and ``sk-...`` keys.

    Every message that may quote a provider's reply or a URL goes through this, so a key never
    reaches stderr, a log or a report file.

    >>> redact("GET http://bob:hunter2@host/v1 failed: Authorization: Bearer sk-abcdefghijkl")
    'GET http://***@host/v1 failed: Authorization: ***'
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, MASK)
    text = _URL_CREDENTIALS.sub(rf"\1{MASK}@", text)
    text = _AUTH_HEADER.sub(rf"\1{MASK}", text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    return _KEY_LIKE.sub(MASK, text)


def env_secrets() -> tuple[str | None, ...]:
    """The API keys this process was given through the environment (masked wherever they appear)."""
    import os

    return tuple(os.environ.get(name) for name in ("OPENAI_API_KEY", "AZURE_OPENAI_API_KEY"))


def host_of(url: str | None) -> str:
    """The host a base URL sends to, without credentials (``api.openai.com`` for None).

    >>> host_of("https://user:pw@example.com:8443/v1"), host_of(None)
    ('example.com:8443', 'api.openai.com')
    """
    from urllib.parse import urlparse

    if not url:
        return "api.openai.com"
    try:
        parsed = urlparse(url)
        host = parsed.hostname or "?"
        return f"{host}:{parsed.port}" if parsed.port else host
    except ValueError:  # a port that is not a number: still name what was given, masked
        return redact(url)


# The hosts of OpenAI's own API, which refuse a request without a real key.
OPENAI_API_DOMAIN = "openai.com"


def sends_to_openai(url: str | None) -> bool:
    """Whether an OpenAI SDK client given base URL ``url`` sends to OpenAI's API: ``url`` (else
    ``$OPENAI_BASE_URL``, else the SDK's default, api.openai.com) on a host under openai.com.

    A local or other OpenAI-compatible server (127.0.0.1, localhost, a company gateway) is not:
    it may take any key, or none.

    >>> sends_to_openai("https://api.openai.com/v1"), sends_to_openai("http://127.0.0.1:8000/v1")
    (True, False)
    """
    import os
    from urllib.parse import urlparse

    url = url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1"
    try:
        host = (urlparse(url).hostname or "").rstrip(".").lower()
    except ValueError:
        return False
    return host == OPENAI_API_DOMAIN or host.endswith("." + OPENAI_API_DOMAIN)
