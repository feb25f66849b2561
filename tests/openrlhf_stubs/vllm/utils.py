"""Stub of vllm.utils (see vllm/__init__.py)."""


def random_uuid(*args, **kwargs):
    raise RuntimeError("vllm.utils.random_uuid is a test stub: OpenRLHF's GPU path does not run in these tests")
