"""Stub of flash_attn.utils.distributed (see flash_attn/__init__.py): names only, no behaviour."""

from flash_attn import _stub

all_gather = _stub("utils.distributed.all_gather")
