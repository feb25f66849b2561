"""Deprecated: 0.1.0's ``unipo_build.trl_tap``, now ``unipo_build.trainers.trl.tap``.

The TRL token tap: a training script's import line becomes ``from unipo_build.trainers.trl.tap import
TrlTokenTap``. The old name is an alias of the new module (``sys.modules`` maps it there), so what it holds,
and anything patched on it, is the new module's; importing it warns. It goes in the release after 0.2.0
(CHANGELOG.md, Moved).
"""

import importlib
import sys
import warnings

NEW = "unipo_build.trainers.trl.tap"

warnings.warn(f"unipo_build.trl_tap moved to {NEW} in unipo 0.2.0 and goes in the next release: "
              f"write `from {NEW} import TrlTokenTap`", DeprecationWarning, stacklevel=2)
sys.modules[__name__] = importlib.import_module(NEW)
