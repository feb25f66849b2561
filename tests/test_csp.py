"""The Content-Security-Policy: what unipo_build.site.csp computes, and every page of the built site carries it."""

from __future__ import annotations

import base64
import hashlib
import re
from html.parser import HTMLParser

import pytest

from unipo_build.site import csp

PAGE = ('<html><head><meta charset="utf-8">' + csp.META_START + csp.policy() + '">'
        '<script>var a = 1;</script><script id="__config" type="application/json">{"x": 1}</script>'
        '<script src="x.js"></script></head><body><article>{content}</article>'
        '<script>\nvar b = "</scr" + "ipt>";\n</script></body></html>')


def _sha(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def test_policy_allows_no_eval_no_inline_script_and_no_other_host():
    policy = dict(part.split(" ", 1) for part in csp.policy().split("; "))
    assert policy["default-src"] == "'self'" and policy["script-src"] == "'self'"
    assert policy["object-src"] == "'none'" and policy["base-uri"] == "'self'"
    assert policy["style-src"] == "'self'"  # no <style> elements; style= attributes only
    assert "unsafe" not in policy["script-src"] and "unsafe-eval" not in csp.policy()
    assert all("http" not in value and "*" not in value for value in policy.values())


def test_hashes_cover_the_theme_scripts_and_never_the_page_content():
    content = '<script>alert(1)</script><img src=x onerror="alert(2)">'
    page = PAGE.replace("{content}", content)
    hashes = csp.theme_script_hashes(page, content)
    assert hashes == sorted([_sha("var a = 1;"), _sha('\nvar b = "</scr" + "ipt>";\n')])
    assert _sha("alert(1)") not in hashes
    applied = csp.apply(page, content)
    meta = re.search(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)"', applied).group(1)
    assert meta == csp.policy(hashes)
    assert applied.replace(meta, "") == page.replace(csp.policy(), "")  # nothing else changed


def test_a_page_without_the_meta_tag_is_an_error():
    with pytest.raises(csp.MissingPolicy):
        csp.apply("<html><head></head><body>" + csp.META_START + '"></body></html>', None)


def test_the_interpreter_conversion_refuses_a_module_it_does_not_know():
    module = f"{csp.INTERPRETER_IMPORT}\nfunction expression() {{}}\n{csp.INTERPRETER_EXPORT}\n"
    script = csp.classic_interpreter(module, "9.9.9")
    assert "import " not in script and "export " not in script
    assert "window.vegaInterpreter = { expressionInterpreter: expression };" in script
    with pytest.raises(ValueError):
        csp.classic_interpreter(module + "import { x } from 'vega-util';\n", "9.9.9")
    with pytest.raises(ValueError):
        csp.classic_interpreter(module.replace(csp.INTERPRETER_EXPORT, "export default expression;"), "9.9.9")


class _Scan(HTMLParser):
    def __init__(self):
        super().__init__()
        self.meta_at, self.first_script_at, self.handlers, self.inline = None, None, [], []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "meta" and attrs.get("http-equiv") == "Content-Security-Policy":
            self.meta_at = self.getpos()
            self.policy = attrs["content"]
        if tag == "script" and self.first_script_at is None:
            self.first_script_at = self.getpos()
        if tag == "script" and "src" not in attrs and attrs.get("type", "") in ("", "text/javascript"):
            self._in_script = True
        self.handlers += [f"<{tag} {name}>" for name in attrs if name.startswith("on")]

    def handle_data(self, data):
        if self._in_script:
            self.inline.append(data)

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False


def test_every_page_carries_the_policy_before_its_first_script(built_site):
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) > 20
    for page in pages:
        scan = _Scan()
        scan.feed(page.read_text(encoding="utf-8"))
        where = page.relative_to(built_site)
        assert scan.meta_at is not None, where
        assert scan.first_script_at is None or scan.meta_at < scan.first_script_at, where
        assert scan.handlers == [], where  # no inline event handlers anywhere
        hashes = re.findall(r"'sha256-[^']+'", scan.policy)
        assert sorted(hashes) == sorted({_sha(body) for body in scan.inline}), where


def test_vega_interpreter_is_served_as_a_classic_script(built_site):
    script = (built_site / "assets" / "vendor" / "vega-interpreter" / "vega-interpreter.js").read_text(encoding="utf-8")
    assert "window.vegaInterpreter = { expressionInterpreter: expression };" in script
    assert not re.search(r"^(import|export) ", script, re.M)
    assert (built_site / "assets" / "vendor" / "vega-interpreter" / "LICENSE").is_file()
