"""Stub of vllm.inputs (see vllm/__init__.py)."""

from vllm import _StubClass


class TokensPrompt(_StubClass):
    pass
