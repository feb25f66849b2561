"""Deprecated: 0.1.0's ``unipo_build.importers.prime_rl``, now ``unipo_build.trainers.prime_rl.importer``.

The old name is an alias of the new module (``sys.modules`` maps it there), so what it holds, and anything
patched on it, is the new module's; importing it warns. It goes in the release after 0.2.0 (CHANGELOG.md,
Moved).
"""

import importlib
import sys
import warnings

NEW = "unipo_build.trainers.prime_rl.importer"

warnings.warn(f"unipo_build.importers.prime_rl moved to {NEW} in unipo 0.2.0 and goes in the next release: "
              f"import from {NEW}", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module(NEW)
