"""The agentic domain's models: memory_search (memex.search_passages) and
memory_memorize, and the edits a model may propose when dreaming."""

from __future__ import annotations

from typing import Annotated, Literal
from uuid import UUID

from pydantic import (
    BaseModel,
    Field,
    model_validator,
)

from memexdb.fields import (
    NotBlank,
    RequestModel,
    TenantRequest,
    text_field,
)
from memexdb.files.models import HEADING_MAX_CHARS, FilePath

# --- Agentic tools: memory_memorize (memory_search's models are memexdb.files.models') ---
# memorize: the text taken (the fallback stores it as one memory), and what the inner
# model may propose per call.
MEMORIZE_TEXT_MAX_CHARS = 16_000
MEMORIZE_MAX_PROPOSALS = 8
MEMORIZE_PROPOSAL_MAX_CHARS = 8000
# what the inner model is shown: the most relevant files and memories, and file names
MEMORIZE_CONTEXT_CHARS = 6000
MEMORIZE_FILE_LIST = 100
# per fact (memory_fact): the tenant's most similar memories the model decides against
# (each shown with its id, at most MEMORIZE_CANDIDATE_CHARS of its content), what one
# decision may name, and how many memories one memorize call may retire in all (a text
# that invalidates more than a few facts with no new version is rare; an injected "forget
# everything" is not given the rest)
MEMORIZE_CANDIDATES = 10
# a text of several sentences: each of its first MEMORIZE_SENTENCE_SEARCHES sentences (of
# 4 words or more) is searched too, its top MEMORIZE_SENTENCE_CANDIDATES added when not
# listed yet, so that a fact the whole text's search ranks low still meets its old version
MEMORIZE_SENTENCE_SEARCHES = 3
MEMORIZE_SENTENCE_CANDIDATES = 3
MEMORIZE_CANDIDATE_CHARS = 500
MEMORIZE_DECISION_MAX_IDS = 3
MEMORIZE_MAX_RETIRED = 3
MEMORIZE_FACT_MAX_CHARS = 2000
MEMORIZE_REASON_MAX_CHARS = 300
# dreaming with an LLM: the files shown to the model per tenant (in path order, while they
# fit), and the edits taken from its answer (sql/129 takes at most 200 per call)
DREAM_LLM_CONTEXT_CHARS = 24_000
DREAM_MAX_EDITS = 8  # every change a model proposes in one dream, of every kind
# merging duplicate or paraphrased facts, rewriting a fragmented section (with an LLM)
DREAM_MERGE_MAX_FACTS = 8
DREAM_REWRITE_MAX_CHARS = 4000


MemorizeText = Annotated[
    str,
    text_field(
        MEMORIZE_TEXT_MAX_CHARS,
        f"The raw text to memorize (1 to {MEMORIZE_TEXT_MAX_CHARS} characters, not blank).",
        "Alice: I switched from coffee to green tea last month, and I take it without sugar.",
    ),
    NotBlank,
]


class MemorizeRequest(TenantRequest):
    """memory_memorize: raw text (a conversation turn, a note) to keep what is durable."""

    text: MemorizeText


ProposalText = Annotated[
    str,
    Field(min_length=1, max_length=MEMORIZE_PROPOSAL_MAX_CHARS),
    NotBlank,
]


class ProposedWrite(RequestModel):
    """A memory_write the inner model proposes (the tenant is the caller's, never its)."""

    path: FilePath
    content: ProposalText


class ProposedPatch(RequestModel):
    """A memory_patch the inner model proposes: append under a heading, or replace."""

    path: FilePath
    heading: Annotated[str, Field(max_length=HEADING_MAX_CHARS)] | None = None
    append: ProposalText | None = None
    old_text: ProposalText | None = None
    new_text: Annotated[str, Field(max_length=MEMORIZE_PROPOSAL_MAX_CHARS)] | None = None


FactAction = Literal["add", "supersede", "retire", "none"]
_ACTIONS = (
    "add: a new fact no memory listed says; supersede: a newer version of the listed"
    " memories `ids` (they leave the default search, kept in history); retire: the listed"
    " memories `ids` no longer hold and have no newer version; none: already known."
)


class ProposedFact(RequestModel):
    """One fact of the new text and what the inner model decided for it (mem0's ADD,
    UPDATE, DELETE, NONE), against the memories it was shown: untrusted, checked here and
    against the candidates (memexdb.agentic.memorizing)."""

    action: Annotated[FactAction, Field(description=_ACTIONS)]
    fact: (
        Annotated[
            str,
            Field(
                min_length=1,
                max_length=MEMORIZE_FACT_MAX_CHARS,
                description="The fact as one self-contained sentence (add, supersede; none: the"
                " fact already known).",
            ),
            NotBlank,
        ]
        | None
    ) = None
    ids: list[UUID] = Field(
        default_factory=list,
        max_length=MEMORIZE_DECISION_MAX_IDS,
        description="Ids of memories listed as existing: what supersede replaces, what"
        " retire retires, what already says it (none); none for add.",
    )
    reason: Annotated[
        str, Field(max_length=MEMORIZE_REASON_MAX_CHARS, description="Why, in a few words.")
    ] = ""

    @model_validator(mode="after")
    def _coherent(self) -> ProposedFact:
        if self.action in ("add", "supersede") and self.fact is None:
            raise ValueError(f"fact: {self.action} needs the fact")
        if self.action == "retire" and self.fact is not None:
            raise ValueError("fact: retire stores no fact (supersede stores a new version)")
        if self.action in ("supersede", "retire") and not self.ids:
            raise ValueError(f"ids: {self.action} needs the ids of the memories it replaces")
        if self.action == "add" and self.ids:
            raise ValueError("ids: add names no memory (supersede replaces one)")
        if len(set(self.ids)) != len(self.ids):
            raise ValueError("ids: must not name a memory twice")
        return self


class ProposedEdit(RequestModel):
    """An edit the dreaming model proposes to resolve a contradiction in a file it was
    shown: the one occurrence of old_text becomes new_text (empty: removed)."""

    path: FilePath
    old_text: ProposalText
    new_text: Annotated[str, Field(max_length=MEMORIZE_PROPOSAL_MAX_CHARS)]
    reason: Annotated[str, Field(max_length=300)] = ""


class ProposedMerge(RequestModel):
    """Facts the dreaming model proposes to merge in a file it was shown: each fact (an
    exact text occurring once in the file) goes, and `merged` takes the place of the last
    of them; never longer than the facts together, keeping every name and number."""

    path: FilePath
    facts: Annotated[
        list[ProposalText],
        Field(
            min_length=2,
            max_length=DREAM_MERGE_MAX_FACTS,
            description="The duplicate or paraphrased facts, each copied exactly.",
        ),
    ]
    merged: ProposalText
    reason: Annotated[str, Field(max_length=300)] = ""


class ProposedRewrite(RequestModel):
    """A fragmented section the dreaming model proposes to rewrite in a file it was shown:
    old_text (exact, once in the file) becomes new_text, no longer than it, keeping every
    name and number."""

    path: FilePath
    old_text: Annotated[str, Field(min_length=1, max_length=DREAM_REWRITE_MAX_CHARS), NotBlank]
    new_text: Annotated[str, Field(min_length=1, max_length=DREAM_REWRITE_MAX_CHARS), NotBlank]
    reason: Annotated[str, Field(max_length=300)] = ""


class MemorizeChange(BaseModel):
    tool: str = Field(description="memory_write, memory_patch or store_memory")
    path: str | None
    memory_id: UUID
    revision: int | None


class MemorizeRefusal(BaseModel):
    tool: str
    arguments: str = Field(description="The proposal as the model sent it (first 500 chars).")
    reason: str


class MemorizeDecision(BaseModel):
    """One fact and what was done for it (memory_fact, checked and applied)."""

    action: FactAction = Field(
        description="add: stored as a new memory; supersede: stored, superseding `ids`;"
        " retire: `ids` retired (superseded with no successor); none: already known,"
        " nothing changed."
    )
    fact: str | None
    ids: list[UUID] = Field(
        description="The existing memories it named: superseded, retired, or (none) those"
        " that already say it."
    )
    reason: str = Field(
        description="The model's reason, also kept with the change: in the new memory's"
        " metadata (add, supersede) or the retired memory's revision details (retire)."
    )
    memory_id: UUID | None = Field(
        description="The memory stored for the fact (add, supersede); null otherwise."
    )


class MemorizeOut(BaseModel):
    """What memorize did: which path ran, what it wrote, what it decided per fact, what
    it refused."""

    mode: Literal["llm", "fallback"] = Field(
        description="llm: the configured model proposed the changes; fallback: no LLM (or it"
        " failed): the text was stored as one episodic memory (its one home: a search"
        " finds it once)."
    )
    applied: list[MemorizeChange] = Field(
        description="The file writes and patches (llm), or the one stored memory (fallback)."
    )
    decisions: list[MemorizeDecision] = Field(
        description="llm: per fact, what was decided against the tenant's most similar"
        " memories and done (add, supersede, retire, none), in the model's order; empty"
        " in the fallback, which supersedes nothing."
    )
    refused: list[MemorizeRefusal] = Field(
        description="Proposals not applied (nothing changed for them), each with why."
    )
    llm_error: str | None = None
