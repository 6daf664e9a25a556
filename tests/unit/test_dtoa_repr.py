#!/usr/bin/python3
"""test_dtoa_repr - Python's repr judges the reals act_json_dump writes.

Run by ctest as: test_dtoa_repr.py NUMBERS_PRINT SOURCE_DIR. NUMBERS_PRINT
(tests/unit/numbers_print.c) prints every double of numbers_sample.h (edge
cases, every power of two, 100 000 random bit patterns) as its bits and
the text act_json_dump writes for it. Python's repr is David Gay's exact
shortest round-trip algorithm, and SEMANTICS 1 asks for the shortest form:
each text must read back as the same double, be exactly as long as repr,
and equal it (act_dtoa keeps repr's layout and, among the shortest
decimals, the nearest, as repr does). Also checks that
protocol/act_dtoa_tables.h is what protocol/act_dtoa_tables.py writes.
"""

import struct
import subprocess
import sys
import unittest

PRINTER = sys.argv[1] if len(sys.argv) > 1 else None
SOURCE = sys.argv[2] if len(sys.argv) > 2 else None


class ShortestReals(unittest.TestCase):
    def test_same_as_repr(self):
        out = subprocess.run([PRINTER], capture_output=True, check=True, text=True).stdout
        lines = out.splitlines()
        self.assertGreater(len(lines), 100000)
        longer = []
        different = []
        for line in lines:
            bits, text = line.split(" ")
            value = struct.unpack("<d", bytes.fromhex(bits)[::-1])[0]
            back = struct.unpack("<Q", struct.pack("<d", float(text)))[0]
            self.assertEqual(back, int(bits, 16), "%s does not read back as %s" % (text, bits))
            if len(text) != len(repr(value)):
                longer.append((bits, text, repr(value)))
            elif text != repr(value):
                different.append((bits, text, repr(value)))
        self.assertEqual(longer[:10], [], "%d texts differ in length from repr" % len(longer))
        self.assertEqual(different[:10], [], "%d texts differ from repr" % len(different))

    def test_tables_are_generated(self):
        generated = subprocess.run([sys.executable, SOURCE + "/protocol/act_dtoa_tables.py"],
                                   capture_output=True, check=True, text=True).stdout
        with open(SOURCE + "/protocol/act_dtoa_tables.h") as committed:
            self.assertEqual(committed.read(), generated)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1], verbosity=2)
