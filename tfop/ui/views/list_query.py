"""What the job list is asked for, as its URL says it (?namespace, state, q, sort, order, page, per), and the URLs
of the list sorted, paged or filtered otherwise: the links of its column headers and its pager."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import urlencode

from tfop.ui.views.job_list import DEFAULT_SORT, SortKey, sort_key

# A column's first click: names in alphabetical order, times and counts biggest (newest, longest) first.
ASCENDING_FIRST = ("name", "namespace", "state")
MAX_WORDS = 200


@dataclass(frozen=True)
class ListQuery:
    namespace: str = ""
    state: str = ""
    words: str = ""
    sort: SortKey = DEFAULT_SORT
    descending: bool = True
    page: str = ""  # as asked; page_of keeps it within the pages there are
    per: str = ""

    @classmethod
    def parse(cls, params: Mapping[str, str]) -> ListQuery:
        sort = sort_key(params.get("sort"))
        order = params.get("order", "")
        descending = order == "desc" if order in ("asc", "desc") else sort not in ASCENDING_FIRST
        return cls(params.get("namespace", ""), params.get("state", ""), params.get("q", "")[:MAX_WORDS].strip(),
                   sort, descending, params.get("page", ""), params.get("per", ""))

    def params(self) -> dict[str, str]:
        """Only what differs from the defaults, so that the plain list's URL is `/`."""
        default_descending = self.sort not in ASCENDING_FIRST
        found = {"namespace": self.namespace, "state": self.state, "q": self.words,
                 "sort": self.sort if self.sort != DEFAULT_SORT else "",
                 "order": ("desc" if self.descending else "asc") if self.descending != default_descending else "",
                 "page": self.page if self.page not in ("", "1") else "", "per": self.per}
        return {key: value for key, value in found.items() if value}

    def url(self, base: str = "/", **changes: Any) -> str:
        query = urlencode(replace(self, **changes).params())
        return f"{base}?{query}" if query else base

    def sorted_by(self, key: SortKey) -> str:
        """The header's link: the same column again flips the order; another starts at its first order (page 1)."""
        if key == self.sort:
            return self.url(descending=not self.descending, page="")
        return self.url(sort=key, descending=key not in ASCENDING_FIRST, page="")

    def aria_sort(self, key: SortKey) -> str:
        if key != self.sort:
            return "none"
        return "descending" if self.descending else "ascending"




def empty_list_text(query: ListQuery, visible: set[str] | None, any_seen: bool) -> str:
    """Why the list has no row: the filter, the namespace asked for, or no job the user may see (`visible`: the
    namespaces whose jobs they may list, None for all; `any_seen`: whether they may see any job)."""
    if any_seen and (query.state or query.words or query.namespace):
        return "No TFJob matches the filter."
    if query.namespace:
        return f"There are no TFJobs in namespace {query.namespace}."
    if visible is None:
        return "There are no TFJobs in the cluster."
    return "There are no TFJobs in the namespaces you may list."
