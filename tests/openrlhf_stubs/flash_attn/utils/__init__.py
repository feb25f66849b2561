"""Stub of flash_attn.utils (see flash_attn/__init__.py)."""
