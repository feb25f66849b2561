"""The Content-Security-Policy of the published site, and what it needs from the build.

Defence in depth behind the escaping: even if a string from an input reached a page as markup,
the browser would run no script that is not the site's own. The theme override
(``overrides/main.html``) writes the policy into a ``<meta http-equiv>`` tag at the top of every
page; the MkDocs hook (``unipo_build/site/hooks.py``) then adds the SHA-256 hash of each inline script
of the theme to ``script-src``, page by page, since Material's inline scripts depend on the
page's depth. Only scripts outside the page's own content are hashed: a script that a page's
content holds (which no macro writes) is never allowed.

The policy:

- scripts: files from this site, and the theme's own inline scripts by hash; no ``eval``, no
  inline event handlers (``onclick=`` and the like are refused by a hash-only ``script-src``);
- Vega evaluates its expressions with its CSP-safe interpreter (the ``vega-interpreter``
  package, served from the site, :func:`classic_interpreter`), not with ``new Function``;
- styles: style sheets from this site; ``style=`` attributes are allowed (token colours, KaTeX
  and Vega layout use them; an attribute cannot run script), ``<style>`` elements are not;
- images and fonts from this site or ``data:`` URLs (Material's icons); fetches, workers,
  forms and ``<base>`` only to this site; no plugins (``object-src 'none'``).
"""

from __future__ import annotations

import base64
import hashlib
import re

#: The policy without the hashes of the theme's inline scripts (added per page).
DIRECTIVES: list[tuple[str, str]] = [
    ("default-src", "'self'"),
    ("script-src", "'self'"),
    ("style-src", "'self'"),
    ("style-src-attr", "'unsafe-inline'"),
    ("img-src", "'self' data:"),
    ("font-src", "'self' data:"),
    ("connect-src", "'self'"),
    ("worker-src", "'self'"),
    ("object-src", "'none'"),
    ("base-uri", "'self'"),
    ("form-action", "'self'"),
]

META_START = '<meta http-equiv="Content-Security-Policy" content="'

_SCRIPT = re.compile(r"<script\b(?P<attrs>[^>]*)>(?P<body>.*?)</script\s*>", re.S | re.I)
_TYPE = re.compile(r"""\btype\s*=\s*["']?([^"'\s>]*)""", re.I)
#: Script types a browser runs; any other type (application/json: Material's config) is data.
_EXECUTABLE = {"", "text/javascript", "application/javascript", "module"}


def policy(script_hashes: list[str] | tuple[str, ...] = ()) -> str:
    """The policy, with ``'sha256-...'`` sources added to script-src."""
    parts = []
    for name, value in DIRECTIVES:
        if name == "script-src" and script_hashes:
            value = " ".join([value, *sorted(set(script_hashes))])
        parts.append(f"{name} {value}")
    return "; ".join(parts)


def script_hash(body: str) -> str:
    """The CSP source for an inline script with this exact text."""
    return "'sha256-" + base64.b64encode(hashlib.sha256(body.encode("utf-8")).digest()).decode("ascii") + "'"


def theme_script_hashes(html: str, content: str | None) -> list[str]:
    """Hashes of the executable inline scripts of ``html`` outside the page's ``content``."""
    outside = html.replace(content, "", 1) if content else html
    hashes = []
    for match in _SCRIPT.finditer(outside):
        attrs = match.group("attrs")
        if re.search(r"\bsrc\s*=", attrs, re.I):
            continue
        kind = _TYPE.search(attrs)
        if (kind.group(1).lower() if kind else "") not in _EXECUTABLE:
            continue
        hashes.append(script_hash(match.group("body")))
    return sorted(set(hashes))


class MissingPolicy(ValueError):
    """A page without the policy's meta tag (the theme override was not used)."""


def apply(html: str, content: str | None) -> str:
    """``html`` with the hashes of its theme scripts in its policy's script-src."""
    start = html.find(META_START)
    head_end = html.find("</head>")
    if start < 0 or (0 <= head_end < start):
        raise MissingPolicy("no Content-Security-Policy meta tag in <head>")
    value_start = start + len(META_START)
    value_end = html.index('"', value_start)
    return html[:value_start] + policy(theme_script_hashes(html, content)) + html[value_end:]


# ---------------------------------------------------------------------------------------------
# vega-interpreter as a classic script
# ---------------------------------------------------------------------------------------------

INTERPRETER_IMPORT = "import { ascending, isString, DisallowedObjectProperties } from 'vega-util';"
INTERPRETER_EXPORT = "export { expression as expressionInterpreter };"


def classic_interpreter(module_source: str, version: str) -> str:
    """vega-interpreter's ES module as a classic script defining ``window.vegaInterpreter``.

    The package ships only an ES module that imports three helpers from vega-util; vega's own
    bundle exports them on ``window.vega``. Raises ValueError when the module's import or
    export line is not the one this conversion knows (another version of the package).
    """
    lines = module_source.splitlines()
    if module_source.count(INTERPRETER_IMPORT) != 1 or module_source.count(INTERPRETER_EXPORT) != 1 \
            or any(line.startswith(("import ", "export ")) for line in lines
                   if line not in (INTERPRETER_IMPORT, INTERPRETER_EXPORT)):
        raise ValueError("vega-interpreter's module does not have the one import and one export this build converts")
    body = module_source.replace(INTERPRETER_IMPORT, "").replace(INTERPRETER_EXPORT, "")
    body = re.sub(r"^//# sourceMappingURL=.*$", "", body, flags=re.M)
    return (f"/* vega-interpreter {version} (BSD-3-Clause, https://github.com/vega/vega), converted by the UNIPO "
            "build from an ES module to a classic script. */\n"
            "(function () {\n"
            "  \"use strict\";\n"
            "  var ascending = window.vega.ascending, isString = window.vega.isString,\n"
            "    DisallowedObjectProperties = window.vega.DisallowedObjectProperties;\n"
            f"{body}\n"
            "  window.vegaInterpreter = { expressionInterpreter: expression };\n"
            "})();\n")
