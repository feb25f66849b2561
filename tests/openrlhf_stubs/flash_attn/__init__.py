"""Import-time stand-in for flash-attn, for OpenRLHF's CPU-only parity tests.

OpenRLHF 0.11.2 imports flash_attn (through openrlhf.models.ring_attn_utils) and vllm
(through openrlhf.trainer.ray) when its modules are imported, although the functions the
parity tests call (the policy loss, the KL estimators, the advantage paths) never use
them. Both packages need CUDA to build, so tests/openrlhf_support.py appends this
directory to sys.path: after site-packages, so a real install always wins. The stubs
carry the names OpenRLHF takes from them (plus ``__version__`` and a ``STUB`` marker) and
nothing else; every callable raises RuntimeError.
There is deliberately no flash_attn.ops: openrlhf.models.utils.log_probs_from_logits
catches the ImportError of flash_attn.ops.triton.cross_entropy and falls back to torch.
The files are plain files so that they can also be put on a Ray worker's PYTHONPATH.
"""

# A version below every release: version-gated checks (transformers' is_flash_attn_*, which
# import the package for its __version__ when there is no dist-info) read the stub as unusable.
__version__ = "0.0.0+unipo.stub"
STUB = True


def _stub(name):
    def fn(*args, **kwargs):
        raise RuntimeError(f"flash_attn.{name} is a test stub: OpenRLHF's GPU path does not run in these tests")

    fn.__name__ = name.rsplit(".", 1)[-1]
    fn.__qualname__ = fn.__name__
    return fn

