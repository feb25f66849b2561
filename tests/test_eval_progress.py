"""`unipo train` shows progress during held-out evaluations (issue 30 item 5: 12 of 38 s of a short run printed
nothing): training.evaluate's bar counts the problems decoded, on a terminal, and stays off with --no-progress
(transformers' progress switch, which training.model.show_progress_bars sets for the run)."""

from __future__ import annotations

import io

import pytest

pytest.importorskip("torch", reason="the training extra is not installed")

from training.evaluate import evaluate  # noqa: E402
from training.model import build_model, show_progress_bars  # noqa: E402
from training.task import generate_task, load_task  # noqa: E402
from training.tokenizer import task_corpus, train_tokenizer  # noqa: E402


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    out = tmp_path_factory.mktemp("task")
    generate_task(out, seed=5, n_train=300, n_eval=30)
    train, evals = load_task(out / "train.jsonl"), load_task(out / "eval.jsonl")
    tok = train_tokenizer(task_corpus(train))
    return build_model("tiny", len(tok), seed=0).eval(), tok, evals


@pytest.mark.parametrize("progress", [True, False])
def test_an_evaluation_shows_its_progress_on_a_terminal(setup, monkeypatch, progress):
    model, tok, evals = setup
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    show_progress_bars(progress)
    try:
        result = evaluate(model, tok, evals, n=12, max_new_tokens=4, batch_size=5)
    finally:
        show_progress_bars(True)
    shown = screen.getvalue()
    if progress:
        assert "evaluation" in shown and "/24" in shown  # 12 problems, greedy and sampled
        assert "24/24" in shown or "20/24" in shown
    else:
        assert shown == ""
    assert result["n"] == 12


def test_no_bar_where_the_output_is_not_a_terminal(setup, monkeypatch, capsys):
    model, tok, evals = setup
    evaluate(model, tok, evals, n=6, max_new_tokens=4, batch_size=5)
    assert capsys.readouterr().err == ""
