"""The admin console's paged tables end the same way (macros.html `table_end`): the table,
then a link to the next page only when there is one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from memexdb.console.web import templates

TENANT = SimpleNamespace(agent_id="a b", user_id="u")
PAGES: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "access_log.html",
        {"events": [], "tenant": TENANT, "next_before": 7},
        "/admin/access-log?agent_id=a+b&amp;user_id=u&amp;before=7",
        "Older entries",
    ),
    (
        "audit.html",
        {"events": [], "next_before": 5},
        "/admin/audit?before=5",
        "Older entries",
    ),
    (
        "agent.html",
        {"rows": [], "agent_id": "a b", "next_after": "61.75"},
        "/admin/agent?agent_id=a+b&amp;after=61.75",
        "Next page",
    ),
    (
        "files.html",
        {"rows": [], "tenant": TENANT, "next_after": "x"},
        "/admin/files?agent_id=a+b&amp;user_id=u&amp;after=x",
        "Next page",
    ),
]


@pytest.mark.parametrize(("page", "context", "href", "label"), PAGES, ids=[p[0] for p in PAGES])
def test_a_paged_table_links_its_next_page_only_when_there_is_one(
    page: str, context: dict[str, Any], href: str, label: str
) -> None:
    template = templates.get_template(page)
    html = template.render(**context)
    assert f'</tbody></table>\n<p><a href="{href}">{label}</a></p></main>' in html
    cursor = "next_before" if "next_before" in context else "next_after"
    last = template.render(**{**context, cursor: None})
    assert "</tbody></table>\n</main>" in last
    assert label not in last
