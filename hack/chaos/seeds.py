"""The seeds the short form in `make test` replays (test/integration/test_chaos.py): a fixed one that overlaps
faults from its first round, and every seed a run found a bug with, kept once the bug is fixed
(docs/operating/chaos.md#keeping-a-failing-seed)."""

from __future__ import annotations

SHORT_FORM_SEEDS = (11,)
REGRESSION_SEEDS: tuple[int, ...] = ()
