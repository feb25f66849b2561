"""Text contrast of 4.5:1 and better in both schemes (issue 47 item 6), computed from the palette and the site's
CSS: the colours text is drawn in (the palette's text roles, Material's lighter ink as unipo.css sets it, the dark
scheme's links and code colours) against every background text sits on (the page, a code block's grey, a panel's
tint, Material's slate page and code). WCAG 2 relative luminance (site/palette.py _contrast). The browser test
tests/browser/test_reader.py test_text_meets_four_and_a_half_to_one reads the same on rendered pages."""

from __future__ import annotations

import colorsys
import re
from pathlib import Path

import pytest

from unipo_build.site import palette as P

CSS = (Path(__file__).resolve().parents[1] / "overrides" / "assets" / "unipo.css").read_text(encoding="utf-8")


def hsl(hue: float, saturation: float, lightness: float) -> str:
    r, g, b = colorsys.hls_to_rgb(hue / 360, lightness, saturation)
    return "#%02x%02x%02x" % tuple(round(x * 255) for x in (r, g, b))


def over(colour: str, alpha: float, background: str) -> str:
    """``colour`` at ``alpha`` over ``background``, as the browser composes it."""
    return "#" + "".join("%02x" % round(int(colour[i:i + 2], 16) * alpha + int(background[i:i + 2], 16) * (1 - alpha))
                         for i in (1, 3, 5))


#: Where text sits. Light: the page, Material's code block grey, the Explainer's and admonitions' tints (the
#: palest blue of a note, the grey of a table's header). Dark (Material's slate, hue 225): the page, a code span.
LIGHT = {"page": "#ffffff", "code": "#f5f5f5", "tint": "#eef0fc", "header": "#f0f0f0"}
DARK = {"page": hsl(225, 0.15, 0.14), "code": hsl(225, 0.15, 0.18)}


def declared(selector_start: str, name: str) -> str:
    """The value unipo.css gives the custom property ``name`` in the rule whose selector starts so."""
    for selector, body in re.findall(r"([^{}]+)\{([^{}]*)\}", re.sub(r"/\*.*?\*/", "", CSS, flags=re.S)):
        if selector.strip().startswith(selector_start):
            found = re.search(rf"{re.escape(name)}:\s*([^;]+);", body)
            if found:
                return found.group(1).strip()
    raise AssertionError(f"unipo.css sets no {name} under {selector_start}")


def test_the_slate_page_is_materials():
    assert DARK["page"] == "#1e2129"  # as tests/test_palette.py has it


def test_the_lighter_ink_reads_on_every_light_background():
    value = declared('[data-md-color-scheme="default"]', "--md-default-fg-color--light")
    assert re.fullmatch(r"#000000[0-9a-f]{2}", value), value
    alpha = int(value[-2:], 16) / 255
    for where, background in LIGHT.items():
        assert P._contrast(over("#000000", alpha, background), background) >= 4.5, (where, alpha)
    # Material's own 54% black did not on a code block's grey (the ratio the issue measured)
    assert P._contrast(over("#000000", 0.54, LIGHT["code"]), LIGHT["code"]) < 4.5


@pytest.mark.parametrize("name", ["--md-typeset-a-color", "--md-code-hl-number-color", "--md-code-hl-constant-color"])
def test_links_and_code_read_on_the_slate_page_and_its_code(name):
    colour = declared('[data-md-color-scheme="slate"]', name)
    for where, background in DARK.items():
        assert P._contrast(colour, background) >= 4.5, (name, colour, where)


def test_materials_dark_links_fell_short_on_code():
    """The reason for the override: Material's indigo link on a slate code span is 4.1:1."""
    assert P._contrast("#5488e8", DARK["code"]) < 4.5


def test_outlined_buttons_write_in_the_link_colour_on_slate():
    """Material's outlined button (.md-button) writes in the primary indigo, #4051b5: 2.35:1 on the slate page."""
    assert P._contrast("#4051b5", DARK["page"]) < 3
    assert re.search(r'\[data-md-color-scheme="slate"\] \.md-typeset \.md-button:not\(\.md-button--primary\) \{\s*'
                     r'color: var\(--md-typeset-a-color\);', CSS)


@pytest.mark.parametrize("role", ["pos-text", "neg-text", "moment", "ink"])
def test_the_palettes_text_roles_read_in_both_schemes(role):
    light, dark = P.ROLES[role]
    for where, background in LIGHT.items():
        assert P._contrast(light, background) >= 4.5, (role, where)
    for where, background in DARK.items():
        assert P._contrast(dark, background) >= 4.5, (role, where)


def test_metric_colours_read_as_text_in_both_schemes():
    """A metric's colour is dark enough on light pages and light enough on dark ones to carry text (a chip, a
    caption), not only a line at 3:1 (tests/test_palette.py)."""
    for name, (light, dark) in P.METRIC_PALETTE.items():
        assert min(P._contrast(light, bg) for bg in LIGHT.values()) >= 4.5, name
        assert min(P._contrast(dark, bg) for bg in DARK.values()) >= 4.5, name
