"""The docs site builds: `mkdocs build --strict` with every page in the nav, no broken link
or anchor, no warning; and its home page is the README with its links made relative to
docs/ (so the two cannot drift apart: `python -m tests.test_docs_site` rewrites it)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
INDEX_NOTE = (
    "<!-- Generated from README.md by `python -m tests.test_docs_site`; "
    "tests/test_docs_site.py checks it. -->\n"
)


def index_from_readme(readme: str) -> str:
    """The README as the site's home page: links into docs/ lose the prefix, links to
    other files of the repository (outside the site) become their path in code."""

    def link(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        if re.match(r"[a-z]+://", target) or target.startswith("#"):
            return match.group(0)
        if target.startswith("docs/"):
            return f"[{text}]({target.removeprefix('docs/')})"
        return text if text == f"`{target}`" else f"{text} (`{target}`)"

    return INDEX_NOTE + re.sub(r"\[([^\]]+)\]\(([^)\s]+)\)", link, readme)


def nav_pages(nav: list[object]) -> list[str]:
    pages: list[str] = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += nav_pages(value) if isinstance(value, list) else [str(value)]
    return pages


def test_index_is_the_readme() -> None:
    readme = (ROOT / "README.md").read_text()
    assert (DOCS / "index.md").read_text() == index_from_readme(readme), (
        "docs/index.md differs from README.md: run `python -m tests.test_docs_site`"
    )


def test_every_page_is_in_the_nav_and_the_readme_map() -> None:
    config = yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=yaml.SafeLoader)
    pages = nav_pages(config["nav"])
    assert sorted(pages) == sorted(p.name for p in DOCS.glob("*.md"))
    readme = (ROOT / "README.md").read_text()
    for page in pages:
        if page != "index.md":
            assert f"](docs/{page})" in readme, f"the README's docs map lacks docs/{page}"


def test_mkdocs_build_strict(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--config-file",
            str(ROOT / "mkdocs.yml"),
            "--site-dir",
            str(tmp_path / "site"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    log = result.stdout + result.stderr
    assert result.returncode == 0, log
    assert "WARNING" not in log, log
    assert (tmp_path / "site" / "index.html").exists()
    assert (tmp_path / "site" / "rest" / "index.html").exists()


if __name__ == "__main__":
    readme_text = (ROOT / "README.md").read_text()
    (DOCS / "index.md").write_text(index_from_readme(readme_text))
