"""Hostile inputs, generated from the schemas: every free-text field of a run and of a spec gets a
tagged payload, so a field added to a pydantic model is covered without touching this file.

The generator walks the JSON Schema of a model (``RunHeader``, ``StepRecord``, ``EvalRecord``,
``StepDetail``, ``AlgorithmSpec``) next to a valid document: a string without a pattern, enum or
format becomes a payload cut to the field's ``maxLength``; an object that keeps unknown fields
gets one more, holding a payload; a mapping gets one more key that is a payload; an optional
object that is null is built from its schema. Whatever the model then rejects (a key a spec must
not have, a parameter that must be a number) is put back as it was, location by location, so
the result is valid: the validator accepts it and the build must show it. Identifiers keep their
values here; :func:`identifier_cases` gives them payloads, which the validator must reject.

Each payload starts with its tag ``⟦h<n>⟧`` and names the tag inside its script, so a page can
be searched for where a payload landed and whether it came out as the literal text it was.
Besides, the first response with tokens of every token file gets :data:`BLANK_TOKENS` (an empty
token, a zero-width one, a lone line break), which the Step Inspector must keep clickable.
"""

from __future__ import annotations

import copy
import functools
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import yaml
from pydantic import BaseModel, ValidationError

from unipo_build.core import limits, runlog
from unipo_build.core.schema import EvalRecord, RunHeader, StepDetail, StepRecord
from unipo_build.core.specs import AlgorithmSpec

MARK = "data-unipo-marker"

#: Payload bodies; ``{tag}`` is replaced by the payload's tag. Every one is meant to be shown as
#: the text it is: none may run, add an element or attribute, or be read as Markdown, Jinja or TeX.
BODIES: dict[str, str] = {
    "html": '<img src=x {mark}="{tag}" onerror="alert(\'{tag}\')"><b>bold</b>',
    "attribute": '" {mark}="{tag}" onmouseover="alert(\'{tag}\')" autofocus onfocus="alert(\'{tag}\')" x="',
    "attribute1": "' {mark}='{tag}' onmouseenter='alert(1)' x='",
    "script": "</script><script>alert('{tag}')</script><script>",
    "template": '</template><img src=x {mark}="{tag}" onerror="alert(\'{tag}\')"><template>',
    "svg": "<svg onload=\"alert('{tag}')\"><a href=\"javascript:alert('{tag}')\">x</a></svg>",
    "markdown": "**bold {tag}** _em_ [link](javascript:alert('{tag}')) `code` <https://example.com> ![i](x.png)",
    "heading": "# heading {tag}\n\n- item\n\n!!! note\n    admonition",
    "jinja": "{{{{ 7*7 }}}} {{% raw %}} {{## comment ##}} {{{{ config }}}} {tag}",
    "katex": ("$\\href{{javascript:alert('{tag}')}}{{x}}$ \\(\\htmlData{{{mark}={tag}}}{{y}}\\) "
              "\\[\\includegraphics{{x.png}}\\] \\url{{javascript:alert(1)}} $$\\htmlClass{{unipo-slot}}{{z}}$$"),
    "url": "javascript:alert('{tag}')",
    "vega": "datum['{tag}'] + alert('{tag}') ${{alert(1)}} \" + alert('{tag}') + \" a.b[0]\\\\c",
    "bidi": "\u202e{tag} reversed \u2066isolated\u2069 \u200b\u200c\u200d\ufeff\u2028\u2029 end",
    "control": "\x07bell \x1b[31mansi\x1b[0m \x08back \x7fdel \x0bvt \x0cff {tag}",
    "nul": "nul\x00{tag}\x00",
    "placeholder": "UNIPOHTML0001Xdeadbeef {tag} UNIPOHTML",
}
#: Tokens with no visible character, put first in one response per token file.
BLANK_TOKENS = ("", "\u200b", "\n")
#: A payload as long as its field allows (the first one in each field).
HUGE = "huge"
KINDS = list(BODIES) + [HUGE]


@dataclass
class Payloads:
    """Hands out tagged payloads and remembers each one's text, kind and field."""

    texts: dict[str, str] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    _count: dict[str, int] = field(default_factory=dict)

    def make(self, path: str, limit: int | None = None, *, kind: str | None = None) -> str:
        """A payload for the field at ``path`` ("<run or spec>/<field path>"), at most ``limit`` long."""
        field_path = path.split("/", 1)[-1]  # counted across runs: one huge payload per field
        n = self._count.get(field_path, 0)
        self._count[field_path] = n + 1
        limit = min(limit or limits.TEXT_MAX, limits.DOC_MAX)
        # The first payload of each field is as long as the field allows; the rest cycle the kinds.
        kind = kind or (HUGE if n == 0 else list(BODIES)[(n + len(self.texts)) % len(BODIES)])
        tag = f"h{len(self.texts)}"
        head = f"\u27e6{tag}\u27e7"
        if kind == HUGE:
            text = head + "<huge>" + "x" * max(0, limit - len(head) - 6)
        else:
            text = head + BODIES[kind].format(tag=tag, mark=MARK)
        if len(text) > limit:
            return self.make(path, limit, kind="url") if kind != "url" else head[:limit]
        self.texts[tag] = text
        self.where[tag] = path
        self.kinds[tag] = kind
        return text

    def key(self, path: str) -> str:
        """A payload for a mapping key (names are at most NAME_MAX characters, never huge)."""
        n = self._count.get(path.split("/", 1)[-1], 0)
        kind = [k for k in KINDS if k not in (HUGE, "heading")][n % (len(KINDS) - 2)]
        return self.make(path, limits.NAME_MAX, kind=kind)


def _resolve(node: dict, defs: dict) -> dict:
    while "$ref" in node:
        node = defs[node["$ref"].split("/")[-1]]
    return node


def _example(node: dict, defs: dict, payloads: Payloads, path: str) -> Any:
    """A value for an absent field, from its schema (objects are built and filled)."""
    node = _resolve(node, defs)
    if "anyOf" in node:
        options = [o for o in node["anyOf"] if _resolve(o, defs).get("type") != "null"]
        return _example(options[0], defs, payloads, path) if options else None
    if "const" in node:
        return node["const"]
    if "enum" in node:
        return node["enum"][0]
    kind = node.get("type")
    if kind == "object":
        return fill(node, {}, defs, payloads, path)
    if kind == "array":
        return []
    if kind == "string":
        if node.get("format") == "date-time":
            return "2025-03-01T12:00:00Z"
        return None if "pattern" in node else payloads.make(path, node.get("maxLength"))
    if kind in ("number", "integer"):
        low = node.get("minimum", node.get("exclusiveMinimum", 0))
        value = max(low, 1) if kind == "integer" else max(low, 0.5)
        return min(value, node.get("maximum", value))
    if kind == "boolean":
        return False
    return None


def fill(node: dict, value: Any, defs: dict, payloads: Payloads, path: str) -> Any:
    """``value`` with every free-text place of schema ``node`` holding a payload."""
    node = _resolve(node, defs)
    if "anyOf" in node:
        options = [_resolve(o, defs) for o in node["anyOf"]]
        if value is None:
            return _example(node, defs, payloads, path)
        for option in options:
            if _matches(option, value):
                return fill(option, value, defs, payloads, path)
        return value
    kind = node.get("type")
    if kind == "string" and isinstance(value, str):
        if any(k in node for k in ("pattern", "enum", "const", "format")):
            return value
        return payloads.make(path, node.get("maxLength"))
    if kind == "array" and isinstance(value, list):
        items = node.get("items", {})
        return [fill(items, v, defs, payloads, f"{path}[]") for v in value]
    if kind == "object" and isinstance(value, dict):
        out = dict(value)
        for name, sub in node.get("properties", {}).items():
            if name in out or name in node.get("required", ()):
                out[name] = fill(sub, out.get(name), defs, payloads, f"{path}.{name}")
            elif _creatable(sub, defs):
                # An absent text or object is made (a number is not: it would change the run's math).
                created = _example(sub, defs, payloads, f"{path}.{name}")
                if created is not None:
                    out[name] = created
        extra = node.get("additionalProperties")
        if extra is True and "properties" in node:
            out["hostile_extra"] = payloads.make(f"{path}.(extra)")
        elif isinstance(extra, dict):
            for key in list(value):
                if key not in node.get("properties", {}):
                    out[key] = fill(extra, value[key], defs, payloads, f"{path}.*")
            out[payloads.key(f"{path}.(key)")] = _example(extra, defs, payloads, f"{path}.*") \
                if _resolve(extra, defs) else payloads.make(f"{path}.*")
        return out
    return value


def _creatable(node: dict, defs: dict) -> bool:
    node = _resolve(node, defs)
    options = [_resolve(o, defs) for o in node.get("anyOf", [node])]
    return any(o.get("type") in ("string", "object") and "pattern" not in o and "format" not in o for o in options)


def _changes(doc: Any, base: Any, loc: tuple = ()) -> list[tuple]:
    """Locations where ``doc`` differs from ``base``: added keys and changed leaves."""
    if isinstance(doc, dict) and isinstance(base, dict):
        found = []
        for key, value in doc.items():
            found += [loc + (key,)] if key not in base else _changes(value, base[key], loc + (key,))
        return found
    if isinstance(doc, list) and isinstance(base, list) and len(doc) == len(base):
        return [c for i, (a, b) in enumerate(zip(doc, base)) for c in _changes(a, b, loc + (i,))]
    return [] if doc == base else [loc]


def _set(doc: Any, loc: tuple, value: Any) -> None:
    _get(doc, loc[:-1])[loc[-1]] = copy.deepcopy(value)


def _greedy(model_check: Callable[[Any], None], doc: Any, base: Any) -> Any:
    """Apply the changes of ``doc`` to ``base`` one by one, keeping those that stay valid."""
    current = copy.deepcopy(base)
    for loc in _changes(doc, base):
        before = copy.deepcopy(current)
        try:
            _set(current, loc, _get(doc, loc))
            model_check(current)
        except (ValidationError, KeyError, IndexError, TypeError):
            current = before
    return current


def _matches(node: dict, value: Any) -> bool:
    kind = node.get("type")
    return {"string": isinstance(value, str), "array": isinstance(value, list), "object": isinstance(value, dict),
            "null": value is None, "boolean": isinstance(value, bool),
            "integer": isinstance(value, int) and not isinstance(value, bool),
            "number": isinstance(value, (int, float)) and not isinstance(value, bool)}.get(kind, "$ref" in node)


def _get(doc: Any, loc: tuple) -> Any:
    for part in loc:
        doc = doc[part]
    return doc


def _restore(doc: Any, base: Any, loc: tuple) -> None:
    """Put the value at ``loc`` (or its nearest existing parent) back as ``base`` has it."""
    for cut in range(len(loc), 0, -1):
        head, last = loc[:cut - 1], loc[cut - 1]
        try:
            parent, original = _get(doc, head), _get(base, head)
        except (KeyError, IndexError, TypeError):
            continue
        if isinstance(parent, dict) and isinstance(original, dict):
            if last in original:
                parent[last] = copy.deepcopy(original[last])
            else:
                parent.pop(last, None)
            return
        if isinstance(parent, list) and isinstance(original, list) and isinstance(last, int) and last < len(original):
            parent[last] = copy.deepcopy(original[last])
            return
    raise AssertionError(f"cannot restore {loc}")


def hostile(model: type[BaseModel], base: Any, payloads: Payloads, path: str,
            check: Callable[[Any], None] | None = None) -> Any:
    """A valid document of ``model`` with payloads in every place the model lets them be."""
    schema = model.model_json_schema(by_alias=True)
    doc = fill(schema, copy.deepcopy(base), schema.get("$defs", {}), payloads, path)
    for _ in range(200):
        try:
            (check or model.model_validate)(doc)
            return doc
        except ValidationError as err:
            if any(not e["loc"] for e in err.errors()):
                # A check across fields (an unknown component kind, a tooltip for a term the kind
                # lacks): keep the payloads one by one, as long as the document stays valid.
                return _greedy(check or model.model_validate, doc, base)
            for e in err.errors():
                _restore(doc, base, tuple(e["loc"]))
    raise AssertionError(f"{path}: could not make a valid hostile document")


# --------------------------------------------------------------------------- runs and specs


def hostile_run(src: Path, dest: Path, payloads: Payloads) -> None:
    """Copy the run in ``src`` to ``dest`` with payloads in every free-text field of every file."""
    name = src.name
    dest.mkdir(parents=True)
    header = json.loads((src / "header.json").read_text(encoding="utf-8"))
    doc = hostile(RunHeader, header, payloads, f"{name}/header")
    (dest / "header.json").write_text(json.dumps(doc, ensure_ascii=False) + "\n", encoding="utf-8")
    metric = payloads.key(f"{name}/steps.metrics.(key)")
    # the shipped runs' logs are gzipped (unipo publish): read through the run log's one reader of either form
    steps = runlog.read_log_text(src / "steps.jsonl").splitlines(keepends=True)
    with (dest / "steps.jsonl").open("w", encoding="utf-8") as out:
        for number, line in enumerate(steps):
            record = json.loads(line)
            record["metrics"][metric] = float(number % 7) / 7
            if number == 0:
                record = hostile(StepRecord, record, payloads, f"{name}/steps")
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    if runlog.has_log(src, "evals.jsonl"):
        lines = [json.loads(x) for x in runlog.read_log_text(src / "evals.jsonl").splitlines() if x.strip()]
        lines = [hostile(EvalRecord, r, payloads, f"{name}/evals") for r in lines]
        (dest / "evals.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines),
                                          encoding="utf-8")
    (dest / "tokens").mkdir()
    for token_file in runlog.token_paths(src):
        detail = json.loads(runlog.read_log_bytes(token_file))
        doc = hostile(StepDetail, detail, payloads, f"{name}/tokens")
        blank = [r for g in doc["prompts"] for r in g["responses"]
                 if r.get("tokens") and len(r["tokens"]["text"]) > len(BLANK_TOKENS)][:1]
        for response in blank:
            response["tokens"]["text"][:len(BLANK_TOKENS)] = list(BLANK_TOKENS)
        for group in doc["prompts"]:
            for response in group["responses"]:
                if response.get("tokens"):
                    response["text"] = "".join(response["tokens"]["text"])
        (dest / "tokens" / token_file.name.removesuffix(".gz")).write_text(json.dumps(doc, ensure_ascii=False) + "\n",
                                                                         encoding="utf-8")


def hostile_spec(src: Path, dest: Path, payloads: Payloads) -> None:
    """The spec in ``src`` with payloads in every free-text field, written to ``dest``."""
    from unipo_build.core.specs import load_spec

    base = yaml.safe_load(src.read_text(encoding="utf-8"))
    doc = hostile(AlgorithmSpec, base, payloads, f"spec {src.stem}/spec")
    dest.write_text(yaml.safe_dump(doc, allow_unicode=True, sort_keys=False, width=10**9), encoding="utf-8")
    load_spec(dest)  # what the build reads must load


IDENTIFIER_FIELDS = ("run_id", "algorithm", "preset")


def identifier_cases(payloads: Payloads) -> dict[str, str]:
    """A payload for each identifier of the run header, which the validator must refuse."""
    return {name: payloads.make(f"header.{name}", limits.NAME_MAX, kind="html") for name in IDENTIFIER_FIELDS}


# --------------------------------------------------------------------------- a project copy


PROJECT_PARTS = ("mkdocs.yml", "docs", "overrides", "unipo_build", "package.json", "data/algorithms", "data/suite.yaml")


def hostile_project(repo: Path, root: Path, payloads: Payloads) -> tuple[Path, Path]:
    """A copy of the project in ``root`` whose specs and runs are hostile; returns (project, runs).

    The copy carries the package too: the build finds the specs next to the package it runs
    (run it with PYTHONPATH=<project>), and nothing is written to the repository.
    """
    project = root / "project"
    for part in PROJECT_PARTS:
        source, target = repo / part, project / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copyfile(source, target)
    from unipo_build.core.specs import ablation_spec_paths

    specs = repo / "data" / "algorithms"
    for spec in sorted(specs.glob("*.yaml")) + ablation_spec_paths(specs):
        hostile_spec(spec, project / "data" / "algorithms" / spec.relative_to(specs), payloads)
    runs = root / "runs"
    for run in sorted(p for p in (repo / "data" / "runs").iterdir() if p.is_dir()):
        hostile_run(run, runs / run.name, payloads)
    return project, runs


# --------------------------------------------------------------------------- numbers at their bounds


def _extreme_number(node: dict, n: int) -> float:
    """The largest (even n) or smallest (odd n) float the schema node allows."""
    high = node.get("maximum", node.get("exclusiveMaximum", limits.MAX_MAGNITUDE))
    low = node.get("minimum", node.get("exclusiveMinimum", -limits.MAX_MAGNITUDE))
    if "exclusiveMaximum" in node:
        high = high - max(abs(high) * 1e-6, 1e-9)
    if "exclusiveMinimum" in node:
        low = low + max(abs(low) * 1e-6, 1e-9)
    return float(high if n % 2 == 0 else low)


def extremes(node: dict, value: Any, defs: dict, counter: list[int]) -> Any:
    """``value`` with every float that schema ``node`` describes moved to a bound (integers,
    which carry the run's structure, stay)."""
    node = _resolve(node, defs)
    if "anyOf" in node:
        for option in (_resolve(o, defs) for o in node["anyOf"]):
            if value is not None and _matches(option, value) and option.get("type") != "null":
                return extremes(option, value, defs, counter)
        return value
    kind = node.get("type")
    if kind == "number" and isinstance(value, float):
        counter[0] += 1
        return _extreme_number(node, counter[0])
    if kind == "array" and isinstance(value, list):
        return [extremes(node.get("items", {}), v, defs, counter) for v in value]
    if kind == "object" and isinstance(value, dict):
        out = dict(value)
        for name, sub in node.get("properties", {}).items():
            if name in out:
                out[name] = extremes(sub, out[name], defs, counter)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict):
            for key in out:
                if key not in node.get("properties", {}):
                    out[key] = extremes(extra, out[key], defs, counter)
        return out
    return value


@functools.cache
def _json_schema(model: type[BaseModel]) -> dict:
    """The model's JSON schema, made once per model (making it was half the time of extreme_document, which
    runs once per step line of every run); extremes only reads it."""
    return model.model_json_schema(by_alias=True)


def extreme_document(model: type[BaseModel], base: Any) -> Any:
    schema = _json_schema(model)
    doc = extremes(schema, copy.deepcopy(base), schema.get("$defs", {}), [0])
    for _ in range(50):
        try:
            model.model_validate(doc)
            return doc
        except ValidationError as err:
            for e in err.errors():
                _restore(doc, base, tuple(e["loc"]))
    raise AssertionError("could not make a valid document of extremes")


def extreme_run(src: Path, dest: Path) -> None:
    """Copy the run in ``src`` to ``dest`` with every float at the bounds its field allows."""
    dest.mkdir(parents=True)
    header = json.loads((src / "header.json").read_text(encoding="utf-8"))
    (dest / "header.json").write_text(json.dumps(extreme_document(RunHeader, header)) + "\n", encoding="utf-8")
    for name, model in (("steps.jsonl", StepRecord), ("evals.jsonl", EvalRecord)):
        if runlog.has_log(src, name):  # plain, or gzipped (a shipped run)
            # JSON lines end at "\n" only: a payload may hold other line breaks (U+2028, \x0b)
            lines = [json.loads(x) for x in runlog.read_log_text(src / name).split("\n") if x.strip()]
            (dest / name).write_text("".join(json.dumps(extreme_document(model, r)) + "\n" for r in lines),
                                     encoding="utf-8")
    (dest / "tokens").mkdir()
    for token_file in runlog.token_paths(src):
        detail = json.loads(runlog.read_log_bytes(token_file))
        (dest / "tokens" / token_file.name.removesuffix(".gz")).write_text(
            json.dumps(extreme_document(StepDetail, detail)) + "\n", encoding="utf-8")


def runs_at_bounds(runs: Path) -> None:
    """Every float of every run in ``runs`` moved to the bound its field allows, in place (extreme_run):
    the hostile site's runs carry their payloads and their numbers at the bounds together."""
    for run in sorted(p for p in runs.iterdir() if p.is_dir()):
        moved = run.with_name(run.name + ".at-bounds")
        extreme_run(run, moved)
        shutil.rmtree(run)
        moved.rename(run)


def _floats(value: Any) -> int:
    if isinstance(value, float):
        return 1
    if isinstance(value, dict):
        return sum(_floats(v) for v in value.values())
    if isinstance(value, list):
        return sum(_floats(v) for v in value)
    return 0


def floats_at_bounds(run: Path) -> tuple[int, list[str]]:
    """(how many floats the run's files hold, the files in which one is not at its bound): extreme_run
    made a run whose files this leaves unchanged."""
    docs = [("header.json", RunHeader, json.loads((run / "header.json").read_text(encoding="utf-8")))]
    docs += [(f"tokens/{p.name}", StepDetail, json.loads(p.read_text(encoding="utf-8")))
             for p in sorted((run / "tokens").glob("step_*.json"))]
    for name, model in (("steps.jsonl", StepRecord), ("evals.jsonl", EvalRecord)):
        if (run / name).exists():
            docs += [(f"{name}:{i + 1}", model, json.loads(line))
                     for i, line in enumerate((run / name).read_text(encoding="utf-8").split("\n")) if line.strip()]
    return sum(_floats(doc) for _, _, doc in docs), [name for name, model, doc in docs
                                                      if extreme_document(model, doc) != doc]
