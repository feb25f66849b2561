"""Makes `import torch` fail in the process that loads it, as on a machine without torch: the site
build must need numpy only (only training needs torch). tests/site_build.py puts this folder on
PYTHONPATH for every test build of the site; tests/test_install.py installs it beside a non-editable
install through a .pth file, both act only where UNIPO_TEST_NO_TORCH=1."""

from __future__ import annotations

import os
import sys


class _NoTorch:
    """A meta-path finder that refuses torch and its submodules (array_api_compat and friends look in
    sys.modules first, so they see no torch, as without it)."""

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r} (torch is blocked: a site build must not need it)",
                                      name=name)
        return None


if os.environ.get("UNIPO_TEST_NO_TORCH") == "1" and not any(isinstance(f, _NoTorch) for f in sys.meta_path):
    sys.meta_path.insert(0, _NoTorch())
