"""A small OpenAI-compatible chat server on loopback that answers with scripted replies.

Real chat models cannot run on these machines (no model hub is reachable, and two cores
would not run one in test time), so the LLM paths of memorize and memory_search are
tested against this stand-in: each POST /v1/chat/completions records the request and
returns the next scripted reply (a tool-call reply, a text answer, or an HTTP error).
The requests are kept so tests can check what memexdb sent; a test in another process
(Node's) scripts replies and reads the requests through /control/ (ChatHandler.control)."""

from __future__ import annotations

import contextlib
import json
from collections import deque
from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer
from typing import Any

from tests.json_http import JsonHandler, serving

Reply = dict[str, Any] | int | Callable[[], dict[str, Any] | int]


def tool_calls(*calls: tuple[str, dict[str, Any] | str]) -> dict[str, Any]:
    """A reply proposing these (name, arguments) calls; string arguments go out verbatim
    (malformed JSON included)."""
    return {
        "content": None,
        "tool_calls": [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(calls)
        ],
    }


def answer(text: str) -> dict[str, Any]:
    """A reply with a text answer."""
    return {"content": text}


class ChatHandler(JsonHandler):
    server: ScriptedLLM

    def do_POST(self) -> None:
        if self.path in ("/control/script", "/control/requests"):
            return self.control()
        self.server.requests.append({"path": self.path, "body": self.read_json()})
        reply = self.server.replies.popleft() if self.server.replies else 503
        if callable(reply):  # what happens meanwhile, then the reply
            reply = reply()
        if self.path != "/v1/chat/completions":
            reply = 404
        if isinstance(reply, int):
            return self.send_json(reply, {"error": {"message": "scripted failure"}})
        choice = {"index": 0, "message": {"role": "assistant", **reply}, "finish_reason": "stop"}
        return self.send_json(200, {"object": "chat.completion", "choices": [choice]})

    def control(self) -> None:
        """For a test in another process (the TypeScript client's, driven by node --test):
        POST /control/script {"replies": [...]} queues replies as `script` does (a reply
        object, or an HTTP status; with "replace": true, instead of those queued); POST
        /control/requests answers the requests recorded since the last time it was asked
        ({"requests": [...]}) and forgets them."""
        body = self.read_json()
        if self.path == "/control/script":
            if body.get("replace"):
                self.server.replies.clear()
            self.server.script(*body["replies"])
            return self.send_json(200, {"queued": len(self.server.replies)})
        taken, self.server.requests[:] = list(self.server.requests), []
        return self.send_json(200, {"requests": taken})


class ScriptedLLM(ThreadingHTTPServer):
    """The server; `script(...)` queues replies, `url` is its base URL (…/v1)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), ChatHandler)
        self.replies: deque[Reply] = deque()
        self.requests: list[dict[str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        """Queue replies: a dict from tool_calls()/answer(), or an HTTP status to fail with
        (with nothing queued the server answers 503), or a function called when the
        request arrives that returns one (to change something while the model "thinks")."""
        self.replies.extend(replies)


@contextlib.contextmanager
def scripted_llm() -> Iterator[ScriptedLLM]:
    with serving(ScriptedLLM()) as server:
        yield server
