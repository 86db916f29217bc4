"""Resource quantities (`500m`, `4Gi`, `1e3`) as exact fractions, summed and written back in a canonical form.

A PodGroup's minResources is a sum of pod requests; the apiserver stores a custom resource's quantities as given,
so the operator must write the same string for the same amount every time, or it would see a change on every
reconcile.
"""

from __future__ import annotations

import re
from fractions import Fraction

_BINARY = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5, "Ei": 1024**6}
_DECIMAL = {"n": Fraction(1, 10**9), "u": Fraction(1, 10**6), "m": Fraction(1, 1000), "": Fraction(1),
            "k": Fraction(10**3), "M": Fraction(10**6), "G": Fraction(10**9), "T": Fraction(10**12),
            "P": Fraction(10**15), "E": Fraction(10**18)}
_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))(?:(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE])|[eE]([+-]?\d+))?$")


class QuantityError(ValueError):
    pass


def parse_quantity(value: object) -> Fraction:
    """A quantity as the apiserver accepts it (a number, or a string with an optional suffix or exponent)."""
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        return Fraction(str(value))
    match = _QUANTITY.match(str(value).strip())
    if match is None:
        raise QuantityError(f"{value!r} is not a quantity")
    number, suffix, exponent = match.groups()
    amount = Fraction(number)
    if exponent is not None:
        return amount * Fraction(10) ** int(exponent)
    if suffix in _BINARY:
        return amount * _BINARY[suffix]
    return amount * _DECIMAL[suffix or ""]


def format_quantity(amount: Fraction) -> str:
    """Whole amounts from a million up with the largest binary suffix that divides them (4Gi), else the largest
    decimal one (2G), else plain (8, 1024); fractions in milli-units, rounded up as the apiserver rounds (1500m)."""
    if amount.denominator != 1:
        millis = -((-amount * 1000) // 1)  # ceiling
        return f"{millis}m" if millis % 1000 else str(millis // 1000)
    whole = int(amount)
    if abs(whole) < 10**6:
        return str(whole)
    for suffix, factor in reversed(list(_BINARY.items())):
        if whole % factor == 0:
            return f"{whole // factor}{suffix}"
    for suffix in ("E", "P", "T", "G", "M"):
        factor = int(_DECIMAL[suffix])
        if whole % factor == 0:
            return f"{whole // factor}{suffix}"
    return str(whole)
