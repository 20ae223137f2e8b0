"""bench/sass_loops.py: kernels and their loops from a cuobjdump -sass listing, and the refusals (run by ctest:
python3 -m unittest; no GPU and no cuobjdump needed -- a stand-in prints a listing)."""
import json
import os
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "bench"))
import sass_loops  # noqa: E402

LISTING = """
\tcode for sm_90
\t\tFunction : _ZN6haloex15nonbondedKernelILb0ELb1EEEvNS_6ParamsE
\t.headerflags\t@"EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                                     /* 0x00000a00ff017b82 */
        /*0010*/                   S2R R0, SR_TID.X ;                                         /* 0x0000000000007919 */
        /*0020*/                   LDS.128 R4, [R0] ;                                         /* 0x0000000000047984 */
        /*0030*/               @P0 FADD R4, R4, R5 ;                                          /* 0x0000000504040221 */
        /*0040*/                   ISETP.GE.AND P1, PT, R4, R6, PT ;                          /* 0x000000060400720c */
        /*0050*/              @!P1 BRA 0x20 ;                                                 /* 0xfffffffc00f09947 */
        /*0060*/                   ISETP.GE.AND P2, PT, R4, R7, PT ;                          /* 0x000000070400720c */
        /*0070*/              @!P2 BRA 0x10 ;                                                 /* 0xfffffff400e8a947 */
        /*0080*/                   BRA 0x90 ;                                                 /* 0x0000000000007947 */
        /*0090*/                   EXIT ;                                                     /* 0x000000000000794d */
\t\tFunction : _ZN6haloex12gatherKernelEPKf
        /*0000*/                   EXIT ;                                                     /* 0x000000000000794d */
"""


class Parse(unittest.TestCase):
    def test_kernels_and_loops(self):
        kernels = sass_loops.kernels_of(LISTING)
        self.assertEqual(len(kernels), 2)
        name = "_ZN6haloex15nonbondedKernelILb0ELb1EEEvNS_6ParamsE"
        self.assertEqual(len(kernels[name]), 10)
        loops = sass_loops.loops_of(kernels[name])
        # The inner loop 0x20..0x50 (4 instructions, the predicated FADD counted), the outer 0x10..0x70; the
        # forward branch at 0x80 is no loop.
        self.assertEqual([(loop["begin"], loop["end"], loop["instructions"]) for loop in loops],
                         [("0x20", "0x50", 4), ("0x10", "0x70", 7)])
        self.assertEqual(sass_loops.short_name(name, "nonbondedKernel"), "nonbondedKernelILb0ELb1E")

    def test_record_from_a_stand_in_cuobjdump(self):
        with tempfile.TemporaryDirectory() as tmp:
            listing = os.path.join(tmp, "listing.txt")
            with open(listing, "w") as f:
                f.write(LISTING)
            tool = os.path.join(tmp, "cuobjdump")
            with open(tool, "w") as f:
                f.write(f'#!/bin/sh\n[ "$1" = -sass ] || exit 3\ncat {listing}\n')
            os.chmod(tool, 0o755)
            obj = os.path.join(tmp, "a.o")
            open(obj, "w").close()
            out = os.path.join(tmp, "rec.json")
            self.assertEqual(sass_loops.main([obj, "--cuobjdump", tool, "--json", out]), 0)
            with open(out) as f:
                rec = json.load(f)
            self.assertEqual(rec["tool"], "bench/sass_loops.py")
            kernel = rec["objects"][obj]["nonbondedKernelILb0ELb1E"]
            self.assertEqual(kernel["loops"][0]["instructions"], 4)
            with self.assertRaises(SystemExit):  # no kernel of that name
                sass_loops.main([obj, "--cuobjdump", tool, "--kernel", "pairSearch"])
            with self.assertRaises(SystemExit):  # no such object
                sass_loops.main([os.path.join(tmp, "missing.o"), "--cuobjdump", tool])


if __name__ == "__main__":
    unittest.main()
