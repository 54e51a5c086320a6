"""A consolidation restore sticks (issue 36 item 5), and the API and the console say so:
the restore endpoint's description in the OpenAPI document and the console's notice after
"Undo" tell that the restored memories are not condensed again until a newer memory
arrives for the user, or an operator forces a run; and they are not (a run that is not
forced leaves them, a newer memory lets it take them again). In process."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from memexdb import AsyncMemex
from tests.live_service import in_process_service

A, U = "sticky", "sam"
DAY = timedelta(days=1)


async def test_the_api_and_the_console_say_a_restore_sticks(amemex: AsyncMemex, dsn: str) -> None:
    operator = amemex.as_operator("test")
    await operator.set_dream_config(threshold=10, grace_minutes=0)
    now = datetime.now(UTC)
    for i in range(12):
        await operator.store(
            A, U, f"Sam walked the dog on day {i}.", created_at=now - (20 - i) * DAY
        )
    run = await operator.consolidate(A, U)  # due: more than 10, none within the grace
    assert run is not None and run.status == "done" and run.memories_in == 12

    with in_process_service(dsn) as http:
        described = http.get("/openapi.json").json()["paths"][
            "/v1/admin/dream/runs/{run_id}/restore"
        ]["post"]["responses"]["200"]["description"]
        assert "not condensed again" in described and "a memory newer than the restore" in described
        page = http.get("/admin/dream")
        token = re.search(r'name="csrf" value="([^"]+)"', page.text)
        assert token, page.text[:500]
        assert "not condensed again until a newer memory arrives" in page.text  # the confirm
        undone = http.post(
            "/admin/dream/restore",
            data={"csrf": token.group(1), "run_id": str(run.id), "agent_id": A},
        )
        assert undone.status_code == 200, undone.text[:500]
        notice = re.search(r'id="notice"[^>]*>([^<]*)<', undone.text)
        assert notice, undone.text[:800]
        assert "Run undone" in notice.group(1)
        assert "until a newer memory arrives for the user" in notice.group(1)

    # and it sticks: a run that is not forced leaves the restored memories
    again = await operator.consolidate(A, U)
    assert again is not None and again.status == "nothing", again
    assert "0 live episodic memories" in again.details["reason"]
    live = (await operator.list_memories(A, U, limit=100)).memories
    assert len(live) == 12
    # until something new arrives for the user: then they are condensed again
    await operator.store(A, U, "Sam adopted a second dog.")
    later = await operator.consolidate(A, U)
    assert later is not None and later.status == "done" and later.memories_in == 13, later
