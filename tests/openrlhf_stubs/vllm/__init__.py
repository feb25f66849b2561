"""Import-time stand-in for vLLM, for OpenRLHF's CPU-only parity tests.

See flash_attn/__init__.py next to this package for why these stubs exist. OpenRLHF
0.11.2 imports at module level ``vllm``, ``vllm.inputs.TokensPrompt`` and
``vllm.utils.random_uuid`` (openrlhf.trainer.ray.vllm_engine, reached from the experience
maker) and ``vllm.SamplingParams`` (openrlhf.trainer.ppo_utils.samples_generator);
everything else it takes from vLLM is looked up inside functions that these tests never
call. Every callable here raises RuntimeError.
"""

# A version below every release: version-gated checks that import the package for its
# __version__ when there is no dist-info (as transformers' do) read the stub as unusable.
__version__ = "0.0.0+unipo.stub"
STUB = True


def _raise(name):
    raise RuntimeError(f"vllm.{name} is a test stub: OpenRLHF's GPU path does not run in these tests")


class _StubClass:
    """Base of the stub classes: constructing one (or calling from_* on it) raises."""

    def __init__(self, *args, **kwargs):
        _raise(type(self).__name__)

    @classmethod
    def from_engine_args(cls, *args, **kwargs):
        _raise(f"{cls.__name__}.from_engine_args")


class SamplingParams(_StubClass):
    pass


class AsyncEngineArgs(_StubClass):
    pass


class AsyncLLMEngine(_StubClass):
    pass


class LLM(_StubClass):
    pass
