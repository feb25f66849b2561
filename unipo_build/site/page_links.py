"""Links from the page being built to another page of the site, as MkDocs computes them.

Site-wide (the reference's tables, the guides and the chapters' bands link to pages by their docs-relative
path), so below every folder of site/.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

#: A link maker: a page's docs-relative path -> its URL from the current page, or None (no such page).
Link = Callable[[str], "str | None"]


def no_link(target: str) -> None:
    """The link maker outside a build: no page links anywhere."""
    return None


def page_linker(env: Any) -> Link:
    """Links from the current page to another page of the site, if that page exists."""
    page = getattr(env, "page", None)
    conf = getattr(env, "conf", None)
    if page is None or conf is None:
        return no_link
    docs_dir = Path(conf["docs_dir"])

    def link(target: str) -> str | None:
        if not (docs_dir / target).is_file():
            return None
        return relative_url(page.file.src_uri, target, conf["docs_dir"], conf["site_dir"],
                            conf.get("use_directory_urls", True))

    return link


def relative_url(source: str, target: str, docs_dir: str, site_dir: str, use_directory_urls: bool) -> str:
    """The URL of page ``target`` as seen from page ``source`` (docs-relative .md paths), as
    MkDocs computes it."""
    from mkdocs.structure.files import File

    target_file = File(target, docs_dir, site_dir, use_directory_urls)
    source_file = File(source, docs_dir, site_dir, use_directory_urls)
    return target_file.url_relative_to(source_file)
