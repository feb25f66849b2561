"""The trainer's measurements of its policy outside the loop: the held-out evaluations (start, periodic,
end, each problem's result kept), the start policy's accuracy on the RL pool (the memorisation check) and
the length probe. A mixin of :class:`training.rl.Trainer`, which holds the policy, the rows and the options
these read; split from training/rl.py along that seam (the loop there, what measures it here)."""

from __future__ import annotations

from unipo_build.core.schema import EvalRecord, LengthProbe

from .evaluate import evaluate
from .generation import sample_groups
from .llama_decode import release_static_decoder


class Evaluations:
    """Held-out evaluations and probes of the trainer's policy (``self``: a :class:`training.rl.Trainer`)."""

    def _evaluate(self, phase: str) -> dict:
        """Held-out accuracy, greedy and sampled, with each problem's result kept.

        Start and end use the whole held-out set; periodic evaluations use its first
        ``eval_periodic_n`` rows, the same problems every time, so any two evaluations can be
        compared problem by problem on the rows they share.
        """
        n = len(self.eval_rows) if phase != "periodic" else min(self.rl.eval_periodic_n, len(self.eval_rows))
        release_static_decoder(self.policy)  # its cache would sit beside the evaluation's (llama_decode)
        result = evaluate(self.policy, self.tokenizer, self.eval_rows, n=n, max_new_tokens=self.rl.max_new_tokens,
                          greedy=self.rl.eval_greedy, sampled=self.rl.eval_sampled,
                          temperature=self.rl.temperature, seed=self.opts.seed + 7, **self._chat_eval())
        self.policy.train()
        self.writer.eval(EvalRecord(step=self.step, phase=phase, n=result["n"],
                                    accuracy_greedy=result.get("accuracy_greedy"),
                                    accuracy_sampled=result.get("accuracy_sampled"),
                                    mean_length=result.get("mean_length"),
                                    mean_length_sampled=result.get("mean_length_sampled"),
                                    temperature=self.rl.temperature, problems=f"eval rows 1-{result['n']}",
                                    correct_greedy=result.get("correct_greedy"),
                                    correct_sampled=result.get("correct_sampled")))
        return result

    def _chat_eval(self) -> dict:
        """evaluate()'s arguments for a chat preset (system prompt, reward rule, batch size); none otherwise."""
        if not self.chat:
            return {}
        return {"system": self.system_prompt, "rule": self.reward_rule, "batch_size": self.chat.eval_batch_size}

    def _pool_accuracy(self) -> dict | None:
        """The start policy's sampled accuracy on the RL pool's first prompts, measured like the held-out
        one (as many prompts, one sample each, the same temperature; another seed): the memorisation
        check's measure of "the prompts RL trains on", with the noise of two equal-sized means."""
        if not self.rl.eval_sampled:
            return None
        result = evaluate(self.policy, self.tokenizer, self.train_rows, n=min(len(self.eval_rows), len(self.train_rows)),
                          max_new_tokens=self.rl.max_new_tokens, greedy=False, sampled=True,
                          temperature=self.rl.temperature, seed=self.opts.seed + 13, **self._chat_eval())
        self.policy.train()
        return result

    def _length_probe(self) -> LengthProbe:
        """Response lengths of the starting policy: G samples for each of the first held-out prompts."""
        prompts = [r["prompt"] for r in self.eval_rows[:self.rl.probe_prompts]]
        batch = sample_groups(self.policy, self.tokenizer, prompts, self.rl.group_size, self.rl.max_new_tokens,
                              self.rl.temperature, seed=self.opts.seed + 11, autocast=self.autocast,
                              static=self.static_decode, **self._chat_prompts())
        self.policy.train()
        answers = [r["answer"] for r in self.eval_rows[:self.rl.probe_prompts]]
        _, comps = self._score(batch, answers)
        lengths = batch.response_lengths.float()
        budget = self.rl.max_new_tokens
        return LengthProbe(
            prompts=len(prompts), group_size=self.rl.group_size, budget=budget,
            median_length=float(lengths.median()), mean_length=float(lengths.mean()),
            within_group_sd=float(lengths.view(-1, self.rl.group_size).std(-1, correction=0).mean()),
            overlong_band=float((lengths > 0.8 * budget).float().mean()),
            truncated=float(batch.truncated.float().mean()), accuracy=float(comps["correct"].mean()))
