"""Deprecated: 0.1.0's ``unipo_build.importers``, now ``unipo_build.trainers`` (one folder per trainer).

The names 0.1.0's package held are ``unipo_build.trainers``' own objects here; importing it warns. Its
submodules keep their 0.1.0 names (``unipo_build.importers.trl``, ``.verl``, ``.common``, ...), each an alias
of the module that holds it now, which is why this package is a package of its own and not an alias of
``unipo_build.trainers`` (whose ``trl`` is a folder, not the importer). It goes in the release after 0.2.0
(CHANGELOG.md, Moved).
"""

import warnings

warnings.warn("unipo_build.importers moved to unipo_build.trainers in unipo 0.2.0 and goes in the next release: "
              "import from unipo_build.trainers (import_log, FORMATS), each importer from "
              "unipo_build.trainers.<trainer>.importer", DeprecationWarning, stacklevel=2)

from unipo_build.trainers import (  # noqa: E402  (0.1.0's names, after the warning)
    FORMATS,
    OUT_NAMED,
    LogErrors,
    OutputError,
    RunHeader,
    discard,
    import_log,
    import_openrlhf,
    import_prime_rl,
    import_trl,
    import_unipo,
    import_verl,
    publish,
    run_id_from,
    same_id_beside,
    staging_dir,
    validation_errors,
)

__all__ = ["FORMATS", "OUT_NAMED", "LogErrors", "OutputError", "RunHeader", "discard", "import_log",
           "import_openrlhf", "import_prime_rl", "import_trl", "import_unipo", "import_verl", "publish",
           "run_id_from", "same_id_beside", "staging_dir", "validation_errors"]
