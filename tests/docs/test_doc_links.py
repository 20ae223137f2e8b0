#!/usr/bin/env python3
"""The repository stands alone: every relative link in README.md and docs/*.md,
and every `docs/<page>.md[#anchor]` that source code, scripts or benchmarks
cite, names a file of the repository and, with an anchor, a heading of it
(GitHub's anchor rules)."""
import pathlib
import re
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
MARKDOWN_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE_CITATION = re.compile(r"\bdocs/([A-Za-z0-9_.-]+\.md)(#[A-Za-z0-9_-]+)?")
SOURCE_SUFFIXES = {".hpp", ".cpp", ".cu", ".cuh", ".py", ".sh", ".cmake", ".txt"}
SOURCE_DIRS = ["include", "src", "proxies", "tools", "tests", "bench", "scripts", "cmake", "examples"]


def github_anchor(heading):
    """The anchor GitHub gives a heading: lower case, punctuation dropped
    (hyphens and underscores kept), spaces to hyphens."""
    text = re.sub(r"`", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path):
    anchors, seen = set(), {}
    in_code = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        if in_code or not line.startswith("#"):
            continue
        base = github_anchor(line.lstrip("#"))
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchors.add(base if n == 0 else f"{base}-{n}")
    return anchors


def check_target(source, target, problems):
    """target: 'path', 'path#anchor' or '#anchor', relative to source's folder."""
    if re.match(r"^[a-z]+:", target):  # http:, https:, mailto:
        return
    path_part, _, anchor = target.partition("#")
    resolved = source if not path_part else (source.parent / path_part).resolve()
    if not resolved.exists():
        problems.append(f"{source.relative_to(ROOT)}: link to {target}: no file {path_part}")
        return
    if anchor and resolved.suffix == ".md" and anchor not in anchors_of(resolved):
        problems.append(f"{source.relative_to(ROOT)}: link to {target}: {resolved.name} has no heading "
                        f"with anchor #{anchor}")


class DocLinks(unittest.TestCase):
    def test_anchor_rule(self):
        self.assertEqual(github_anchor(" The step on a GPU"), "the-step-on-a-gpu")
        self.assertEqual(github_anchor(" Staged forwarding (particles)"), "staged-forwarding-particles")
        self.assertEqual(github_anchor(" `--search`: where"), "--search-where")

    def test_markdown_links_resolve(self):
        problems = []
        pages = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))
        for page in pages:
            in_code = False
            for line in page.read_text(encoding="utf-8").splitlines():
                if line.startswith("```"):
                    in_code = not in_code
                if in_code:
                    continue
                for target in MARKDOWN_LINK.findall(line):
                    check_target(page, target, problems)
        self.assertEqual(problems, [], "\n".join(problems))

    def test_code_citations_resolve(self):
        problems, cited = [], 0
        for folder in SOURCE_DIRS:
            for path in sorted((ROOT / folder).rglob("*")):
                if not path.is_file() or path.suffix not in SOURCE_SUFFIXES or path == pathlib.Path(__file__):
                    continue
                for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                    for page, anchor in CODE_CITATION.findall(line):
                        cited += 1
                        doc = ROOT / "docs" / page
                        if not doc.exists():
                            problems.append(f"{path.relative_to(ROOT)}: cites docs/{page}: no such page")
                        elif anchor and anchor[1:] not in anchors_of(doc):
                            problems.append(f"{path.relative_to(ROOT)}: cites docs/{page}{anchor}: no such heading")
        self.assertGreater(cited, 0, "no citation found: the scan itself is broken")
        self.assertEqual(problems, [], "\n".join(problems))

    def test_no_design_section_citations(self):
        """The design notes the first commits cited ("DESIGN §N") are not in
        the repository; their content lives in docs/."""
        hits = []
        for folder in SOURCE_DIRS + ["docs"]:
            for path in sorted((ROOT / folder).rglob("*")):
                if path.is_file() and path.suffix in SOURCE_SUFFIXES | {".md"} and path != pathlib.Path(__file__):
                    if "DESIGN §" in path.read_text(encoding="utf-8", errors="replace"):
                        hits.append(str(path.relative_to(ROOT)))
        self.assertEqual(hits, [], "cites DESIGN §N: " + ", ".join(hits))


if __name__ == "__main__":
    sys.exit(unittest.main())
