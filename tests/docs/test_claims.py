#!/usr/bin/env python3
"""Every figure the docs quote with a record name matches that record:
docs/claims.json lists, for every line of docs/*.md that names a record under
bench/results/, the records it names and the figures quoted beside them, each
with the record and the key that hold it. The check fails when
  * a docs line names a record and no entry of the table covers that line
    (a new claim must come with its entry),
  * a named record does not exist,
  * a quoted text is no longer in the doc, or its figure not in the text,
  * the record's value, rounded as the doc rounds it, is not the figure.

Keys: into a JSON record, a dotted path with list items chosen by index
(`runs.3`) or by fields (`runs[label=nccl/auto,ranks=4].us_per_step`); into
a text record, `re:` and a regular expression whose first group is the
figure (the first match; `re2:` the second, ...). A figure the doc derives
(a ratio, the best of several runs): `expr:` and an arithmetic expression
over such keys in braces, with min and max, e.g.
`expr:min({a.us},{b.us})/{c.us}`."""
import glob
import json
import math
import pathlib
import re
import sys
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]
TABLE = ROOT / "docs" / "claims.json"
# Lines whose figures were not mapped when the table was written (2026-12-04): only ever lowered.
MAX_UNMAPPED = 0
RECORD_NAME = re.compile(r"bench/results/[A-Za-z0-9_.*{},/-]*[A-Za-z0-9_*}]")


def expand(pattern):
    """A record name as the docs write it: braces ({json,png}) and globs (*) allowed."""
    m = re.search(r"\{([^}]*)\}", pattern)
    if m:
        out = []
        for alt in m.group(1).split(","):
            out += expand(pattern[:m.start()] + alt + pattern[m.end():])
        return out
    return sorted(glob.glob(str(ROOT / pattern))) if "*" in pattern else [str(ROOT / pattern)]


def record_names(line):
    """The records a docs line names (a pattern with a placeholder such as
    <machine>, and the folder itself, name none)."""
    names = []
    for m in RECORD_NAME.finditer(line):
        if "<" in line[m.end():m.end() + 2] or m.group(0) == "bench/results":
            continue
        names.append(m.group(0))
    return names


def lookup(record_path, key):
    """The value at `key` of a record (see the module's doc)."""
    path = ROOT / record_path
    if key.startswith("expr:"):
        values = []

        def value_of(m):
            values.append(float(lookup(record_path, m.group(1))))
            return f"_v[{len(values) - 1}]"

        expression = re.sub(r"\{([^{}]+)\}", value_of, key[len("expr:"):])
        if not re.fullmatch(r"[\s_v\[\]0-9.+\-*/(),minax]*", expression):
            raise KeyError(f"{key!r}: only numbers, + - * / ( ), min and max may join the keys")
        return eval(expression, {"__builtins__": {}}, {"_v": values, "min": min, "max": max})  # noqa: S307
    m = re.match(r"re(\d*):(.*)", key, re.S)
    if m:
        nth = int(m.group(1) or 1)
        found = re.findall(m.group(2), path.read_text(encoding="utf-8"), re.M)
        if len(found) < nth:
            raise KeyError(f"{key!r}: {len(found)} match(es) in {record_path}")
        value = found[nth - 1]
        return value[0] if isinstance(value, tuple) else value
    node = json.loads(path.read_text(encoding="utf-8"))
    for part in re.findall(r"\[[^\]]*\]|[^.\[\]]+", key):
        if part.startswith("["):
            conditions = [c.split("=", 1) for c in part[1:-1].split(",")]
            matches = [item for item in node if all(str(item.get(f)) == w for f, w in conditions)]
            if len(matches) != 1:
                raise KeyError(f"{key!r}: {len(matches)} items with {part} in {record_path}")
            node = matches[0]
        elif isinstance(node, list):
            node = node[int(part)]
        else:
            node = node[part]
    return node


def number(text):
    """A figure as the docs print it: thin or plain spaces between thousands,
    a trailing unit sign; returns (value, half of its last digit's unit)."""
    t = re.sub(r"[\s\u2009\u202f,]", "", str(text)).rstrip("×%").replace("−", "-")
    m = re.fullmatch(r"([-+]?\d+)(?:\.(\d+))?(?:[eE]([-+]?\d+))?", t)
    if not m:
        raise ValueError(f"{text!r} is not a figure")
    decimals = len(m.group(2) or "")
    exponent = int(m.group(3) or 0)
    return float(t), 0.5 * 10.0 ** (exponent - decimals)


def rounds_to(value, figure):
    quoted, half = number(figure)
    return math.isfinite(float(value)) and abs(float(value) - quoted) <= half * (1 + 1e-9)


def load_table():
    return json.loads(TABLE.read_text(encoding="utf-8"))["claims"]


class Claims(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.claims = load_table()
        cls.docs = {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8").splitlines()
                    for p in sorted((ROOT / "docs").glob("*.md"))}

    def test_derived_figures(self):
        rec = "bench/results/jacobi-2xH200-2026-11-29.json"
        at = "sizes[per_rank=2048].run.results[transport={}].us_per_iter"
        ratio = lookup(rec, "expr:{" + at.format("nccl") + "}/{" + at.format("nvshmem") + "}")
        self.assertAlmostEqual(ratio, lookup(rec, at.format("nccl")) / lookup(rec, at.format("nvshmem")))
        with self.assertRaises(KeyError):
            lookup(rec, "expr:__import__('os')")

    def test_rounding_rule(self):
        self.assertTrue(rounds_to(50.2475, "50.2"))
        self.assertFalse(rounds_to(50.2475, "50.3"))
        self.assertTrue(rounds_to(1.23e-8, "1.2e-8"))
        self.assertTrue(rounds_to(22500, "22 500"))
        self.assertFalse(rounds_to(4.04e-9, "4.1e-9"))

    def test_every_line_naming_a_record_has_an_entry(self):
        uncovered = []
        for doc, lines in self.docs.items():
            entries = [c for c in self.claims if c["doc"] == doc]
            for number_, line in enumerate(lines, 1):
                for name in record_names(line):
                    if not any(c["line"] in line and name in c["records"] for c in entries):
                        uncovered.append(f"{doc}:{number_}: {name}")
        self.assertEqual(uncovered, [], "docs lines that name a record without an entry in docs/claims.json")

    def test_every_entry_names_a_line_and_records_that_exist(self):
        for c in self.claims:
            with self.subTest(doc=c["doc"], line=c["line"]):
                lines = self.docs.get(c["doc"], [])
                self.assertTrue(any(c["line"] in line for line in lines), f"no line of {c['doc']} holds it")
                for name in c["records"]:
                    paths = expand(name)
                    self.assertTrue(paths and all(pathlib.Path(p).exists() for p in paths), f"{name} is missing")
                if not c.get("figures"):
                    self.assertTrue(c.get("no_figure") or c.get("unmapped"),
                                    "an entry without figures says why (no_figure) or that they are unmapped")

    def test_unmapped_entries_only_shrink(self):
        """Entries whose figures are not yet in the table are listed (not checked) and may not grow in number:
        a new claim comes with its figures."""
        unmapped = [c for c in self.claims if c.get("unmapped")]
        for c in unmapped:
            print(f"NOT CHECKED: {c['doc']}: {c['line'][:100]}")
        self.assertLessEqual(len(unmapped), MAX_UNMAPPED)

    def test_every_figure_matches_its_record(self):
        checked = 0
        for c in self.claims:
            text = "\n".join(self.docs.get(c["doc"], []))
            for f in c.get("figures", []):
                with self.subTest(doc=c["doc"], quote=f["quote"], key=f["key"]):
                    self.assertTrue(f["quote"] in text, f"{f['quote']!r} is no longer in {c['doc']}")
                    self.assertTrue(f["figure"] in f["quote"], f"{f['figure']!r} is not in its quoted text")
                    value = lookup(f["record"], f["key"])
                    self.assertTrue(rounds_to(value, f["figure"]),
                                    f"{f['record']} {f['key']} = {value!r}, the doc says {f['figure']}")
                    checked += 1
        self.assertGreater(checked, 0)


if __name__ == "__main__":
    if sys.argv[1:] == ["--list-lines"]:  # the lines an entry must cover, for writing the table
        for p in sorted((ROOT / "docs").glob("*.md")):
            for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
                for name in record_names(line):
                    print(f"{p.relative_to(ROOT).as_posix()}:{n}: {name}")
        sys.exit(0)
    unittest.main()
