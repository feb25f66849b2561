"""The component registry with the shipped kinds in it: where the project looks a kind up.

Every name of ``unipo_build.core.registry_base``, which holds what a kind is made of (:class:`Kind`,
:func:`register`, the explainer data's builders, the trainer settings: ``TRAINERS``, ``TRAINER_SOURCES``,
``setting``, ``trainer_settings``) and says so in its docstring; importing this module also registers the
shipped kinds, each once: ``core/kinds_reward.py`` (advantage, filter, shaping), ``core/kinds_loss.py`` (ratio,
clip, KL, aggregation), ``core/kinds_accumulation.py`` (a token mean per micro-batch), ``core/kinds_mask.py``
(a clip that reads the token's probability: DPPO's mask) and ``core/kinds_correction.py``; then each shipped kind's
translations for the trainers' code (``core/kinds_openrlhf.py``, ``core/kinds_import.py``; ``core/registry_trainers.py`` says how they are read). The kinds modules import ``registry_base``, never this
module, so no import runs in a circle (tests/test_layers.py refuses cycles).
"""

from __future__ import annotations

from unipo_build.core.registry_base import *  # noqa: F401,F403  (the registry: every public name)
from unipo_build.core.registry_base import _Params  # noqa: F401  (a kind's parameters derive from it)
from unipo_build.core.registry_trainers import *  # noqa: F401,F403  (what the trainers' code reads of a kind)

# The shipped kinds register themselves on import.
from unipo_build.core import kinds_correction, kinds_loss, kinds_reward  # noqa: E402,F401
from unipo_build.core import kinds_accumulation  # noqa: E402,F401  (after kinds_loss: listed after its aggregations)
from unipo_build.core import kinds_mask  # noqa: E402,F401  (after kinds_loss: listed after its clips)
from unipo_build.core import kinds_openrlhf  # noqa: E402,F401  (the shipped kinds' OpenRLHF flags, once they are registered)
from unipo_build.core import kinds_import  # noqa: E402,F401  (their parameters in verl's and TRL's configs)
from unipo_build.core import kinds_playground  # noqa: E402,F401  (the playgrounds' words for them)
from unipo_build.core.kinds_reward import ZScoreParams  # noqa: E402,F401  (a test-only kind reuses its parameters)
