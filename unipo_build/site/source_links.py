"""One hop from a formula to its code: the file and line of a component's function, as a link.

The registry names each kind's implementing function (``Kind.fn``, in ``core/components.py``); its
file and first line are read with ``inspect`` at build time, so a link never goes stale. The
link points into the repository named by mkdocs.yml ``repo_url`` at the ref ``extra.unipo_repo_ref``
(or ``$UNIPO_REPO_REF``; default ``main``); without a ``repo_url`` the place is shown as text.
"""

from __future__ import annotations

import inspect
import os
from dataclasses import dataclass
from typing import Any, Callable

from unipo_build.site.render import escape_text


@dataclass(frozen=True)
class Repo:
    url: str
    ref: str = "main"

    def blob(self, path: str, line: int) -> str:
        return f"{self.url.rstrip('/')}/blob/{self.ref}/{path}#L{line}"


def repo_from(conf: Any) -> Repo | None:
    """The repository of an MkDocs config (``repo_url``), or None."""
    url = conf.get("repo_url") if hasattr(conf, "get") else None
    if not url:
        return None
    extra = (conf.get("extra") or {}) if hasattr(conf, "get") else {}
    ref = os.environ.get("UNIPO_REPO_REF") or extra.get("unipo_repo_ref") or "main"
    return Repo(str(url), str(ref))


def source_of(fn: Callable) -> tuple[str, int]:
    """(path in the repository, first line) of a function of the project's package."""
    path = fn.__module__.replace(".", "/") + ".py"
    return path, inspect.getsourcelines(fn)[1]


def source_html(fn: Callable | None, repo: Repo | None) -> str:
    """``core/components.py:42`` linking to the function (plain text without a repository)."""
    if fn is None:
        return ""
    path, line = source_of(fn)
    label = f"{path.rsplit('/', 1)[-1]}:{line}"
    title = f"{fn.__name__} in {path}, line {line}"
    if repo is None:
        return f'<code class="unipo-source" title="{escape_text(title)}">{escape_text(label)}</code>'
    return (f'<a class="unipo-source" href="{escape_text(repo.blob(path, line))}" title="{escape_text(title)}">'
            f"<code>{escape_text(label)}</code></a>")
