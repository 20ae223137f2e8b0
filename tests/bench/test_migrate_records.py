"""bench/migrate_records.py: old records get schema_version 1, a schema note and a truthful machine block, without a
byte of their measurements changing; idempotent; unknown kinds left alone (run by ctest: python3 -m unittest)."""
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import migrate_records as mr  # noqa: E402

MD_RUN = {"atoms": 45000, "backend": "GPU 0: NVIDIA H200", "program": "haloex-md", "ranks": 2,
          "ns_per_day": 2127.099682550369, "us_per_step": 81.23737755102042, "us_per_step_with_search": 538.8204233333331,
          "transport_notes": ["nccl: NCCL 22803, one ncclSend/ncclRecv group per pulse on the stream, no host syncs"],
          "energies": {"total": -634404.0926164238, "pressure": 1e-05}}


def quiet(fn, *args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = fn(*args)
    return rc, out.getvalue(), err.getvalue()


class KindTest(unittest.TestCase):
    def test_kinds(self):
        self.assertEqual(mr.kind({"benchmark": "haloex-md dd", "runs": []}), "md-suite")
        self.assertEqual(mr.kind(MD_RUN), "md-run")
        self.assertEqual(mr.kind({"tool": "bench/jacobi_bench.py"}), "jacobi")
        self.assertEqual(mr.kind({"tool": "haloex-commbench", "driver": {"tool": "bench/commbench.py"}}), "commbench")
        self.assertEqual(mr.kind({"driver": "bench/exchange_timing.py"}), "exchange-timing")
        self.assertIsNone(mr.kind({"tool": "gromacs"}))
        self.assertIsNone(mr.kind([1, 2]))


class DeriveMachineTest(unittest.TestCase):
    def test_backend_folder_and_nccl(self):
        m = mr.derive_machine(MD_RUN, "2xH200-adhoc/dd-45000-nccl-auto.json")
        self.assertEqual(m["gpu_model"], "NVIDIA H200")
        self.assertEqual(m["gpu_count"], 2)
        self.assertEqual(m["nccl"], "2.28.3")
        self.assertIn("backend", m["derived_from"]["gpu_model"])
        self.assertIn("2xH200-adhoc", m["derived_from"]["gpu_count"])
        self.assertIn("host", m["unknown"])
        self.assertNotIn("NCCL", m["unknown"])

    def test_shared_gpu_from_the_name(self):
        rec = {k: v for k, v in MD_RUN.items() if k != "transport_notes"}
        m = mr.derive_machine(rec, "shared-gpu/md-2ranks-1gpu-dd-ipc-2026-11-29.json")
        self.assertEqual((m["gpus_used"], m["shared_gpus"]), (1, True))
        self.assertNotIn("gpu_count", m)
        self.assertNotIn("nccl", m)

    def test_model_from_the_file_name_only(self):
        m = mr.derive_machine({"program": "haloex-md"}, "md-buffer-check-22500-NVIDIA-H200-2026-11-29.json")
        self.assertEqual(m["gpu_model"], "NVIDIA H200")
        self.assertIn("file name", m["derived_from"]["gpu_model"])

    def test_nothing_to_derive(self):
        self.assertEqual(mr.derive_machine({"program": "haloex-md"}, "x/run.json"),
                         {"unknown": "not recorded at the time"})


class MigrateTextTest(unittest.TestCase):
    def test_inserted_first_rest_byte_for_byte(self):
        text = json.dumps(MD_RUN, indent=2) + "\n"
        new, added = mr.migrate_text(text, "2xH200-adhoc/dd.json")
        self.assertEqual(added, ["schema_version", "schema_note", "machine"])
        self.assertTrue(new.startswith('{\n  "schema_version": 1,\n  "schema_note": '))
        # Removing the three inserted lines gives back the original file exactly.
        lines = new.split("\n")
        self.assertEqual("\n".join(lines[:1] + lines[4:]), text)
        rec = json.loads(new)
        self.assertIn("STEADY", rec["schema_note"])
        self.assertEqual(rec["us_per_step"], MD_RUN["us_per_step"])
        self.assertEqual(list(rec)[:3], ["schema_version", "schema_note", "machine"])

    def test_keeps_machine_and_indent_of_one(self):
        rec = {"benchmark": "haloex-md dd", "machine": {"host": "vm"}, "runs": [MD_RUN]}
        text = json.dumps(rec, indent=1)
        new, added = mr.migrate_text(text, "md-dd.json")
        self.assertEqual(added, ["schema_version", "schema_note"])
        self.assertTrue(new.startswith('{\n "schema_version": 1,\n'))
        self.assertEqual(json.loads(new)["machine"], {"host": "vm"})

    def test_compact_json(self):
        new, _ = mr.migrate_text(json.dumps({"driver": "bench/exchange_timing.py", "machine": "m", "results": []}),
                                 "x.json")
        self.assertEqual(json.loads(new)["schema_version"], 1)
        self.assertIn("no us_per_step", json.loads(new)["schema_note"])

    def test_idempotent_and_refuses_unknown(self):
        new, _ = mr.migrate_text(json.dumps(MD_RUN, indent=2), "a.json")
        again, added = mr.migrate_text(new, "a.json")
        self.assertEqual((again, added), (new, []))
        with self.assertRaises(ValueError):
            mr.migrate_text(json.dumps({"something": 1}), "b.json")

    def test_float_text_untouched(self):
        text = '{\n  "program": "haloex-md",\n  "us_per_step": 1.0000000000000002,\n  "x": 1e-05,\n  "y": 2.50\n}'
        new, _ = mr.migrate_text(text, "a.json")
        self.assertIn('"us_per_step": 1.0000000000000002,\n  "x": 1e-05,\n  "y": 2.50\n}', new)


class MainTest(unittest.TestCase):
    def test_folder_check_write_check(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "2xH200-adhoc"))
            with open(os.path.join(tmp, "2xH200-adhoc", "dd-45000.json"), "w") as f:
                json.dump(MD_RUN, f, indent=2)
            with open(os.path.join(tmp, "notes.txt"), "w") as f:
                f.write("not a record")
            rc, out, _ = quiet(mr.main, [tmp, "--check"])
            self.assertEqual(rc, 1)
            self.assertIn("would add schema_version, schema_note, machine", out)
            with open(os.path.join(tmp, "2xH200-adhoc", "dd-45000.json")) as f:
                self.assertNotIn("schema_version", f.read())
            rc, out, _ = quiet(mr.main, [tmp])
            self.assertEqual(rc, 0)
            with open(os.path.join(tmp, "2xH200-adhoc", "dd-45000.json")) as f:
                rec = json.load(f)
            self.assertEqual(rec["machine"]["gpu_count"], 2)
            rc, out, _ = quiet(mr.main, [tmp, "--check"])
            self.assertEqual(rc, 0, out)
            # An unknown kind is left alone and reported.
            with open(os.path.join(tmp, "other.json"), "w") as f:
                json.dump({"what": "else"}, f)
            rc, _, err = quiet(mr.main, [tmp])
            self.assertEqual(rc, 1)
            self.assertIn("left alone", err)
            with open(os.path.join(tmp, "other.json")) as f:
                self.assertEqual(json.load(f), {"what": "else"})

    def test_committed_records_are_migrated(self):
        """Every record under bench/results carries a schema_version (new ones from the drivers, old ones from this
        script); a copy is checked, so the test never writes to the checkout."""
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "results")
            shutil.copytree(os.path.join(REPO, "bench", "results"), copy)
            rc, out, err = quiet(mr.main, [copy, "--check"])
        self.assertEqual(rc, 0, out + err)


if __name__ == "__main__":
    unittest.main()
