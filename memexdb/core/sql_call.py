"""The type of the generated SQL call text (memexdb/<domain>/calls.py, written by
tools/generate_sql_calls.py from the SQL catalog).

A `SqlCall` is the statement that calls one memex.* function with every parameter named
(`p_agent_id => %(agent_id)s`, each value's key is the parameter's name without `p_`), so
it runs as it is when the values name every key. `given(values)` is the same call naming
only the parameters the values have a key for (and every parameter without a default):
a parameter with a SQL default that the caller does not pass takes that default, so a new
optional parameter of a SQL function needs nothing in Python until a caller passes it.
`Session.fetch` runs `given(values)`. `arguments(request, **values)` takes the values from
a request model: every field named as a parameter goes as it is, so a new optional field
of a request reaches the SQL parameter of its name with no edit of the caller either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

_ARGUMENT = re.compile(r"p_\w+ => %\((\w+)\)s(?:::[\w.]+(?:\[\])?)*")


class SqlCall(str):
    """A generated `select ... memex.f(p_a => %(a)s, ...)` statement (see the module);
    `defaults`: how many of its parameters, the last ones, have a SQL default."""

    function: str
    defaults: frozenset[str]
    _prefix: str
    _arguments: tuple[tuple[str, str], ...]
    _given: dict[frozenset[str], str]

    def __new__(cls, text: str, *, defaults: int = 0) -> SqlCall:
        self = super().__new__(cls, text)
        head = re.search(r"memex\.(\w+)\(", text)
        if head is None:
            raise ValueError(f"not a memex.* call: {text!r}")
        self.function = head.group(1)
        self._prefix = text[: head.end()].strip()
        self._arguments = tuple((m.group(1), m.group(0)) for m in _ARGUMENT.finditer(text))
        if not 0 <= defaults <= len(self._arguments):
            raise ValueError(f"memex.{self.function} has not {defaults} parameters")
        # (SQL gives a default to the last parameters only: those after one with a default)
        self.defaults = frozenset(
            key for key, _ in self._arguments[len(self._arguments) - defaults :]
        )
        self._given = {}
        return self

    def given(self, values: Mapping[str, object] | None) -> str:
        """This call naming only the parameters `values` has a key for, and those with no
        default (their missing value is an error of the caller, as psycopg reports); a key
        that names no parameter is a ValueError."""
        unknown = set(values or ()) - {key for key, _ in self._arguments}
        if unknown:  # a misspelt key would silently leave its parameter at its default
            raise ValueError(f"memex.{self.function} has no parameter {sorted(unknown)}")
        keys = frozenset(values or ()) & self.defaults
        if keys == self.defaults:
            return str(self)
        text = self._given.get(keys)
        if text is None:
            named = [
                argument
                for key, argument in self._arguments
                if key not in self.defaults or key in keys
            ]
            text = self._prefix + ", ".join(named) + ")"
            self._given[keys] = text
        return text

    def arguments(self, request: BaseModel, **values: Any) -> dict[str, Any]:
        """`values`, and each field of `request` that names a parameter of this call and
        that `values` leaves out, as its Python value (`model_dump`): a field whose SQL
        value is another (an enum as text, an object as JSON) is given in `values`."""
        keys = {key for key, _ in self._arguments} - set(values)
        return {**request.model_dump(include=keys), **values}
