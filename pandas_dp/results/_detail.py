"""The algorithm output (``detail``) of a result, typed for the methods that read it."""

from __future__ import annotations

from typing import TypeVar

__all__ = ["required_detail"]

T = TypeVar("T")


def required_detail(result: object, detail: T | None) -> T:
    """``detail`` when the result was built with it; ``AttributeError`` otherwise.

    Releases always build their results with the algorithm's output; a result
    made by hand without it has no such attribute to read (the same
    ``AttributeError`` as reading a field of ``None``, with a clearer message).
    """
    if detail is None:
        raise AttributeError(f"{type(result).__name__} was built without its algorithm output (detail=None), "
                             f"which this attribute reads.")
    return detail
