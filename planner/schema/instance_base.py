"""The base of every input model."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    ValidationInfo,
)
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

#: Core-schema types that read a number (``true`` and ``false`` are refused where they do).
NUMBER_SCHEMAS = frozenset({"int", "float"})


def refuse_bool(value: Any) -> Any:
    """``value`` unchanged, unless it is a boolean: TOML's ``true`` is no number.

    Python's ``bool`` is an ``int``, so pydantic's lax mode would read ``true`` as 1 (a spray
    entropy, a transport's ACK count) and ``false`` as 0 without a word.
    """
    if isinstance(value, bool):
        raise PydanticCustomError("bool_not_number", "Input should be a number, not true or false")
    return value


def _reads_number(schema: dict[str, Any]) -> bool:
    kind = schema.get("type")
    if kind in NUMBER_SCHEMAS:
        return True
    # Literal[0, 1, 2, 3] (a ZeRO stage) matches True as 1 as well.
    return kind == "literal" and any(
        type(v) is int or type(v) is float for v in schema.get("expected", ())
    )


def strict_numbers(schema: Any) -> Any:
    """A copy of a core schema where every number refuses booleans first (:func:`refuse_bool`).

    At any depth: list items, table values, optional fields and unions.
    """
    if isinstance(schema, list):
        return [strict_numbers(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: strict_numbers(v) for k, v in schema.items()}
    if _reads_number(schema):
        return core_schema.no_info_before_validator_function(refuse_bool, out)  # type: ignore[arg-type]
    return out


class Strict(BaseModel):
    """Base of every input model: frozen, no unknown fields, docstrings as descriptions.

    Every number must be finite: ``inf`` and ``nan`` are refused ("Input should be a finite
    number") wherever a float is read, so a missing cap is written by leaving the field out.
    Every number must be a number: ``true`` and ``false`` are refused wherever an integer or a
    float is read, items of lists and values of tables included (:func:`strict_numbers`).
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, use_attribute_docstrings=True, allow_inf_nan=False
    )

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: type[BaseModel], handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """The model's schema with booleans refused wherever a number is read."""
        return strict_numbers(handler(source))  # type: ignore[no-any-return]


def one_of(names: Sequence[str]) -> str:
    """``'a', 'b' or 'c'``: the names a field accepts, as pydantic lists a literal's."""
    quoted = [repr(n) for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def _known_family(value: str, info: ValidationInfo) -> str:
    """A family name the reader knows: the registry's names, handed in as the context."""
    names = (info.context or {}).get("families")
    if names is not None and value not in names:
        raise PydanticCustomError(
            "literal_error", "Input should be {expected}", {"expected": one_of(names)}
        )
    return value


#: A fabric family's name. The families are a registry above the schema
#: (``planner.families.FAMILIES``); whoever reads an instance hands their names in as the
#: validation context ``{"families": names}`` (``planner.loading.load_instance``), so this schema
#: lists none itself and a new family is one line in the registry. Without a context (an
#: instance built in code) the name is checked where the family is resolved.
Family = Annotated[str, Field(min_length=1, max_length=64), AfterValidator(_known_family)]
