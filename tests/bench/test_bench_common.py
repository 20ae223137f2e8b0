"""bench/bench_common.py: the schema accessor (md_figures, check_record), the record header (machine, settings) and
the one launcher line (run by ctest: python3 -m unittest)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import bench_common as bc  # noqa: E402

SCHEMA2_RUN = {"program": "haloex-md", "schema_version": 2, "atoms": 22500, "ranks": 1, "us_per_step": 52.5,
               "ns_per_day": 3291.4, "us_per_step_steady": 41.0, "ns_per_day_steady": 4214.6, "search_step_ms": 0.61,
               "startup_seconds": 1.9}
SCHEMA1_RUN = {"program": "haloex-md", "atoms": 22500, "ranks": 1, "us_per_step": 41.0, "ns_per_day": 4214.6,
               "us_per_step_with_search": 126.4}


class MdFiguresTest(unittest.TestCase):
    def test_schema2_gives_end_to_end_first(self):
        f = bc.md_figures(SCHEMA2_RUN)
        self.assertEqual(f.schema, 2)
        self.assertTrue(f.end_to_end)
        self.assertEqual((f.us_per_step, f.us_per_step_steady, f.search_step_ms), (52.5, 41.0, 0.61))
        self.assertEqual(f.headline(), (52.5, 3291.4, bc.METRIC_ALL))

    def test_schema1_has_no_end_to_end_figure(self):
        f = bc.md_figures(SCHEMA1_RUN)
        self.assertEqual(f.schema, 1)
        self.assertIsNone(f.us_per_step)
        self.assertIsNone(f.ns_per_day)
        self.assertIsNone(f.search_step_ms)
        # us_per_step of schema 1 is the steady state; with_search (start-up folded in) is never taken for all steps.
        self.assertEqual(f.us_per_step_steady, 41.0)
        self.assertEqual(f.headline(), (41.0, 4214.6, bc.METRIC_STEADY_SCHEMA1))

    def test_explicit_schema1_same_as_missing(self):
        self.assertEqual(bc.md_figures(dict(SCHEMA1_RUN, schema_version=1)).us_per_step_steady, 41.0)

    def test_failed_runs_have_no_figures(self):
        self.assertIsNone(bc.md_figures({"error": "timeout", "command": "x"}))
        self.assertIsNone(bc.md_figures({"dry_run": True}))
        self.assertIsNone(bc.md_figures(None))

    def test_newer_schema_refused_with_message(self):
        with self.assertRaises(bc.SchemaError) as e:
            bc.md_figures(dict(SCHEMA2_RUN, schema_version=3), "run x")
        self.assertIn("schema_version 3", str(e.exception))
        self.assertIn("run x", str(e.exception))
        with self.assertRaises(bc.SchemaError):
            bc.md_figures(dict(SCHEMA2_RUN, schema_version="2"))
        with self.assertRaises(bc.SchemaError):
            bc.md_figures(dict(SCHEMA2_RUN, schema_version=0))

    def test_headline_metric_of_a_record(self):
        failed = {"error": "x"}
        figs, metric = bc.record_headline_metric([SCHEMA2_RUN, failed])
        self.assertEqual(metric, bc.METRIC_ALL)
        self.assertIsNone(figs[id(failed)])
        self.assertEqual(figs[id(SCHEMA2_RUN)].us_per_step, 52.5)
        _, metric = bc.record_headline_metric([SCHEMA2_RUN, SCHEMA1_RUN])
        self.assertEqual(metric, bc.METRIC_STEADY_SCHEMA1)


class AutomaticNstlistTest(unittest.TestCase):
    def test_a_set_nstlist_is_not_automatic(self):
        self.assertFalse(bc.automatic_nstlist({"settings": {"nstlist_reason": "set by --nstlist"}}))
        self.assertTrue(bc.automatic_nstlist({"settings": {"nstlist_reason": "nstlist 150 of 9 candidates"}}))
        self.assertFalse(bc.automatic_nstlist({"settings": {"nstlist_requested": 100,
                                                                  "nstlist_reason": "anything"}}))


class CheckRecordTest(unittest.TestCase):
    def test_versions(self):
        self.assertEqual(bc.check_record({"runs": []}), 1)
        self.assertEqual(bc.check_record({"schema_version": 2, "runs": [SCHEMA2_RUN, SCHEMA1_RUN]}), 2)

    def test_newer_record_or_run_refused(self):
        with self.assertRaises(bc.SchemaError):
            bc.check_record({"schema_version": bc.SCHEMA_VERSION + 1})
        with self.assertRaises(bc.SchemaError) as e:
            bc.check_record({"schema_version": 2, "runs": [dict(SCHEMA2_RUN, schema_version=9)]}, "f.json")
        self.assertIn("f.json, run 0", str(e.exception))

    def test_load_record_and_exit_message(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "r.json")
            with open(path, "w") as f:
                json.dump({"schema_version": 7}, f)
            with self.assertRaises(bc.SchemaError):
                bc.load_record(path)
            with self.assertRaises(SystemExit) as e:
                bc.exit_on_schema_error(lambda: bc.load_record(path))
            self.assertIn("newer than this reader", str(e.exception.code))


class HeaderTest(unittest.TestCase):
    def test_gpu_csv(self):
        gpus = bc.parse_gpu_csv("NVIDIA H200, 143771 MiB, 580.159.04\nNVIDIA H200, 143771 MiB, 580.159.04\n\n")
        self.assertEqual(len(gpus), 2)
        self.assertEqual(gpus[0], {"name": "NVIDIA H200", "memory": "143771 MiB", "driver": "580.159.04"})
        self.assertEqual(bc.parse_gpu_csv(""), [])

    def test_nccl_codes(self):
        self.assertEqual(bc.nccl_version_from_code(22803), "2.28.3")
        self.assertEqual(bc.nccl_version_from_code("21903"), "2.19.3")
        self.assertEqual(bc.nccl_version_from_code(2804), "2.8.4")

    def test_cuda_version(self):
        self.assertEqual(bc.cuda_version("Build cuda_13.0.r13.0/compiler.36424714_0"), "13.0")
        self.assertEqual(bc.cuda_version("Cuda compilation tools, release 12.8, V12.8.93"), "12.8")

    def test_library_versions_from_the_build(self):
        with tempfile.TemporaryDirectory() as tmp:
            inc, nv = os.path.join(tmp, "inc"), os.path.join(tmp, "nvshmem", "include")
            os.makedirs(inc)
            os.makedirs(os.path.join(nv, "non_abi"))
            with open(os.path.join(inc, "nccl.h"), "w") as f:
                f.write("#define NCCL_MAJOR 2\n#define NCCL_MINOR 27\n#define NCCL_PATCH 7\n")
            with open(os.path.join(nv, "non_abi", "nvshmem_version.h"), "w") as f:
                f.write("#define NVSHMEM_VENDOR_MAJOR_VERSION 3\n#define NVSHMEM_VENDOR_MINOR_VERSION 4\n"
                        "#define NVSHMEM_VENDOR_PATCH_VERSION 5\n")
            build = os.path.join(tmp, "build")
            os.makedirs(build)
            with open(os.path.join(build, "CMakeCache.txt"), "w") as f:
                f.write(f"NCCL_INCLUDE_DIR:PATH={inc}\nNVSHMEM_INCLUDE_DIR:PATH={nv}\n")
            v = bc.library_versions(build)
        self.assertEqual(v["nccl"]["version"], "2.27.7")
        self.assertEqual(v["nvshmem"]["version"], "3.4.5")
        self.assertIn("the build's", v["nccl"]["source"])

    def test_machine_block_has_every_field(self):
        m = bc.machine()
        for key in ("host", "gpu_model", "gpu_count", "gpu_memory", "driver", "gpus", "cuda", "nccl", "nvshmem", "mpi",
                    "cpus", "python"):
            self.assertIn(key, m)
        self.assertEqual(m["gpu_count"], len(m["gpus"]))

    def test_launcher_line(self):
        self.assertEqual(bc.launcher_prefix(4), ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
                                                 "-np", "4"])
        self.assertEqual(bc.launcher_prefix(1, single_process_without_mpirun=True), [])
        self.assertEqual(bc.launcher_prefix(1)[-2:], ["-np", "1"])
        self.assertEqual(bc.launcher_prefix(2, "srun", "--cpu-bind=none"), ["srun", "--cpu-bind=none", "-np", "2"])

    def test_binding(self):
        self.assertEqual(bc.binding_of(bc.launcher_prefix(2)), "--bind-to none")
        self.assertEqual(bc.binding_of(["mpirun", "--bind-to=core", "--map-by", "socket", "-np", "2"]),
                         "--bind-to core, --map-by socket")
        self.assertIn("default", bc.binding_of(["mpirun", "-np", "2"]))
        self.assertIn("no launcher", bc.binding_of([]))

    def test_launcher_environment_forces_multicast_off(self):
        old = os.environ.get("NCCL_NVLS_ENABLE")
        os.environ["NCCL_NVLS_ENABLE"] = "1"
        try:
            env = bc.launcher_environment()
        finally:
            if old is None:
                del os.environ["NCCL_NVLS_ENABLE"]
            else:
                os.environ["NCCL_NVLS_ENABLE"] = old
        self.assertEqual((env["NCCL_NVLS_ENABLE"], env["NVSHMEM_DISABLE_NVLS"]), ("0", "1"))

    def test_timing_environment_and_pdl(self):
        env = {"HALOEX_PDL": "0", "NCCL_PROTO": "LL", "CUDA_VISIBLE_DEVICES": "0,1", "HOME": "/root",
               "NCCL_API_TOKEN": "x", "OMPI_MCA_btl": "self,vader"}
        t = bc.timing_environment(env)
        self.assertEqual(set(t), {"HALOEX_PDL", "NCCL_PROTO", "CUDA_VISIBLE_DEVICES", "OMPI_MCA_btl"})
        self.assertTrue(bc.pdl_setting(env)["pdl"].startswith("off"))
        self.assertTrue(bc.pdl_setting({})["pdl"].startswith("on"))
        self.assertIsNone(bc.pdl_setting({})["HALOEX_PDL"])
        self.assertTrue(bc.pdl_setting({"HALOEX_PDL": "1"})["pdl"].startswith("on"))
        self.assertTrue(bc.pdl_setting({"HALOEX_PDL": "off"})["pdl"].startswith("refused"))

    def test_mps_from_the_control_pipe(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertIs(bc.mps_state({"CUDA_MPS_PIPE_DIRECTORY": tmp})["running"], False)
            open(os.path.join(tmp, "control"), "w").close()
            s = bc.mps_state({"CUDA_MPS_PIPE_DIRECTORY": tmp}, processes=["nvidia-cuda-mps-control"])
            self.assertIs(s["running"], True)
            self.assertEqual(s["control_pipe"], os.path.join(tmp, "control"))
            stale = bc.mps_state({"CUDA_MPS_PIPE_DIRECTORY": tmp}, processes=[])
            self.assertIsNone(stale["running"])
            self.assertIn("stale", stale["note"])
            self.assertIn("running", bc.mps_state({"CUDA_MPS_PIPE_DIRECTORY": tmp}))

    def test_a_process_name_past_the_comm_length_comes_from_its_command_line(self):
        # /proc/PID/comm holds 15 characters: the MPS daemon reads "nvidia-cuda-mps" there, so the records of
        # 2026-12-06 and before said "no MPS daemon visible" while it ran.
        with tempfile.TemporaryDirectory() as tmp:
            with open(os.path.join(tmp, "comm"), "w") as f:
                f.write("nvidia-cuda-mps\n")
            with open(os.path.join(tmp, "cmdline"), "wb") as f:
                f.write(b"/usr/bin/nvidia-cuda-mps-control\0-d\0")
            self.assertEqual(bc._process_name(tmp), "nvidia-cuda-mps-control")
            with open(os.path.join(tmp, "comm"), "w") as f:
                f.write("mpirun\n")
            self.assertEqual(bc._process_name(tmp), "mpirun")
            self.assertIsNone(bc._process_name(os.path.join(tmp, "absent")))

    def test_record_header(self):
        h = bc.record_header("test", {"suite": "dd"}, bc.launcher_prefix(2), "on")
        self.assertEqual(h["schema_version"], bc.SCHEMA_VERSION)
        self.assertIn("EVERY step", h["schema_note"])
        for key in ("tool", "date", "commit", "machine", "settings"):
            self.assertIn(key, h)
        s = h["settings"]
        self.assertEqual(s["suite"], "dd")
        self.assertEqual(s["cuda_graphs"], "on")
        self.assertIn("mpirun", s["launcher"])
        self.assertEqual(s["binding"], "--bind-to none")
        for key in ("HALOEX_PDL", "pdl", "mps", "environment"):
            self.assertIn(key, s)
        self.assertTrue(h["date"].endswith("Z"))

    def test_machine_summary_of_every_shape(self):
        self.assertEqual(bc.machine_summary({}), "machine not recorded")
        self.assertEqual(bc.machine_summary({"machine": "2 x NVIDIA H200 (NVLink)"}), "2 x NVIDIA H200 (NVLink)")
        self.assertIn("machine unknown", bc.machine_summary({"machine": {"unknown": "not recorded at the time"}}))
        old = {"machine": {"host": "vm", "gpus": ["NVIDIA H200, 143771 MiB, 580.159.04"] * 2,
                           "cuda": "Build cuda_13.0.r13.0/compiler.36424714_0"}}
        self.assertEqual(bc.machine_summary(old), "2 x NVIDIA H200, driver 580.159.04, CUDA 13.0, host vm")
        new = {"machine": {"host": "h", "gpu_model": "NVIDIA H200", "gpu_count": 4, "driver": "580", "nccl": "2.28.9"}}
        self.assertEqual(bc.machine_summary(new), "4 x NVIDIA H200, driver 580, NCCL 2.28.9, host h")
        derived = {"machine": {"gpu_model": "NVIDIA H200", "unknown": "host: not recorded at the time"}}
        self.assertIn("derived from the file", bc.machine_summary(derived))


class DependenciesTest(unittest.TestCase):
    def test_missing_matplotlib_names_the_projects_way(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "matplotlib"))
            with open(os.path.join(tmp, "matplotlib", "__init__.py"), "w") as f:
                f.write("raise ImportError('hidden by the test')\n")
            env = dict(os.environ, PYTHONPATH=tmp, HALOEX_NO_INSTALL="1")
            code = "import sys; sys.path.insert(0, %r); import bench_common; bench_common.pyplot()" % os.path.join(
                REPO, "bench")
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
        self.assertNotEqual(done.returncode, 0)
        self.assertIn("--target .deps/python -r bench/requirements.txt", done.stderr)
        self.assertNotIn("pip install matplotlib", done.stderr)

    def test_requirements_file_names_matplotlib(self):
        with open(bc.REQUIREMENTS) as f:
            lines = [x.strip() for x in f if x.strip() and not x.startswith("#")]
        self.assertTrue(any(x.startswith("matplotlib") for x in lines))
        self.assertIn("--target", bc.install_command())
        self.assertIn(bc.DEPS_PYTHON, bc.install_command())


if __name__ == "__main__":
    unittest.main()
