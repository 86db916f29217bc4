"""A live view as pieces, and what changed between two renders of it: a live update sends only the pieces whose
HTML changed, the ids of those gone, and the new order of a container whose pieces moved (live.js applies it), so
that a list of 50 rows where one job moved sends one row, and what the reader selected in another stays selected.

A piece is one element with an id: `key`. A piece whose `parent` is "" is always on the page (a count, a pager,
a section) and is only ever replaced; one with a parent (a row) may come, go and move within that element."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Piece:
    parent: str  # the id of the element that holds it, "" for a fixed piece
    key: str  # the id of its own element
    html: str


@dataclass(frozen=True)
class Patch:
    changed: tuple[Piece, ...] = ()  # new, or with other HTML than before
    removed: tuple[str, ...] = ()
    order: dict[str, tuple[str, ...]] = field(default_factory=dict)  # a parent's keys, where they moved or changed

    def __bool__(self) -> bool:
        return bool(self.changed or self.removed or self.order)

    def json(self, now: str) -> str:
        """As live.js reads it; `now` is the server's clock, which the browser writes relative times against."""
        body = {"now": now, "set": [[piece.parent, piece.key, piece.html] for piece in self.changed],
                "remove": list(self.removed), "order": {key: list(keys) for key, keys in self.order.items()}}
        return json.dumps(body, separators=(",", ":"))


def _children(pieces: Sequence[Piece]) -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for piece in pieces:
        if piece.parent:
            found.setdefault(piece.parent, []).append(piece.key)
    return {parent: tuple(keys) for parent, keys in found.items()}


def patch(before: Sequence[Piece], after: Sequence[Piece]) -> Patch:
    """What turns the page that shows `before` into `after` (empty when nothing changed)."""
    old = {piece.key: piece for piece in before}
    new_keys = {piece.key for piece in after}
    changed = tuple(piece for piece in after if old.get(piece.key) != piece)
    removed = tuple(piece.key for piece in before if piece.key not in new_keys)
    was, now = _children(before), _children(after)
    order = {parent: keys for parent, keys in now.items() if was.get(parent) != keys}
    return Patch(changed, removed, order)
