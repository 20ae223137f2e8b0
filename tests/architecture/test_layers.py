#!/usr/bin/env python3
"""The layers point down (docs/architecture.md#layers): no file of a lower
layer includes a header of a higher one. LAYERS below is the table, lowest
first; a file may include headers of its own layer and of those below it.

A header is placed by its path: "haloex/<folder>/..." (installed headers,
also under haloex/detail/<folder>/, and the proxies' "haloex/md/...",
"haloex/stencil/...") by <folder>; an internal header ("halo_kernels.hpp")
by where the source tree keeps a file of that name. A folder the table does
not name fails the test, so that a new one is placed on purpose."""
import pathlib
import re
import sys
import tempfile
import unittest

ROOT = pathlib.Path(__file__).resolve().parents[2]

# (layer, the folders it holds: paths relative to the repository root), lowest first.
LAYERS = [
    ("core", ["include/haloex/core", "src/core", "include/haloex/build_info.hpp", "include/haloex/config.hpp"]),
    ("plan", ["include/haloex/plan", "src/plan"]),
    ("runtime", ["include/haloex/runtime", "src/runtime"]),
    # The device runtime the backends are built on (CUDA utilities, the NCCL
    # communicator, NVSHMEM's bootstrap and symmetric memory) is part of the
    # transport layer: its peer memory implements transport::PeerMemory.
    ("transport", ["include/haloex/transport", "src/transport", "include/haloex/cuda", "src/cuda",
                   "include/haloex/nccl", "include/haloex/nvshmem"]),
    ("halo", ["include/haloex/halo", "src/halo"]),
    ("particles", ["include/haloex/particles", "src/particles"]),
    ("proxies/tools", ["proxies", "tools", "proxies/md/include/haloex/md", "proxies/jacobi/include/haloex/stencil"]),
]
SOURCES = ("*.hpp", "*.cpp", "*.cu", "*.cuh", "*.in")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]', re.MULTILINE)


class Layers:
    def __init__(self, root, layers):
        self.root = pathlib.Path(root)
        # Longest prefix first, so that proxies/md/include/haloex/md wins over proxies.
        self.prefixes = sorted(((p, rank) for rank, (_, paths) in enumerate(layers) for p in paths),
                               key=lambda item: -len(item[0]))
        self.names = [name for name, _ in layers]
        self.by_basename = {}
        for path in self.files():
            rank = self.rank_of(path)
            if rank is not None:
                self.by_basename.setdefault(path.name, set()).add(rank)

    def files(self):
        for top in ("include", "src", "proxies", "tools"):
            for pattern in SOURCES:
                yield from (self.root / top).rglob(pattern)

    def rank_of(self, path):
        """The layer of a file of the tree, or None outside the table."""
        rel = path.relative_to(self.root).as_posix()
        rel = re.sub(r"^include/haloex/detail/", "include/haloex/", rel)
        for prefix, rank in self.prefixes:
            if rel == prefix or rel.startswith(prefix + "/"):
                return rank
        return None

    def rank_of_include(self, name):
        """The layer of an included header; None for one outside haloex
        (the standard library, CUDA, fmt, ...); raises for an unplaced
        haloex folder."""
        match = re.match(r"haloex/(?:detail/)?([^/]+)(/|$)", name)
        if match:
            folder = match.group(1)
            for candidate in (f"include/haloex/{folder}", f"proxies/md/include/haloex/{folder}",
                              f"proxies/jacobi/include/haloex/{folder}"):
                for prefix, rank in self.prefixes:
                    if prefix == candidate or (folder.endswith(".hpp") and prefix == f"include/haloex/{folder}"):
                        return rank
            raise LookupError(f"haloex/{folder}/ is in no layer of tests/architecture/test_layers.py")
        ranks = self.by_basename.get(pathlib.PurePosixPath(name).name)
        return min(ranks) if ranks else None

    def violations(self):
        found = []
        for path in sorted(self.files()):
            rank = self.rank_of(path)
            if rank is None:
                continue
            for name in INCLUDE.findall(path.read_text(encoding="utf-8", errors="replace")):
                included = self.rank_of_include(name)
                if included is not None and included > rank:
                    found.append(f"{path.relative_to(self.root)} ({self.names[rank]}) includes {name} "
                                 f"({self.names[included]})")
        return found


class LayersPointDown(unittest.TestCase):
    def test_no_file_includes_a_higher_layer(self):
        violations = Layers(ROOT, LAYERS).violations()
        self.assertEqual(violations, [], "lower layers include higher ones:\n  " + "\n  ".join(violations))

    def test_every_installed_folder_has_a_layer(self):
        layers = Layers(ROOT, LAYERS)
        for folder in sorted(p for p in (ROOT / "include/haloex").iterdir() if p.is_dir() and p.name != "detail"):
            with self.subTest(folder=folder.name):
                self.assertIsNotNone(layers.rank_of(folder / "x.hpp"), f"{folder} is in no layer")

    def test_the_check_catches_an_upward_include(self):
        """The checker itself on a small tree: a plan file that includes a
        halo header, and a runtime source that includes a halo-internal one."""
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            for rel, text in {
                "include/haloex/plan/a.hpp": '#include "haloex/halo/b.hpp"\n',
                "include/haloex/halo/b.hpp": '#include "haloex/plan/c.hpp"\n',
                "include/haloex/plan/c.hpp": "#include <vector>\n",
                "src/halo/internal.hpp": "\n",
                "src/runtime/d.cpp": '#include "internal.hpp"\n',
            }.items():
                (root / rel).parent.mkdir(parents=True, exist_ok=True)
                (root / rel).write_text(text)
            found = Layers(root, LAYERS).violations()
            self.assertEqual(len(found), 2, found)
            self.assertIn("include/haloex/plan/a.hpp (plan) includes haloex/halo/b.hpp (halo)", found)
            self.assertIn("src/runtime/d.cpp (runtime) includes internal.hpp (halo)", found)

    def test_an_unplaced_folder_fails(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = pathlib.Path(tmp)
            (root / "src/plan").mkdir(parents=True)
            (root / "src/plan/e.cpp").write_text('#include "haloex/newthing/f.hpp"\n')
            with self.assertRaises(LookupError):
                Layers(root, LAYERS).violations()


if __name__ == "__main__":
    sys.exit(unittest.main())
