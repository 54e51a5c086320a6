"""The memex reference workload shared by bench/load_test.py and bench/locustfile.py.

Kept free of locust imports: importing locust monkey-patches the process with gevent,
which the harness (subprocesses, threads, the embedder) must not be.

Two text sources of similar length (5 to 12 words, 9 to 20 MiniLM tokens):

- ``reference``: a small fixed list, as the memex reference's scripts/load_test.py has,
  so the same few queries and memories repeat all run long;
- ``unique``: every text is new (random words plus a counter), so no cache of any kind
  (embeddings, plans, pages of one hot tenant) can flatter the figures.
"""

from __future__ import annotations

import itertools
import random

AGENTS = 20
USERS_PER_AGENT = 10
SEED_MEMORIES = 1000
TOP_K = 5
ALPHA = 0.7
SEARCH_WEIGHT = 3
STORE_WEIGHT = 1
STORE_TYPES = ("episodic", "semantic")
IMPORTANCE = (0.5, 1.5)
SEARCH_NAME = "POST /v1/memories/search"
STORE_NAME = "POST /v1/memories"

REFERENCE_MEMORIES = (
    "User prefers dark mode in all applications",
    "User's favourite programming language is Python",
    "User had a meeting with the design team on Monday",
    "User is allergic to peanuts and shellfish",
    "User lives in Berlin and works remotely",
    "User asked about the vacation policy last week",
    "User's birthday is on the fourteenth of March",
    "User is learning Spanish on weekday evenings",
    "User drives a blue electric car to work",
    "User finished the onboarding checklist yesterday",
)
REFERENCE_QUERIES = (
    "What are the user's preferences?",
    "Where does the user live?",
    "What food should the user avoid?",
    "When is the user's birthday?",
    "What is the user learning at the moment?",
    "What happened in recent meetings?",
    "What car does the user drive?",
    "Which programming language does the user like?",
)

_NAMES = (
    "Alice", "Bruno", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas",
    "Kofi", "Lena", "Mateo", "Nadia", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tariq",
)  # fmt: skip
_VERBS = (
    "booked", "cancelled", "painted", "repaired", "ordered", "borrowed", "sold", "found",
    "photographed", "planned", "reviewed", "cooked", "packed", "returned", "shared", "lost",
)  # fmt: skip
_ADJECTIVES = (
    "old", "green", "noisy", "tiny", "expensive", "broken", "wooden", "shared", "secret",
    "famous", "quiet", "heavy", "spare", "vintage", "yellow", "borrowed",
)  # fmt: skip
_NOUNS = (
    "bicycle", "guitar", "laptop", "kayak", "sofa", "camera", "telescope", "tent", "piano",
    "notebook", "drone", "lamp", "jacket", "printer", "boat", "garden",
)  # fmt: skip
_PLACES = (
    "Lisbon", "Nairobi", "Osaka", "Quito", "Tallinn", "Hobart", "Accra", "Bergen", "Cusco",
    "Dakar", "Gdansk", "Hanoi", "Izmir", "Kyoto", "Leeds", "Malmo",
)  # fmt: skip
_QUESTIONS = (
    "Where did {name} see the {adj} {noun} near {place} on day {n}?",
    "What did {name} say about the {adj} {noun} in week {n}?",
    "Who {verb} the {noun} of {name} in {place}, ticket {n}?",
    "When was the {adj} {noun} {verb} in {place}, case {n}?",
)
_STATEMENTS = (
    "{name} {verb} a {adj} {noun} in {place} on day {n}",
    "On trip {n} {name} {verb} the {adj} {noun} near {place}",
    "{name} says the {adj} {noun} from {place} was {verb}, note {n}",
)


class Texts:
    """Search queries and memory contents of one variant ("reference" or "unique")."""

    def __init__(self, variant: str, rng: random.Random, start: int = 0) -> None:
        if variant not in ("reference", "unique"):
            raise ValueError(f"unknown text variant {variant!r}")
        self.variant = variant
        self.rng = rng
        # The counter makes unique texts unique even when the random words repeat;
        # callers sharing one process share one Texts (or pass distinct starts).
        self._counter = itertools.count(start)

    def query(self) -> str:
        if self.variant == "reference":
            return self.rng.choice(REFERENCE_QUERIES)
        return self._fill(self.rng.choice(_QUESTIONS))

    def memory(self) -> str:
        if self.variant == "reference":
            return self.rng.choice(REFERENCE_MEMORIES)
        return self._fill(self.rng.choice(_STATEMENTS))

    def mixed(self) -> str:
        """A text drawn like the workload draws them: 3 queries to 1 memory."""
        total = SEARCH_WEIGHT + STORE_WEIGHT
        return self.query() if self.rng.randrange(total) < SEARCH_WEIGHT else self.memory()

    def _fill(self, template: str) -> str:
        r = self.rng
        return template.format(
            name=r.choice(_NAMES),
            verb=r.choice(_VERBS),
            adj=r.choice(_ADJECTIVES),
            noun=r.choice(_NOUNS),
            place=r.choice(_PLACES),
            n=next(self._counter),
        )


def tenant(rng: random.Random) -> tuple[str, str]:
    """A random (agent_id, user_id) of the AGENTS x USERS_PER_AGENT seeded tenants."""
    return f"agent-{rng.randrange(AGENTS)}", f"user-{rng.randrange(USERS_PER_AGENT)}"


def store_body(rng: random.Random, texts: Texts, agent_id: str, user_id: str) -> dict[str, object]:
    return {
        "agent_id": agent_id,
        "user_id": user_id,
        "content": texts.memory(),
        "memory_type": rng.choice(STORE_TYPES),
        "importance": round(rng.uniform(*IMPORTANCE), 3),
    }


def search_body(texts: Texts, agent_id: str, user_id: str) -> dict[str, object]:
    return {
        "agent_id": agent_id,
        "user_id": user_id,
        "query": texts.query(),
        "top_k": TOP_K,
        "alpha": ALPHA,
    }


def seed_memories(rng: random.Random) -> list[dict[str, object]]:
    """SEED_MEMORIES reference memories spread evenly over every tenant."""
    texts = Texts("reference", rng)
    tenants = [(f"agent-{a}", f"user-{u}") for a in range(AGENTS) for u in range(USERS_PER_AGENT)]
    return [store_body(rng, texts, *tenants[i % len(tenants)]) for i in range(SEED_MEMORIES)]
