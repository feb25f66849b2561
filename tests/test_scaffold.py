"""Adding an algorithm: `unipo new-algorithm` and its templates (tests/test_guides.py walks the
whole guide), and the two algorithms added this way (GSPO and the DAPO + Dr. GRPO hybrid) against
hand-worked numbers.
"""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import jinja2
import numpy as np
import pytest
import yaml

from unipo_build.core import components as C
from unipo_build.site import macros
from unipo_build.core import objective as O
from unipo_build.cli.scaffold import MARK, ScaffoldError, TEMPLATES, scaffold, todo_markers
from unipo_build.core.specs import OPTIONAL_SLOTS, SLOTS, lineage, load_spec, load_specs, resolve
from unipo_build.core.project import spec_dir
from unipo_build.core.registry import REGISTRY

from cli_helpers import unipo

SPEC_DIR = spec_dir()


@pytest.fixture
def project(tmp_path):
    """A project root holding a copy of the shipped specs (the scaffold writes into it)."""
    (tmp_path / "data").mkdir()
    shutil.copytree(SPEC_DIR, tmp_path / "data" / "algorithms")
    return tmp_path


# ---------------------------------------------------------------------------
# unipo new-algorithm
# ---------------------------------------------------------------------------

def test_scaffold_writes_a_valid_spec_and_a_chapter(project):
    result = unipo("new-algorithm", "my_po", "--base", "dapo", cwd=project)
    assert result.returncode == 0, result.stderr
    spec_path = project / "data" / "algorithms" / "my_po.yaml"
    chapter = project / "docs" / "course" / "algorithms" / "my_po.md"
    assert f"wrote {Path('data/algorithms/my_po.yaml')}" in result.stdout
    spec = load_spec(spec_path)  # validates as written
    base = load_spec(SPEC_DIR / "dapo.yaml")
    assert spec.id == "my_po" and spec.predecessor == "dapo"
    assert {s: (spec.components[s].kind, spec.params(s)) for s in SLOTS} == \
        {s: (base.components[s].kind, base.params(s)) for s in SLOTS}
    assert spec.defaults == base.defaults
    # every text a reader sees is marked for the author, and quotes the base's
    for text in [spec.full_name, spec.summary, spec.changed, spec.paper.title, spec.paper.authors] + \
            [spec.components[s].explanation for s in SLOTS if spec.components[s].kind != OPTIONAL_SLOTS.get(s)]:
        assert text.startswith(MARK), text
    assert "DAPO's text: Clip-higher" in spec.components["clip"].explanation
    # a directory of specs with it still validates (its predecessor exists)
    assert set(load_specs(project / "data" / "algorithms")) >= {"my_po", "dapo"}
    text = spec_path.read_text()
    # the kinds, as a comment: a line per slot, every registered kind of it by name
    line = next(l for l in text.splitlines() if l.startswith("#   aggregation "))
    assert line.split(None, 2)[2].split(", ") == sorted(REGISTRY["aggregation"])
    assert {"constant_normalizer", "seq_mean_token_mean", "micro_token_mean"} <= set(REGISTRY["aggregation"])
    page = chapter.read_text()
    for call in ('objective_card("my_po")', 'compare_selector("dapo", "my_po")', 'training_explorer("my_po")',
                 'step_inspector("my_po", moment="clipped_high")', 'run_card("my_po")'):
        assert "{{ " + call + " }}" in page
    assert todo_markers(chapter) and todo_markers(spec_path)
    reference = project / "docs" / "reference" / "algorithms" / "my_po.md"
    assert '{{ spec_reference("my_po") }}' in reference.read_text() and not todo_markers(reference)
    # what to add to mkdocs.yml's nav, exactly
    assert "- MY PO: course/algorithms/my_po.md" in result.stdout and "- reference/algorithms/my_po.md" in result.stdout


def test_scaffold_never_overwrites(project):
    spec_path = project / "data" / "algorithms" / "my_po.yaml"
    chapter = project / "docs" / "course" / "algorithms" / "my_po.md"
    chapter.parent.mkdir(parents=True)
    chapter.write_text("my own chapter")
    result = unipo("new-algorithm", "my_po", cwd=project)
    assert result.returncode == 1 and "already exists; nothing was written" in result.stderr
    assert not spec_path.exists() and chapter.read_text() == "my own chapter"
    assert not (project / "docs" / "reference").exists()
    result = unipo("new-algorithm", "grpo", cwd=project)  # an existing spec
    assert result.returncode == 1 and "grpo.yaml already exists" in result.stderr
    assert (project / "data" / "algorithms" / "grpo.yaml").read_bytes() == (SPEC_DIR / "grpo.yaml").read_bytes()


@pytest.mark.parametrize("name, base, message", [
    ("My-PO", "grpo", "an algorithm id is lower-case letters"),
    ("9po", "grpo", "an algorithm id is lower-case letters"),
    ("my_po", "trpo", "--base trpo: no"),
])
def test_scaffold_refuses_bad_names_and_bases(project, name, base, message):
    with pytest.raises(ScaffoldError, match=re.escape(message)):
        scaffold(name, base=base, root=project)
    assert not (project / "docs").exists()


def test_scaffold_outside_a_project(tmp_path):
    result = unipo("new-algorithm", "my_po", cwd=tmp_path)
    assert result.returncode == 1 and "run from the repository root or pass --root" in result.stderr


def _registered_macros() -> set[str]:
    names: set[str] = set()

    class Env:
        conf = {"extra": {"unipo_runs": "data/runs"}, "docs_dir": "docs", "site_dir": "site",
                "use_directory_urls": True}
        variables: dict = {}
        page = None

        def macro(self, fn=None, name=None):
            if fn is None:
                return lambda f: self.macro(f, name)
            names.add(name or fn.__name__)
            return fn

        def filter(self, fn):
            return fn

    macros.define_env(Env())
    return names


def test_chapter_template_uses_registered_macros_only():
    """The template parses with the site's Jinja settings and calls only macros the site defines."""
    text = (TEMPLATES / "chapter.md").read_text()
    env = jinja2.Environment(comment_start_string="{##", comment_end_string="##}")
    env.parse(text)
    called = set(re.findall(r"\{\{\s*(\w+)\(", text))
    assert called >= {"objective_card", "compare_selector", "training_explorer", "step_inspector", "run_card"}
    assert called <= _registered_macros()
    moments = re.findall(r'moment="(\w+)"', text)
    from unipo_build.core.moments import MOMENT_NAMES
    assert moments and set(moments) <= set(MOMENT_NAMES)


def test_every_list_of_moments_names_each_moment_the_code_finds():
    """The template, the views reference and the contributing guide list the teaching moments by
    name: each list holds exactly the moments of unipo_build/core/moments.py."""
    from unipo_build.core.moments import MOMENT_NAMES
    root = TEMPLATES.parents[2]  # unipo_build/cli/templates: the repository is three up
    for path in (TEMPLATES / "chapter.md", root / "docs/reference/views.md", root / "docs/guides/contribute.md"):
        text = path.read_text()
        start = re.search(r"all_correct_group`?, `?all_wrong_group", text).start()
        listed = set(re.findall(r"\b[a-z]+(?:_[a-z]+)+\b", text[start:text.index("shared_prefix_group", start) + len("shared_prefix_group")]))
        assert listed == set(MOMENT_NAMES), f"{path}: {sorted(listed ^ set(MOMENT_NAMES))}"


@pytest.mark.specs
def test_shipped_specs_carry_no_scaffold_marks():
    chapters = sorted((SPEC_DIR.parent.parent / "docs" / "course" / "algorithms").glob("*.md"))
    for path in sorted(SPEC_DIR.glob("*.yaml")) + chapters:
        assert todo_markers(path) == [], f"{path}: {MARK} left on lines {todo_markers(path)}"


def test_rewriting_every_marked_text_leaves_no_mark(project):
    """The marks sit on the texts an author rewrites, nowhere else: not in the header comment they keep."""
    spec_path, _, _ = scaffold("my_po", base="grpo", root=project)
    text = spec_path.read_text()
    header = text[:text.index("\nid: ") + 1]
    assert header.startswith("# my_po: an algorithm spec") and MARK not in header

    def rewrite(value):
        if isinstance(value, dict):
            return {k: rewrite(v) for k, v in value.items()}
        return "Written by the author." if isinstance(value, str) and value.startswith(MARK) else value

    spec_path.write_text(header + yaml.safe_dump(rewrite(yaml.safe_load(text)), sort_keys=False))
    assert todo_markers(spec_path) == []
    assert load_spec(spec_path).summary == "Written by the author."


# ---------------------------------------------------------------------------
# GSPO and the DAPO + Dr. GRPO hybrid
# ---------------------------------------------------------------------------

def test_new_specs_load_and_sit_in_the_lineage():
    specs = load_specs()
    assert {"gspo", "dapo_dr"} <= set(specs)
    order = [s.id for s in lineage(specs)]
    assert order.index("grpo") < order.index("gspo")
    assert order.index("dr_grpo") < order.index("dapo_dr")
    gspo, hybrid = specs["gspo"], specs["dapo_dr"]
    assert gspo.paper.arxiv == "2507.18071" and gspo.predecessor == "grpo"
    assert (gspo.components["ratio"].kind, gspo.components["clip"].kind) == ("sequence", "asymmetric")
    assert gspo.params("clip") == {"eps_low": 3e-4, "eps_high": 4e-4}
    assert gspo.components["kl"].kind == "none"
    # The hybrid: Dr. GRPO in every slot but the filter, which is DAPO's.
    dr, dapo = specs["dr_grpo"], specs["dapo"]
    for slot in SLOTS:
        source = dapo if slot == "filter" else dr
        assert (hybrid.components[slot].kind, hybrid.params(slot)) == \
            (source.components[slot].kind, source.params(slot)), slot


def test_gspo_objective_hand_worked():
    """Two responses of one group (G = 2), rewards (1, 0).

    Advantages (group z-score, n-1 std = 1/sqrt(2), eps 1e-6): +-0.5 / (0.70710678 + 1e-6).
    Response 0, 2 tokens, logp - old = (0.0009, 0.0003): s_0 = exp(mean) = exp(0.0006) =
    1.00060018 > 1 + 4e-4 with A > 0: clipped high, every token's objective 1.0004 A, side +1.
    Response 1, 3 tokens, logp - old = (-0.0001, -0.0002, 0): s_1 = exp(-0.0001) = 0.99990000
    > 1 - 3e-4: not clipped, objective s_1 x (-A), side 0.
    Weights 1 / (G |o_i|): 1/4 and 1/6, so J = (1.0004 A - 0.99990000 A) / 2 = A x 0.00025000.
    """
    cfg = resolve(load_spec(SPEC_DIR / "gspo.yaml"), max_new_tokens=8)
    mask = np.array([[1, 1, 0], [1, 1, 1]], dtype=np.float64)
    old = np.array([[-0.5, -1.0, 0.0], [-0.25, -2.0, -0.75]])
    logp = old + np.array([[0.0009, 0.0003, 0.0], [-0.0001, -0.0002, 0.0]])
    adv, _ = O.compute_advantages(cfg, rewards=np.array([1.0, 0.0]), group_size=2, mask=mask)
    a = 0.5 / (math.sqrt(0.5) + 1e-6)
    assert adv[:, 0] == pytest.approx([a, -a], abs=1e-12)
    terms = O.token_terms(cfg, logp=logp, old_logp=old, advantages=adv, mask=mask)
    s0, s1 = math.exp(0.0006), math.exp(-0.0001)
    # the sequence ratio is the geometric mean of the token ratios
    assert s0 == pytest.approx(math.sqrt(math.exp(0.0009) * math.exp(0.0003)), rel=1e-14)
    assert terms.ratio[0, :2] == pytest.approx([s0, s0], rel=1e-12) and terms.ratio[0, 2] == 0
    assert terms.ratio[1] == pytest.approx([s1] * 3, rel=1e-12)
    assert terms.clip_side.tolist() == [[1, 1, 0], [0, 0, 0]]  # clipped per sequence: all tokens or none
    assert terms.objective[0, :2] == pytest.approx([1.0004 * a] * 2, rel=1e-12)
    assert terms.objective[1] == pytest.approx([-s1 * a] * 3, rel=1e-12)
    J, w = O.step_objective(cfg, terms.objective, mask)
    assert w.tolist() == [[0.25, 0.25, 0.0], [1 / 6, 1 / 6, 1 / 6]]
    assert float(J) == pytest.approx(a * (1.0004 - s1) / 2, rel=1e-9)
    assert float(J) == pytest.approx(a * 0.00025000, rel=1e-4)


def test_gspo_clipped_sequence_has_no_gradient():
    """On torch: a clipped response contributes no gradient to any of its tokens; an unclipped one does."""
    torch = pytest.importorskip("torch")
    cfg = resolve(load_spec(SPEC_DIR / "gspo.yaml"), max_new_tokens=8)
    mask = torch.tensor([[1.0, 1.0], [1.0, 1.0]], dtype=torch.float64)
    old = torch.tensor([[-0.5, -1.0], [-0.25, -2.0]], dtype=torch.float64)
    logp = (old + torch.tensor([[0.001, 0.001], [-0.0001, 0.0]], dtype=torch.float64)).requires_grad_()
    adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0]], dtype=torch.float64)
    terms = O.token_terms(cfg, logp=logp, old_logp=old, advantages=adv, mask=mask)
    J, _ = O.step_objective(cfg, terms.objective, mask)
    J.backward()
    assert logp.grad[0].abs().max().item() == 0.0
    assert logp.grad[1].abs().min().item() > 0.0


def test_hybrid_objective_hand_worked():
    """Four groups of two, L = 10. correct = (1,0), (1,1), (0,0), (0,1): dynamic sampling keeps
    groups 0 and 3 (0 < #correct < 2). Advantages r - mean(r): (+0.5, -0.5), (-0.5, +0.5), no std.
    Lengths of the kept responses 2, 3, 1, 4; on-policy (ratio 1), no KL: objective = A per token.
    Weights 1 / (N L) = 1 / (4 x 10) = 0.025 for every token, whatever its response's length;
    J = 0.025 x (0.5 x 2 - 0.5 x 3 - 0.5 x 1 + 0.5 x 4) = 0.025 x 1.0 = 0.025.
    """
    cfg = resolve(load_spec(SPEC_DIR / "dapo_dr.yaml"), max_new_tokens=10)
    assert cfg.param("aggregation", "normalizer") == 10
    correct = np.array([[1, 0], [1, 1], [0, 0], [0, 1]])
    keep = O.keep_groups(cfg, correct)
    assert keep.tolist() == [True, False, False, True]
    rewards = correct[keep].astype(np.float64).reshape(-1)
    lengths = np.array([2, 3, 1, 4])
    mask = (np.arange(4)[None, :] < lengths[:, None]).astype(np.float64)
    adv, _ = O.compute_advantages(cfg, rewards=rewards, group_size=2, mask=mask)
    assert adv[:, 0].tolist() == [0.5, -0.5, -0.5, 0.5]
    logp = np.full((4, 4), -0.7) * mask
    terms = O.token_terms(cfg, logp=logp, old_logp=logp, advantages=adv, mask=mask)
    J, w = O.step_objective(cfg, terms.objective, mask)
    assert np.allclose(w[mask == 1], 0.025, rtol=0, atol=1e-15) and np.all(w[mask == 0] == 0)
    assert float(J) == pytest.approx(0.025, abs=1e-15)
    # DAPO's token mean would weigh each token 1/10 instead, and Dr. GRPO's would keep every group:
    assert O.aggregation_weights("token_mean", mask)[0, 0] == pytest.approx(0.1)
