"""An import's notes: what the importer derived, approximated or skipped, counted, joined into the run header's
notes text (:meth:`Notes.text`), and given back whole from that text (:func:`split_notes`, what ``unipo import``
prints). ``trainers.common`` re-exports every name."""

from __future__ import annotations


class Notes:
    """Derivation notes, each counted, in the order first seen. :meth:`text` joins them with '; ', so a note's own
    clauses are joined with ', ' unless they sit in brackets (:func:`one_note`): :func:`split_notes` gives the notes
    back whole from a run header's text (``unipo import`` prints them so)."""

    def __init__(self) -> None:
        self._counts: dict[str, int] = {}

    def add(self, message: str, count: int = 1) -> None:
        message = one_note(message)
        self._counts[message] = self._counts.get(message, 0) + count

    def once(self, message: str) -> None:
        """A rule that applies throughout: noted once, not counted."""
        self._counts[one_note(message)] = 1

    def lines(self) -> list[str]:
        return [m if n == 1 else f"{m} [{n} times]" for m, n in self._counts.items()]

    def text(self, prefix: str) -> str:
        lines = self.lines()
        return prefix + ("" if not lines else NOTES_LEAD + "; ".join(lines) + ".")


NOTES_LEAD = " Derived or changed on import: "


def _top_level(text: str) -> list[int]:
    """Where '; ' stands outside every bracket of ``text``."""
    depth, out = 0, []
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth = max(0, depth - 1)
        elif c == ";" and depth == 0 and text[i + 1:i + 2] == " ":
            out.append(i)
    return out


def one_note(message: str) -> str:
    """A note's clauses joined with ', ' where it had '; ' outside brackets: '; ' separates the notes."""
    for i in reversed(_top_level(message)):
        message = message[:i] + "," + message[i + 1:]
    return message


def split_notes(notes: str | None) -> list[str]:
    """The import's notes of a run header's notes text (:meth:`Notes.text`), each whole, without the closing full
    stop; none where the header has no import notes."""
    parts = (notes or "").split(NOTES_LEAD, 1)
    if len(parts) < 2:
        return []
    text, out, start = parts[1].rstrip(), [], 0
    text = text[:-1] if text.endswith(".") else text
    for i in _top_level(text) + [len(text)]:
        out.append(text[start:i].strip())
        start = i + 2
    return [n for n in out if n]
