"""bench/exchange_timing.py turns haloex-halo-stress TIMING lines into records
(run by ctest: python3 -m unittest)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import exchange_timing  # noqa: E402

GRAPH = ("TIMING (graph): nvshmem (path direct) 22500 atoms on 2 ranks, grid 2x1x1, 1 pulse(s), up to 3649 halo "
         "atoms (43788 bytes of coordinates) per rank, 1950 exchanges: forward 10.56 us (p10 9.82, p90 10.91), "
         "reverse 11.33 us (p10 10.46, p90 11.62); slowest rank")
SKIPPED = "TIMING (graph): skipped, ipc cannot be captured in a CUDA graph"


class ParseTest(unittest.TestCase):
    def test_fields_of_a_timing_line(self):
        rows = exchange_timing.parse("noise\n" + GRAPH + "\n" + SKIPPED + "\n")
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual((r["timing"], r["transport"], r["path"]), ("graph", "nvshmem", "direct"))
        self.assertEqual((r["atoms"], r["ranks"], r["pulses"], r["halo_atoms_per_rank"]), (22500, 2, 1, 3649))
        self.assertEqual(r["coordinate_bytes_per_rank"], 43788)
        self.assertEqual(r["forward_us"], {"median": 10.56, "p10": 9.82, "p90": 10.91})
        self.assertEqual(r["reverse_us"]["median"], 11.33)

    def test_launch_fused_unless_named(self):
        self.assertEqual(exchange_timing.parse(GRAPH)[0]["launch"], "fused")
        line = GRAPH.replace("(path direct)", "(path direct, launch per-pulse)")
        r = exchange_timing.parse(line)[0]
        self.assertEqual((r["path"], r["launch"]), ("direct", "per-pulse"))
        self.assertEqual(r["forward_us"]["median"], 10.56)

    def test_label_with_comma_and_spaces(self):
        line = GRAPH.replace("TIMING (graph)", "TIMING (graph, empty kernel instead of each exchange)")
        self.assertEqual(exchange_timing.parse(line)[0]["timing"], "graph, empty kernel instead of each exchange")

    def test_record_and_refusal_without_timings(self):
        with tempfile.TemporaryDirectory() as tmp:
            good, bad = os.path.join(tmp, "good.log"), os.path.join(tmp, "bad.log")
            with open(good, "w") as f:
                f.write(GRAPH + "\n")
            with open(bad, "w") as f:
                f.write("FAILED: something\n")
            out = os.path.join(tmp, "out.json")
            script = os.path.join(REPO, "bench", "exchange_timing.py")
            common = ["--commit", "abc", "--machine", "test", "--out", out]
            done = subprocess.run([sys.executable, script, good, bad] + common, capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            self.assertIn("bad.log: no TIMING line", done.stderr)
            with open(out) as f:
                record = json.load(f)
            self.assertEqual(record["commit"], "abc")
            self.assertEqual(len(record["results"]), 1)
            refused = subprocess.run([sys.executable, script, bad] + common, capture_output=True, text=True)
            self.assertNotEqual(refused.returncode, 0)

    def test_record_header_and_table(self):
        with tempfile.TemporaryDirectory() as tmp:
            log, out = os.path.join(tmp, "t.log"), os.path.join(tmp, "out.json")
            with open(log, "w") as f:
                f.write(GRAPH + "\n")
            script = os.path.join(REPO, "bench", "exchange_timing.py")
            done = subprocess.run([sys.executable, script, log, "--machine", "2 x H200", "--launcher",
                                   "mpirun --bind-to none -np 2", "--out", out], capture_output=True, text=True)
            self.assertEqual(done.returncode, 0, done.stderr)
            with open(out) as f:
                record = json.load(f)
            self.assertEqual(record["schema_version"], 2)
            self.assertEqual(record["driver"], "bench/exchange_timing.py")
            self.assertEqual(record["machine"]["description"], "2 x H200")
            for key in ("host", "gpu_model", "driver", "cuda", "nccl", "nvshmem", "mpi"):
                self.assertIn(key, record["machine"])
            self.assertEqual(record["settings"]["binding"], "--bind-to none")
            self.assertNotEqual(record["commit"], "")
            table = exchange_timing.table(record)
            self.assertIn("| nvshmem/direct | 22500 | 2 | 3649 | graph | 10.56 (9.82-10.91) | 11.33 (10.46-11.62) |",
                          table)
            record["schema_version"] = 3
            with open(out, "w") as f:
                json.dump(record, f)
            shown = subprocess.run([sys.executable, script, "--show", out], capture_output=True, text=True)
            self.assertNotEqual(shown.returncode, 0)
            self.assertIn("newer than this reader", shown.stderr)

    def test_schema1_record_reads(self):
        path = os.path.join(REPO, "bench", "results", "exchange-timing-2xH200-2026-11-29.json")
        with open(path) as f:
            record = json.load(f)
        self.assertIn("(schema 1)", exchange_timing.table(record, path))


if __name__ == "__main__":
    unittest.main()
