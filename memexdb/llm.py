"""An OpenAI-compatible chat model (MEMEX_LLM_URL, MEMEX_LLM_MODEL, MEMEX_LLM_API_KEY):
the optional inner model of memory_memorize and memory_search's answers.

Only POST {url}/chat/completions is used, with function tools. Everything the model
returns is untrusted input: tool calls come back as names and raw argument strings, and
the caller validates them like any request. Any failure (unreachable, an HTTP error, a
reply that is not the expected JSON, a timeout) is one LLMError, so callers can fall
back instead of failing the request.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import httpx

from memexdb.config import Settings

# A reply larger than this is refused unread (a model has no business sending more).
MAX_REPLY_BYTES = 1_000_000


class LLMError(Exception):
    """The model could not be asked, or its reply was not a chat completion."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One function call the model proposed: its name and raw JSON arguments."""

    name: str
    arguments: str

    def argument_object(self) -> dict[str, Any]:
        """The arguments as a JSON object, or ValueError saying why they are not one."""
        try:
            parsed = json.loads(self.arguments)
        except ValueError:
            raise ValueError("arguments are not JSON") from None
        if not isinstance(parsed, dict):
            raise ValueError("arguments are not a JSON object")
        return parsed


@dataclass(frozen=True, slots=True)
class ChatReply:
    content: str | None
    tool_calls: tuple[ToolCall, ...]


class ChatModel:
    """A chat model behind an OpenAI-compatible endpoint (`url` ends in /v1)."""

    def __init__(
        self, url: str, model: str, *, api_key: str | None = None, timeout: float = 60.0
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.AsyncClient(headers=headers, timeout=timeout)

    @classmethod
    def from_settings(cls, settings: Settings) -> ChatModel | None:
        """The model the settings configure, or None when MEMEX_LLM_URL is unset."""
        if not settings.llm_url:
            return None
        return cls(
            settings.llm_url,
            settings.llm_model,
            api_key=settings.llm_api_key,
            timeout=settings.llm_timeout_seconds,
        )

    async def aclose(self) -> None:
        await self._http.aclose()

    async def chat(
        self, messages: list[dict[str, Any]], *, tools: list[dict[str, Any]] | None = None
    ) -> ChatReply:
        """One chat completion (temperature 0). Raises LLMError on any failure."""
        body: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": 0}
        if tools:
            body["tools"] = tools
        try:
            response = await self._http.post(f"{self.url}/chat/completions", json=body)
        except httpx.HTTPError as exc:
            raise LLMError(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code != 200:
            raise LLMError(f"HTTP {response.status_code}: {response.text[:200]}")
        if len(response.content) > MAX_REPLY_BYTES:
            raise LLMError(f"reply of {len(response.content)} bytes is too large")
        try:
            return _reply(response.json())
        except (ValueError, TypeError, KeyError, IndexError) as exc:
            raise LLMError(f"not a chat completion: {exc}") from exc


def _reply(data: Any) -> ChatReply:
    message = data["choices"][0]["message"]
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise TypeError("message.content is not a string")
    calls = []
    for call in message.get("tool_calls") or []:
        function = call["function"]
        name, arguments = function["name"], function.get("arguments", "{}")
        if not isinstance(name, str):
            raise TypeError("a tool call's name is not a string")
        if not isinstance(arguments, str):  # some servers send an object
            arguments = json.dumps(arguments)
        calls.append(ToolCall(name, arguments))
    return ChatReply(content, tuple(calls))


def function_tool(name: str, description: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A tool definition in the chat completions format."""
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": parameters},
    }
