"""The base of every input model."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Base of every input model: frozen, no unknown fields, docstrings as descriptions.

    Every number must be finite: ``inf`` and ``nan`` are refused ("Input should be a finite
    number") wherever a float is read, so a missing cap is written by leaving the field out.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )
