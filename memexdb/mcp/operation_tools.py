"""MCP tools built from the operation table (memexdb.operation).

A tool's input schema comes from its operation's request model (one parameter per field,
with its type, bounds and description; `Tool.renames` gives a field another argument
name) and its output schema from the response model. The input schema declares
`additionalProperties: false`, as the request model refuses unknown arguments. A call is
validated once, as the request model in JSON mode (the arguments are JSON), by
MemexMCP.call_tool; the tenant resolver then decides whose memories it touches, and the
operation runs as the caller.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools import Tool as SdkTool
from mcp_types import CallToolResult, InputRequiredResult, ToolAnnotations
from pydantic import Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from memexdb.client import AsyncMemex
from memexdb.mcp.tenant import Caller, TenantResolver
from memexdb.operation import Operation, Tool


def _strip_examples(schema: Any) -> None:
    if isinstance(schema, dict):
        schema.pop("examples", None)
        for value in schema.values():
            _strip_examples(value)
    elif isinstance(schema, list):
        for value in schema:
            _strip_examples(value)


def _without_examples(info: FieldInfo) -> Callable[[dict[str, Any]], None]:
    # The request fields' examples are the OpenAPI document's, for /docs "Try it out"; a
    # model reading a tool's schema would copy them (the example tenant ids), so the tool
    # arguments go without them. The field's own schema additions stay.
    extra = info.json_schema_extra

    def described(schema: dict[str, Any]) -> None:
        if callable(extra):
            extra(schema)
        elif extra is not None:
            schema.update(extra)
        _strip_examples(schema)

    return described


def _parameters(operation: Operation[Any, Any], tool: Tool) -> list[inspect.Parameter]:
    argument_of = {field: argument for argument, field in tool.renames.items()}
    required: list[inspect.Parameter] = []
    optional: list[inspect.Parameter] = []
    for name, info in operation.request.model_fields.items():
        # the field's type with its constraints, validators and description
        described = Field(description=info.description, json_schema_extra=_without_examples(info))
        parts = (info.annotation, *info.metadata, described)
        annotation: Any = Annotated.__class_getitem__(parts)  # type: ignore[attr-defined]
        if info.is_required():
            default: Any = inspect.Parameter.empty
        elif info.default_factory is not None:
            default = info.default_factory()  # type: ignore[call-arg,unused-ignore]
        else:
            default = info.default
        parameter = inspect.Parameter(
            argument_of.get(name, name),
            inspect.Parameter.KEYWORD_ONLY,
            default=default if default is not PydanticUndefined else inspect.Parameter.empty,
            annotation=annotation,
        )
        (required if parameter.default is inspect.Parameter.empty else optional).append(parameter)
    return [*required, *optional]


def schema_function(operation: Operation[Any, Any]) -> Callable[..., Awaitable[Any]]:
    """A function whose signature is the tool's arguments and whose return annotation is
    its result: what the SDK lists (tools/list). Calls never reach it: MemexMCP.call_tool
    validates the arguments as the request model and runs the operation."""
    tool = operation.tool
    assert tool is not None

    async def described(**arguments: Any) -> Any:
        raise RuntimeError(f"{tool.name} is run by MemexMCP.call_tool")

    described.__name__ = tool.name
    described.__doc__ = tool.description
    described.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        _parameters(operation, tool), return_annotation=operation.tool_response()
    )
    return described


@dataclass(frozen=True)
class BoundTool:
    """An operation served as an MCP tool in one server."""

    operation: Operation[Any, Any]
    tool: Tool
    convert: Callable[[Any], CallToolResult | InputRequiredResult]

    def request(self, arguments: Mapping[str, Any]) -> Any:
        """The request from the tool's arguments: validated once (ValidationError, with
        field names as the tool's arguments: see `argument`)."""
        values = {
            self.tool.renames.get(k, k): v
            for k, v in arguments.items()
            if v is not None or k not in self.tool.omit_null
        }
        return self.operation.request.model_validate_json(json.dumps(values))

    def argument(self, field: str) -> str:
        """The tool's name for a request field (in error messages); "body" (the request
        as a whole, as REST names it) is the arguments here."""
        if field == "body":
            return "arguments"
        for argument, name in self.tool.renames.items():
            if field == name or field.startswith(name + "."):
                return argument + field[len(name) :]
        return field

    async def run(
        self, memex: AsyncMemex, request: Any, resolver: TenantResolver, caller: Caller
    ) -> CallToolResult | InputRequiredResult:
        if "agent_id" in type(request).model_fields:
            tenant = await resolver.resolve(request.agent_id, request.user_id, caller)
            request = request.model_copy(
                update={"agent_id": tenant.agent_id, "user_id": tenant.user_id}
            )
        result = await memex.run(self.operation, request)
        return self.convert(self.operation.tool_answer(request, result))


def tool_annotations(tool: Tool) -> ToolAnnotations:
    return ToolAnnotations(
        title=tool.title,
        read_only_hint=tool.read_only or None,
        destructive_hint=None if tool.read_only else tool.destructive,
        idempotent_hint=tool.idempotent or None,
        open_world_hint=False,
    )


def bind(operation: Operation[Any, Any]) -> tuple[SdkTool, BoundTool]:
    """The tool to list (the SDK's Tool, given to the server) and the BoundTool that runs
    it. Its input schema says `additionalProperties: false`: the request models refuse an
    argument they do not name (extra="forbid"), so the schema a client builds calls from
    says so too."""
    tool = operation.tool
    if tool is None:
        raise ValueError(f"operation {operation.name} is not an MCP tool")
    listed = SdkTool.from_function(
        schema_function(operation),
        name=tool.name,
        description=tool.description,
        annotations=tool_annotations(tool),
    )
    listed.parameters["additionalProperties"] = False
    return listed, BoundTool(operation, tool, listed.fn_metadata.convert_result)


def caller_of(context: Context[Any, Any] | None) -> Caller:
    headers = None if context is None else context.headers
    return Caller(dict(headers) if headers is not None else None)
