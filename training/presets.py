"""The size presets live in the core (``unipo_build.core.presets``): the site shows them too (the
OpenRLHF commands), and the site never imports ``training``. Re-exported here for the trainer."""

from unipo_build.core.presets import (
    GPU,
    SMOLLM2,
    ChatPreset,
    PRESETS,
    TINY,
    ModelPreset,
    Preset,
    RLPreset,
    SFTPreset,
    get_preset,
    with_overrides,
)

__all__ = ["GPU", "SMOLLM2", "ChatPreset", "PRESETS", "TINY", "ModelPreset", "Preset", "RLPreset", "SFTPreset", "get_preset", "with_overrides"]
