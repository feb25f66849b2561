"""Deprecated: 0.1.0's ``unipo_build.macros``, now ``unipo_build.site.macros``.

The mkdocs-macros module: mkdocs.yml's macros plugin takes ``modules: [unipo_build.site.macros]``. The old
name is an alias of the new module (``sys.modules`` maps it there), so what it holds, and anything patched on
it, is the new module's; importing it warns. It goes in the release after 0.2.0 (CHANGELOG.md, Moved).
"""

import importlib
import sys
import warnings

NEW = "unipo_build.site.macros"

warnings.warn(f"unipo_build.macros moved to {NEW} in unipo 0.2.0 and goes in the next release: "
              f"in mkdocs.yml, `modules: [{NEW}]`", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module(NEW)
